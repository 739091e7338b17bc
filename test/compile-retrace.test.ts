// compile(fn) when the state a step reads changes while its signature is still being traced (a
// new optimizer, a frozen parameter): the signature traces again and replays, every call bit for
// bit as in eager mode, while a fn that keeps tensors alive on every call still falls back. Also
// the errors a replay throws: a disposed argument named by its place, and nn.Embedding's own
// range check rather than the gather it runs.
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

const { nn, optim, compile, tidy, crossEntropy, noGrad } = A;

beforeAll(async () => {
  await A.init();
});

let warn: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
});
beforeEach(() => warn.mockClear());

const bytes = (t: Tensor): Uint8Array => new Uint8Array(t.toArray().buffer);

type Kind = 'sgd' | 'adam';

/** A Linear 5→3 model with a replaceable optimizer and its training step. */
function setup(kind: Kind) {
  const model = new nn.Sequential(new nn.Linear(5, 6, { seed: 1 }), new nn.Tanh(), new nn.Linear(6, 3, { seed: 2 }));
  const make = () =>
    kind === 'sgd' ? new optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 }) : new optim.Adam(model.parameters(), { lr: 0.01 });
  const s = { model, opt: make() };
  const step = (x: Tensor, y: Int32Array) => {
    const loss = crossEntropy(model.forward(x), y);
    loss.backward();
    s.opt.step();
    s.opt.zeroGrad();
    return loss;
  };
  const renew = () => {
    s.opt.dispose();
    s.opt = make();
  };
  const dispose = () => (s.opt.dispose(), model.dispose());
  return { s, step, renew, dispose };
}

interface Row {
  name: string;
  /** What happens before call i (both copies): a new optimizer, or a freeze/unfreeze of the first layer. */
  events: Record<number, 'renew' | 'freeze' | 'unfreeze'>;
  calls: number;
  stats: { eager: number; traced: number };
}

// call 0 eager, 1 and 2 traced, replays from 3; each row says what its changes cost.
const rows: Row[] = [
  // 5: noticed, eager; 6: the new optimizer's first step is traced (state made: trace again); 7, 8 traced.
  { name: 'a new optimizer on two calls in a row', events: { 5: 'renew', 6: 'renew' }, calls: 30, stats: { eager: 2, traced: 5 } },
  // 6 and 7 each make new state, the state 6 made is freed by 7's renewal; 8, 9 traced.
  { name: 'on three calls in a row', events: { 5: 'renew', 6: 'renew', 7: 'renew' }, calls: 30, stats: { eager: 2, traced: 6 } },
  // 1 traced; 2: the first trace read the old optimizer's state (dropped), this one makes new state; 3, 4 traced.
  { name: 'between the two traces', events: { 2: 'renew' }, calls: 20, stats: { eager: 1, traced: 4 } },
  // 1 traced; 2: frozen, the first trace is dropped; 3 traced; 4: unfrozen, noticed, eager; 5: a
  // new optimizer makes its state in a trace; 6, 7 traced.
  {
    name: 'a freeze between the traces, then a new optimizer',
    events: { 2: 'freeze', 4: 'unfreeze', 5: 'renew' },
    calls: 20,
    stats: { eager: 2, traced: 6 },
  },
];

describe('compile: state that changes while a signature is traced', () => {
  for (const kind of ['sgd', 'adam'] as const) {
    for (const row of rows) {
      it(`${kind}: ${row.name} — traces again and replays, bit for bit`, () => {
        const e = setup(kind),
          c = setup(kind);
        const f = compile(c.step);
        for (let i = 0; i < row.calls; i++) {
          for (const s of [e, c]) {
            const ev = row.events[i];
            if (ev === 'renew') s.renew();
            else if (ev !== undefined) for (const p of s.s.model.parameters().slice(0, 2)) p.requiresGrad = ev === 'unfreeze';
          }
          const x = A.randn([4, 5], { seed: 100 + i }),
            y = Int32Array.from([i % 3, 1, 2, 0]);
          const le = tidy(() => e.step(x, y)),
            lc = f(x, y);
          expect(bytes(lc)).toEqual(bytes(le));
          le.dispose(), lc.dispose(), x.dispose();
        }
        const pe = e.s.model.parameters();
        c.s.model.parameters().forEach((p, i) => expect(bytes(p)).toEqual(bytes(pe[i])));
        if (kind === 'adam')
          pe.forEach((p, i) =>
            expect((c.s.opt as A.optim.Adam).stepCount(c.s.model.parameters()[i])).toBe((e.s.opt as A.optim.Adam).stepCount(p)),
          );
        const { eager, traced } = row.stats;
        expect(f.stats).toMatchObject({ eager, traced, replayed: row.calls - eager - traced, fallback: null });
        expect(warn).not.toHaveBeenCalled();
        e.dispose(), c.dispose();
      });
    }
  }
});

describe('compile: a fn that leaves tensors alive still runs eagerly', () => {
  it('keeping a tensor on every call: falls back on the second trace, with the reason', () => {
    const kept: Tensor[] = [],
      keptE: Tensor[] = [];
    const fn = (store: Tensor[]) => (x: Tensor) => {
      const y = A.mul(x, 2);
      store.push(A.keep(A.exp(x)));
      return y;
    };
    const f = compile(fn(kept)),
      g = fn(keptE);
    const x = A.randn([3], { seed: 9 });
    for (let i = 0; i < 6; i++) expect(bytes(f(x))).toEqual(bytes(tidy(() => g(x))));
    kept.forEach((t, i) => expect(bytes(t)).toEqual(bytes(keptE[i])));
    expect(kept).toHaveLength(6);
    expect(f.stats).toMatchObject({ eager: 4, traced: 2, replayed: 0, fallback: expect.stringMatching(/^fn leaves 1 tensor\(s\) alive/) });
    expect(warn).toHaveBeenCalledTimes(1);
    for (const t of [...kept, ...keptE, x]) t.dispose();
  });

  it('keeping a tensor the caller frees after every call: traces again three times in a row at most', () => {
    let kept: Tensor | null = null;
    const f = compile((x: Tensor) => {
      kept = A.keep(A.exp(x));
      return A.mul(x, 2);
    });
    const x = A.randn([3], { seed: 9 });
    for (let i = 0; i < 8; i++) {
      const y = f(x);
      expect(Array.from(y.toArray())).toEqual(Array.from(x.toArray(), (v) => Math.fround(v * 2)));
      y.dispose();
      (kept as Tensor | null)?.dispose();
    }
    expect(f.stats).toMatchObject({ eager: 4, traced: 4, replayed: 0, fallback: expect.stringMatching(/leaves 1 tensor\(s\) alive/) });
    x.dispose();
  });
});

describe('compile: errors thrown by a replay', () => {
  it('names a disposed argument by its place among the arguments', () => {
    const f = compile((a: Tensor, b: { w: Tensor }) => A.mul(a, b.w));
    const a = A.randn([3], { seed: 4 }),
      w = A.randn([3], { seed: 5 });
    for (let i = 0; i < 4; i++) f(a, { w }).dispose();
    expect(f.stats.replayed).toBe(1);
    const d = A.randn([3], { seed: 6 });
    d.dispose();
    expect(() => f(d, { w })).toThrow(A.DisposedError);
    expect(() => f(d, { w })).toThrow(`compile: argument 0 (tensor #${d.id}, shape [3]) was disposed and cannot be used`);
    expect(() => f(a, { w: d })).toThrow(`compile: argument 1.w (tensor #${d.id}, shape [3]) was disposed and cannot be used`);
    expect(() => tidy(() => A.mul(d, w))).toThrow(`mul: tensor #${d.id} (shape [3]) was disposed and cannot be used`);
    expect(f.stats.replayed).toBe(1); // the failed calls ran nothing
    const r = f(a, { w });
    expect(bytes(r)).toEqual(bytes(tidy(() => A.mul(a, w))));
    r.dispose(), a.dispose(), w.dispose();
  });

  it("nn.Embedding's index checks give eager mode's messages (arrays and int32 tensors)", () => {
    const emb = new nn.Embedding(10, 4, { seed: 3 });
    const f = compile((ids: Int32Array | number[]) => noGrad(() => emb.forward(ids)));
    const g = compile((ids: Tensor) => noGrad(() => emb.forward(ids)));
    const ids = A.tensor(Int32Array.from([1, 2]), { dtype: 'int32' });
    for (let i = 0; i < 4; i++) f(Int32Array.from([1, 2])).dispose(), f([3, 4]).dispose(), g(ids).dispose();
    expect([f.stats.replayed, g.stats.replayed]).toEqual([2, 1]);
    const runs = () => [f, g].map(({ stats: { eager, traced, fallback } }) => ({ eager, traced, fallback }));
    const before = runs();
    const eagerError = (v: Int32Array | number[]) => {
      try {
        noGrad(() => emb.forward(v));
      } catch (err) {
        return err as Error;
      }
      throw new Error('eager mode did not throw');
    };
    const cases: [() => unknown, Int32Array | number[], string][] = [
      [() => f(Int32Array.from([10, 1])), Int32Array.from([10, 1]), 'Embedding: index 10 at position 0 is out of range [0, 10)'],
      [() => f([2, -1]), [2, -1], 'Embedding: index -1 at position 1 is out of range [0, 10)'],
      [() => f([1.5, 2]), [1.5, 2], 'Embedding: index 1.5 (a number) at position 0 is not an integer'],
    ];
    const bad = A.tensor(Int32Array.from([0, 12]), { dtype: 'int32' });
    for (const [call, v, msg] of cases) {
      const want = eagerError(v);
      expect(want.message).toContain(msg);
      expect(call).toThrow(want.constructor as new () => Error);
      expect(call).toThrow(want.message);
    }
    expect(() => g(bad)).toThrow(eagerError(Int32Array.from([0, 12])).message);
    expect(runs()).toEqual(before); // the errors came from replays, and nothing fell back
    const r = f(Int32Array.from([9, 0]));
    expect(bytes(r)).toEqual(bytes(noGrad(() => emb.forward(Int32Array.from([9, 0])))));
    r.dispose(), ids.dispose(), bad.dispose(), emb.dispose();
  });
});

describe('compile: schedules that live only a few calls', () => {
  it('gradients accumulated over calls and zeroed every fourth: eager after a few schedules, same results', () => {
    const run = (compiled: boolean) => {
      const lin = new A.nn.Linear(3, 2, { seed: 1 });
      const opt = new A.optim.SGD(lin.parameters(), { lr: 0.1 });
      const fn = (x: Tensor) => {
        const l = A.sum(A.square(lin.forward(x)));
        l.backward();
        return l;
      };
      const step = compiled ? A.compile(fn) : (x: Tensor) => A.tidy(() => fn(x));
      for (let i = 0; i < 40; i++) {
        step(A.randn([4, 3], { seed: i })).dispose();
        if (i % 4 === 3) {
          opt.step();
          opt.zeroGrad();
        }
      }
      return { w: Array.from(lin.weight.toArray()), stats: compiled ? (step as ReturnType<typeof A.compile>).stats : null };
    };
    const eager = run(false),
      comp = run(true);
    expect(comp.w).toEqual(eager.w);
    expect(comp.stats!.fallback).toMatch(/replaced every few calls/);
    expect(comp.stats!.traced).toBeLessThan(12);
  });
});
