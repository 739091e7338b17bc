// compile() with int32 tensor arguments: indices (gather, nn.Embedding) and labels
// (crossEntropy) given as int32 tensors replay, with the values of each call's tensors (read
// again and range-checked before any kernel), bit for bit as eager mode; clipGradNorm inside a
// compiled step keeps its norm in wasm memory; a GPT training step on lmBatches' int32 tensors
// replays and matches eager steps byte for byte.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

const { nn, optim, compile, tidy, crossEntropy, gather, tensor, data } = A;

beforeAll(async () => {
  await A.init();
});

let warn: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
});
afterEach(() => warn.mockClear());

const bytes = (t: Tensor): Uint8Array => new Uint8Array(t.toArray().buffer.slice(0));
const ints = (v: number[], shape: number[]): Tensor => tensor(Int32Array.from(v), { dtype: 'int32', shape });

describe('int32 tensor arguments under compile()', () => {
  it('gather and crossEntropy replay with each call’s indices and labels, equal to eager', () => {
    const w = A.randn([7, 5], { seed: 3 });
    const fn = (ix: Tensor, labels: Tensor) => crossEntropy(gather(w, ix), labels, { reduction: 'none' });
    const f = compile(fn);
    for (let call = 0; call < 6; call++) {
      // New values every call: a schedule that kept the traced ones as constants would differ.
      const ix = ints([(call * 3) % 7, (call + 4) % 7, 6 - (call % 7), call % 7], [4]);
      const labels = ints([call % 5, (call + 2) % 5, 4, (call * 2) % 5], [4]);
      const got = f(ix, labels);
      const want = tidy(() => fn(ix, labels));
      expect(bytes(got)).toEqual(bytes(want));
      for (const t of [got, want, ix, labels]) t.dispose();
    }
    expect(f.stats).toMatchObject({ eager: 1, traced: 2, replayed: 3, fallback: null });
    w.dispose();
  });

  it('nn.Embedding on an int32 tensor [B, T] replays, forward and gradient', () => {
    const emb = new nn.Embedding(9, 4, { seed: 2 });
    const f = compile((ids: Tensor) => {
      const y = emb.forward(ids);
      A.sum(A.mul(y, y)).backward();
      const g = A.mul(emb.weight.grad!, 1);
      emb.weight.grad!.dispose();
      emb.weight.grad = null;
      return [y, g];
    });
    const eager = (ids: Tensor): Uint8Array[] =>
      tidy(() => {
        const y = emb.forward(ids);
        A.sum(A.mul(y, y)).backward();
        const out = [bytes(y), bytes(emb.weight.grad!)];
        emb.weight.grad!.dispose();
        emb.weight.grad = null;
        return out;
      });
    for (let call = 0; call < 5; call++) {
      const ids = ints([call % 9, 8, (call * 5) % 9, 1, call % 9, 3], [2, 3]);
      const [y, g] = f(ids);
      expect(y.shape).toEqual([2, 3, 4]);
      expect([bytes(y), bytes(g)]).toEqual(eager(ids));
      for (const t of [y, g, ids]) t.dispose();
    }
    expect(f.stats).toMatchObject({ replayed: 2, fallback: null });
    emb.dispose();
  });

  it('an out-of-range index in a replayed call throws before any kernel runs', () => {
    const w = A.randn([4, 3], { seed: 1 });
    const f = compile((ix: Tensor) => gather(w, ix));
    for (let i = 0; i < 4; i++) tidy(() => f(ints([0, 3, i % 4], [3])));
    expect(f.stats.replayed).toBe(1);
    const bad = ints([0, 4, 1], [3]);
    expect(() => f(bad)).toThrow(A.ShapeError);
    expect(() => f(bad)).toThrow(/index 4 at position 1 is out of range \[0, 4\)/);
    bad.dispose();
    w.dispose();
  });

  it('an int32 argument whose values steer JS falls back to eager, with the reason', () => {
    const w = A.randn([4, 3], { seed: 1 });
    const f = compile((ix: Tensor) => (ix.toArray()[0] > 1 ? A.mul(w, 2) : A.mul(w, 3)));
    const out: number[] = [];
    for (let i = 0; i < 5; i++) out.push(tidy(() => f(ints([i % 4], [1])).toArray()[0]));
    const w0 = w.toArray()[0];
    expect(out).toEqual([0, 1, 2, 3, 0].map((v) => (v > 1 ? Math.fround(w0 * 2) : Math.fround(w0 * 3))));
    expect(f.stats.fallback).toMatch(/reads the values of an int32 tensor argument into JS/);
    w.dispose();
  });
});

describe('clipGradNorm inside a compiled step', () => {
  it('clips exactly as eager mode, with the norm kept in memory (returns NaN while traced)', () => {
    const make = () => new nn.Linear(6, 3, { seed: 4 });
    const [a, b] = [make(), make()];
    const x = A.randn([5, 6], { seed: 9 });
    const norms: number[] = [];
    const step = (m: A.nn.Linear, scale: number) => {
      A.mul(A.sum(A.mul(m.forward(x), m.forward(x))), scale).backward();
      norms.push(A.clipGradNorm(m.parameters(), 0.5));
      const g = A.mul(m.weight.grad!, 1);
      for (const p of m.parameters()) {
        p.grad?.dispose();
        p.grad = null;
      }
      return g;
    };
    const f = compile((scale: number) => step(b, scale));
    for (let i = 0; i < 5; i++) {
      const s = i === 4 ? 1e-6 : 10; // the last call's gradients are below maxNorm: no scaling
      const want = tidy(() => step(a, s));
      const got = f(s);
      expect(bytes(got)).toEqual(bytes(want));
      want.dispose();
      got.dispose();
    }
    // Calls 1 and 2 of each signature are traced (NaN); eager calls return the norm.
    expect(norms.filter((n) => Number.isNaN(n)).length).toBe(2);
    expect(f.stats.fallback).toBeNull();
    x.dispose();
  });
});

describe('a GPT training step on lmBatches’ int32 tensors', () => {
  it('compiles and replays, byte for byte as the eager step (losses and weights)', () => {
    const text = 'to be, or not to be, that is the question: whether tis nobler in the mind to suffer '.repeat(4);
    const tok = data.CharTokenizer.fromText(text);
    const ids = tok.encode(text);
    const build = () => {
      const model = new nn.GPT({ vocabSize: tok.vocabSize, layers: 1, heads: 2, width: 16, context: 16, seed: 1 });
      const opt = new optim.AdamW(model.parameters(), { lr: 3e-3, betas: [0.9, 0.99], weightDecay: 0.1 });
      const step = (x: Tensor, y: Tensor) => {
        const l = crossEntropy(A.reshape(model.forward(x), [-1, tok.vocabSize]), A.reshape(y, [-1]));
        l.backward();
        A.clipGradNorm(model.parameters(), 1);
        opt.step();
        opt.zeroGrad();
        return l;
      };
      return { model, opt, step, batches: data.lmBatches(ids, { batchSize: 4, blockSize: 16, seed: 3 }) };
    };
    const e = build(),
      c = build();
    const compiled = compile(c.step);
    for (let i = 0; i < 6; i++) {
      c.opt.lr = e.opt.lr = 3e-3 * (1 - i / 10); // a schedule: read afresh on every replay
      const le = tidy(() => {
        const b = e.batches.next().value;
        return e.step(b.x, b.y).item();
      });
      const lc = tidy(() => {
        const b = c.batches.next().value;
        return compiled(b.x, b.y).item();
      });
      expect(Object.is(lc, le)).toBe(true);
    }
    expect(compiled.stats).toMatchObject({ eager: 1, traced: 2, replayed: 3, fallback: null });
    const we = e.model.stateDict(),
      wc = c.model.stateDict();
    for (const k of Object.keys(we)) expect(bytes(wc[k])).toEqual(bytes(we[k]));
    compiled.reset();
    for (const s of [e, c]) s.opt.dispose(), s.model.dispose();
  });
});
