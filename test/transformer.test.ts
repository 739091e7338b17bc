// nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.ModuleList and weight tying: PyTorch
// parity (fixtures in test/fixtures/torch, f64 to 1e-10, f32 to 1e-5), a composed float64
// reference for MHA, PyTorch's names and init, dropout modes, gradients, and bad input.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { hasFixture, checkFixture, relErr } from './torch-fixtures.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' as const };
const rn = (shape: number[], seed: number) => A.randn(shape, { seed, ...f64 });

/** Whether int32 tensors exist (0/1 mask fixtures). */
const int32 = (): boolean => {
  try {
    A.tidy(() => A.zeros([1], { dtype: 'int32' as never }));
    return true;
  } catch {
    return false;
  }
};

describe('PyTorch parity (test/fixtures/torch)', () => {
  const cases = [
    'sdpa_plain',
    'sdpa_causal',
    'sdpa_causal_rect',
    'sdpa_addmask',
    'sdpa_boolmask',
    'mha_bf',
    'mha_seqfirst',
    'mha_causal',
    'mha_mask_seqfirst',
    'mha_cross',
    'tel_post_relu',
    'tel_pre_relu',
    'tel_post_gelu',
    'tel_pre_gelu',
    'tel_pre_gelu_causal',
  ];
  for (const name of cases) {
    it(name, (ctx) => {
      if (!hasFixture(name)) return ctx.skip(); // fixtures not generated in this checkout
      if (name.includes('boolmask') && !int32()) return ctx.skip(); // needs int32 tensors
      for (const [dtype, tol] of [
        ['float64', 1e-10],
        ['float32', 1e-5],
      ] as const) {
        for (const [k, e] of Object.entries(checkFixture(name, dtype))) expect(e, `${dtype} ${k}`).toBeLessThan(tol);
      }
    });
  }
});

/** MHA written out with matmul and softmax: x [B, T, E] layouts, weights as PyTorch's. */
function mhaReference(m: A.nn.MultiheadAttention, q: Tensor, k: Tensor, v: Tensor, causal: boolean): Tensor {
  const E = m.embedDim,
    H = m.numHeads,
    d = E / H,
    W = m.in_proj_weight,
    b = m.in_proj_bias!;
  const proj = (x: Tensor, i: number) => A.add(A.matmul(x, A.transpose(A.slice(W, [i * E, 0], [E, E]))), A.slice(b, [i * E], [E]));
  const heads = (x: Tensor) => A.transpose(A.reshape(x, [x.shape[0], x.shape[1], H, d]), [0, 2, 1, 3]);
  const [Q, K, V] = [proj(q, 0), proj(k, 1), proj(v, 2)].map(heads);
  let s = A.mul(A.matmul(Q, A.transpose(K, [0, 1, 3, 2])), 1 / Math.sqrt(d));
  if (causal) {
    const [Tq, Tk] = [q.shape[1], k.shape[1]],
      a = new Float64Array(Tq * Tk);
    for (let i = 0; i < Tq; i++) for (let j = i + 1; j < Tk; j++) a[i * Tk + j] = -Infinity;
    s = A.add(s, A.tensor(a, { shape: [Tq, Tk], ...f64 }));
  }
  const o = A.reshape(A.transpose(A.matmul(A.softmax(s, -1), V), [0, 2, 1, 3]), [q.shape[0], q.shape[1], E]);
  return A.add(A.matmul(o, A.transpose(m.out_proj.weight)), m.out_proj.bias!);
}

describe('nn.MultiheadAttention', () => {
  it('matches attention composed of matmul and softmax (self, causal, cross; both layouts), with gradients', () => {
    A.tidy(() => {
      const m = new A.nn.MultiheadAttention(12, 3, { seed: 1, ...f64 });
      const sf = new A.nn.MultiheadAttention(12, 3, { seed: 1, batchFirst: false, ...f64 });
      const x = rn([2, 5, 12], 2),
        kv = rn([2, 7, 12], 3);
      for (const [q, k, causal] of [
        [x, x, false],
        [x, x, true],
        [x, kv, false],
      ] as const) {
        const y = m.forward(q, k, k, { isCausal: causal }),
          want = mhaReference(m, q, k, k, causal);
        expect(relErr(y.toArray(), want.toArray())).toBeLessThan(1e-12);
        const ys = sf.forward(A.transpose(q, [1, 0, 2]), A.transpose(k, [1, 0, 2]), undefined, { isCausal: causal });
        expect(relErr(A.transpose(ys, [1, 0, 2]).toArray(), want.toArray())).toBeLessThan(1e-12);
      }
      const g = (f: (x: Tensor) => Tensor) => A.grad((x: Tensor) => A.sum(A.square(f(x))))(x) as Tensor;
      expect(relErr(g((x) => m.forward(x)).toArray(), g((x) => mhaReference(m, x, x, x, false)).toArray())).toBeLessThan(1e-10);
      m.zeroGrad();
      A.sum(A.square(m.forward(x, { isCausal: true }))).backward();
      const mine = m.parameters().map((p) => p.grad!.toArray());
      m.zeroGrad();
      A.sum(A.square(mhaReference(m, x, x, x, true))).backward();
      m.parameters().forEach((p, i) => expect(relErr(mine[i], p.grad!.toArray())).toBeLessThan(1e-10));
    });
  });

  it("has PyTorch's names and init: xavier_uniform in_proj_weight, zero biases; seeded", () => {
    A.tidy(() => {
      const m = new A.nn.MultiheadAttention(16, 4, { seed: 3 });
      expect(m.namedParameters().map(([n, t]) => `${n}:${t.shape}`)).toEqual([
        'in_proj_weight:48,16',
        'in_proj_bias:48',
        'out_proj.weight:16,16',
        'out_proj.bias:16',
      ]);
      const w = Array.from(m.in_proj_weight.toArray()),
        bound = Math.sqrt(6 / 64);
      expect(Math.max(...w.map(Math.abs))).toBeLessThanOrEqual(bound);
      expect(Math.max(...w.map(Math.abs))).toBeGreaterThan(0.9 * bound);
      expect(Array.from(m.in_proj_bias!.toArray()).every((v) => v === 0)).toBe(true);
      expect(Array.from(m.out_proj.bias!.toArray()).every((v) => v === 0)).toBe(true);
      expect(Array.from(new A.nn.MultiheadAttention(16, 4, { seed: 3 }).in_proj_weight.toArray())).toEqual(w.map(Math.fround));
      expect(new A.nn.MultiheadAttention(16, 4, { bias: false }).namedParameters().map(([n]) => n)).toEqual([
        'in_proj_weight',
        'out_proj.weight',
      ]);
    });
  });

  it('an attnMask [B·H, Tq, Tk] applies per head; dropout only in training mode, seeded', () => {
    A.tidy(() => {
      const m = new A.nn.MultiheadAttention(8, 2, { seed: 1, dropout: 0.5, ...f64 });
      const x = rn([2, 4, 8], 2),
        mask = A.mul(rn([4, 4, 4], 3), 2);
      m.eval();
      const y = m.forward(x, { attnMask: mask });
      const heads = A.reshape(mask, [2, 2, 4, 4]);
      const one = (b: number) =>
        m.forward(A.slice(x, [b, 0, 0], [1, 4, 8]), { attnMask: A.reshape(A.slice(heads, [b, 0, 0, 0], [1, 2, 4, 4]), [2, 4, 4]) });
      expect(relErr(y.toArray(), A.concat([one(0), one(1)], 0).toArray())).toBeLessThan(1e-12);
      expect(Array.from(m.forward(x).toArray())).toEqual(Array.from(m.forward(x).toArray()));
      m.train();
      const [a, b] = [m.forward(x), m.forward(x)];
      expect(relErr(a.toArray(), b.toArray())).toBeGreaterThan(1e-3); // a fresh mask per call
    });
  });

  it.each([
    [
      'embedDim not divisible by numHeads',
      () => new A.nn.MultiheadAttention(10, 4),
      /MultiheadAttention: embedDim \(10\) must be divisible by numHeads \(4\)/,
    ],
    [
      'an attnMask of the wrong shape',
      () => new A.nn.MultiheadAttention(8, 2).forward(A.zeros([2, 4, 8]), { attnMask: A.zeros([3, 4, 4]) }),
      /attnMask must be \[4, 4\] or \[4, 4, 4\] \(B·numHeads, Tq, Tk\), got \[3,4,4\]/,
    ],
    [
      'a query of the wrong width',
      () => new A.nn.MultiheadAttention(8, 2).forward(A.zeros([2, 4, 6])),
      /query must be \[B, T, 8\] or \[T, 8\], got \[2,4,6\]/,
    ],
    [
      'key and value of different lengths',
      () => new A.nn.MultiheadAttention(8, 2).forward(A.zeros([2, 4, 8]), A.zeros([2, 5, 8]), A.zeros([2, 6, 8])),
      /do not agree on batch and key length/,
    ],
  ])('%s', (_n, f, msg) => {
    A.tidy(() => expect(f).toThrow(msg));
  });
});

describe('nn.TransformerEncoderLayer', () => {
  it("has PyTorch's parameter names in order", () => {
    A.tidy(() => {
      const l = new A.nn.TransformerEncoderLayer(16, 4, { dimFeedforward: 32 });
      expect(l.namedParameters().map(([n]) => n)).toEqual([
        'self_attn.in_proj_weight',
        'self_attn.in_proj_bias',
        'self_attn.out_proj.weight',
        'self_attn.out_proj.bias',
        'linear1.weight',
        'linear1.bias',
        'linear2.weight',
        'linear2.bias',
        'norm1.weight',
        'norm1.bias',
        'norm2.weight',
        'norm2.bias',
      ]);
    });
  });

  // PyTorch ≥ 2.1 builds norm1 and norm2 with LayerNorm(..., bias=bias): bias: false drops their
  // biases too (they were kept, so such a state dict from PyTorch failed to load, and ours had keys PyTorch refuses).
  it("bias: false leaves out the LayerNorms' biases as well, as PyTorch", () => {
    A.tidy(() => {
      const l = new A.nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 12, dropout: 0, bias: false, seed: 3, ...f64 });
      expect(Object.keys(l.stateDict())).toEqual([
        'self_attn.in_proj_weight',
        'self_attn.out_proj.weight',
        'linear1.weight',
        'linear2.weight',
        'norm1.weight',
        'norm2.weight',
      ]);
      expect([l.norm1.bias, l.norm2.bias]).toEqual([null, null]);
      // The same weights with every bias 0 give the same output.
      const full = new A.nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 12, dropout: 0, seed: 9, ...f64 });
      const sd: Record<string, Tensor> = {};
      for (const [n, t] of Object.entries(full.stateDict())) sd[n] = l.stateDict()[n] ?? A.zeros(t.shape, f64);
      full.loadStateDict(sd);
      const x = rn([2, 3, 8], 7);
      expect(Array.from(l.forward(x).toArray())).toEqual(Array.from(full.forward(x).toArray()));
    });
  });

  it.each([false, true])('normFirst %s: the block written out with ops, and gradcheck of the input', (normFirst) => {
    A.tidy(() => {
      const l = new A.nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 12, dropout: 0, normFirst, seed: 4, ...f64 });
      const x = rn([2, 3, 8], 5);
      const sa = (h: Tensor) => mhaReference(l.self_attn, h, h, h, true);
      const ff = (h: Tensor) => l.linear2.forward(A.relu(l.linear1.forward(h)));
      const want = normFirst
        ? (() => {
            const h = A.add(x, sa(l.norm1.forward(x)));
            return A.add(h, ff(l.norm2.forward(h)));
          })()
        : (() => {
            const h = l.norm1.forward(A.add(x, sa(x)));
            return l.norm2.forward(A.add(h, ff(h)));
          })();
      expect(relErr(l.forward(x, { isCausal: true }).toArray(), want.toArray())).toBeLessThan(1e-12);
      const w = rn([2, 3, 8], 6);
      const r = A.gradcheck((x: Tensor) => A.sum(A.mul(l.forward(x, { isCausal: true }), w)), [x], { rtol: 1e-5 });
      expect(r.ok, JSON.stringify(r.worst)).toBe(true);
    });
  });

  it('dropout acts in training mode only', () => {
    A.tidy(() => {
      const l = new A.nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 12, dropout: 0.3, seed: 1 });
      const x = A.randn([2, 3, 8], { seed: 2 });
      expect(relErr(l.forward(x).toArray(), l.forward(x).toArray())).toBeGreaterThan(1e-3);
      l.eval();
      expect(Array.from(l.forward(x).toArray())).toEqual(Array.from(l.forward(x).toArray()));
    });
  });
});

describe('nn.ModuleList and weight tying', () => {
  it('ModuleList names its items 0, 1, … and has no forward', () => {
    A.tidy(() => {
      const list = new A.nn.ModuleList([new A.nn.Linear(2, 3), new A.nn.ReLU(), new A.nn.Linear(3, 1)]);
      expect(list.length).toBe(3);
      expect(list.namedParameters().map(([n]) => n)).toEqual(['0.weight', '0.bias', '2.weight', '2.bias']);
      expect([...list].length).toBe(3);
      expect(list.at(-1)).toBe(list.at(2));
      expect(() => list.forward()).toThrow(/ModuleList: has no forward/);
      expect(() => list.at(3)).toThrow(/index 3 is out of range for 3 modules/);
    });
  });

  it('a shared parameter appears once in parameters(), under each name in stateDict(), and loads from either', () => {
    A.tidy(() => {
      /** A head reading the embedding's table: the same tensor registered in two modules (PyTorch: head.weight = emb.weight). */
      class Head extends A.nn.Module {
        constructor(readonly weight: Tensor) {
          super();
          this.registerParameter('weight', weight);
        }
        forward(x: Tensor): Tensor {
          return A.matmul(x, A.transpose(this.weight));
        }
      }
      class Tied extends A.nn.Module {
        emb = new A.nn.Embedding(5, 4, { seed: 1 });
        head = new Head(this.emb.weight);
        constructor() {
          super();
          this.registerModule('emb', this.emb);
          this.registerModule('head', this.head);
        }
        forward(x: Tensor): Tensor {
          return this.head.forward(x);
        }
      }
      const m = new Tied();
      expect(m.parameters().length).toBe(1);
      expect(m.namedParameters().map(([n]) => n)).toEqual(['emb.weight']);
      const sd = m.stateDict();
      expect(Object.keys(sd)).toEqual(['emb.weight', 'head.weight']);
      expect(sd['head.weight']).toBe(sd['emb.weight']);
      const other = new Tied();
      other.loadStateDict(A.io.loadSafetensors(A.io.saveSafetensors(sd)));
      expect(Array.from(other.emb.weight.toArray())).toEqual(Array.from(m.emb.weight.toArray()));
      const third = new Tied();
      third.loadStateDict({ 'emb.weight': m.emb.weight });
      expect(Array.from(third.parameters()[0].toArray())).toEqual(Array.from(m.emb.weight.toArray()));
      expect(() => third.loadStateDict({})).toThrow(/missing keys: emb.weight, head.weight/);
    });
  });
});

describe('compile()', () => {
  it('a compiled training step through attention, a Transformer layer and an LSTM gives the eager losses bit for bit', () => {
    const run = (compiled: boolean): number[] => {
      const layer = new A.nn.TransformerEncoderLayer(16, 4, { dimFeedforward: 32, dropout: 0.1, seed: 1 });
      const lstm = new A.nn.LSTM(16, 8, { seed: 2 }),
        gru = new A.nn.GRUCell(8, 8, { seed: 3 });
      const opt = new A.optim.SGD([...layer.parameters(), ...lstm.parameters(), ...gru.parameters()], { lr: 0.1 });
      const step = (x: Tensor) => {
        const [y] = lstm.forward(layer.forward(x, { isCausal: true }));
        const h = gru.forward(A.reshape(A.slice(y, [0, 4, 0], [2, 1, 8]), [2, 8]));
        const loss = A.add(A.mean(A.square(y)), A.mean(A.square(h)));
        loss.backward();
        opt.step();
        opt.zeroGrad();
        return loss;
      };
      const f = compiled ? A.compile(step) : (x: Tensor) => A.tidy(() => step(x));
      const out: number[] = [];
      for (let i = 0; i < 5; i++) out.push(A.tidy(() => f(A.randn([2, 5, 16], { seed: 10 + i })).item()));
      if (compiled) expect((f as A.Compiled<[Tensor], Tensor>).stats.fallback).toBeNull();
      for (const m of [layer, lstm, gru]) m.dispose();
      return out;
    };
    expect(run(true)).toEqual(run(false));
  });
});
