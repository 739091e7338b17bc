// Gradient checkpointing (issue 5): checkpointed gradients equal uncheckpointed ones bit for
// bit (f32 and f64, with dropout, nested, through nn.Sequential), the interior of a segment is
// not kept, forward mode flows through, bad input gives clear errors, and the segment planner
// is optimal under its memory model (checked against brute force on small chains).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { backward } from '../src/ops/backward.js';
import { planSegments, planOf, minimumBudget, type Segment, type CheckpointPlan } from '../src/autodiff/segments.js';
import { sequentialForward } from '../src/nn/sequential.js';

beforeAll(() => A.init());

const DTYPES = ['float32', 'float64'] as const;
type DType = (typeof DTYPES)[number];
const bytesOf = (t: Tensor): Uint8Array => new Uint8Array(t.toArray().buffer);

// ------------------------------------------------------------------ an MLP from plain ops

interface Net {
  Ws: Tensor[];
  bs: Tensor[];
  x: Tensor;
  target: Tensor;
  /** Layer i: tanh(h·W + b_i) with W = W_i unless given, optionally followed by dropout with a per-layer seed. */
  layer: (h: Tensor, i: number, W?: Tensor) => Tensor;
  dispose(): void;
}

function net(dtype: DType, L = 6, d = 12, batch = 5, dropoutP = 0): Net {
  const param = (t: Tensor) => {
    const p = A.keep(t);
    p.requiresGrad = true;
    return p;
  };
  const Ws = Array.from({ length: L }, (_, i) => param(A.tidy(() => A.randn([d, d], { seed: 100 + i, dtype }).mul(0.6))));
  const bs = Array.from({ length: L }, (_, i) => param(A.tidy(() => A.randn([d], { seed: 200 + i, dtype }).mul(0.1))));
  const x = param(A.randn([batch, d], { seed: 7, dtype })); // the input's gradient is checked too
  const target = A.keep(A.randn([batch, d], { seed: 8, dtype }));
  const layer = (h: Tensor, i: number, W = Ws[i]): Tensor => {
    const y = A.tanh(A.add(A.matmul(h, W), bs[i]));
    return dropoutP > 0 ? A.dropout(y, dropoutP, { seed: 900 + i }) : y;
  };
  return { Ws, bs, x, target, layer, dispose: () => [...Ws, ...bs, x, target].forEach((t) => t.dispose()) };
}

/** Loss value and every gradient (weights, biases, input) as raw bytes, for one way of running the layers. */
function gradients(n: Net, run: (h: Tensor) => Tensor): Uint8Array[] {
  const params = [...n.Ws, ...n.bs, n.x];
  return A.tidy(() => {
    const loss = A.mseLoss(run(n.x), n.target);
    loss.backward();
    const out = [bytesOf(loss), ...params.map((p) => bytesOf(p.grad!))];
    for (const p of params) {
      p.grad!.dispose();
      p.grad = null;
    }
    return out;
  });
}

/** Layers [from, to) applied in order. */
const span =
  (n: Net, from: number, to: number) =>
  (h: Tensor): Tensor => {
    for (let i = from; i < to; i++) h = n.layer(h, i);
    return h;
  };

/** Ways of running a 6-layer net; every one must give the plain run's gradients exactly. */
const variants: [string, (n: Net) => (h: Tensor) => Tensor][] = [
  [
    'one checkpoint per layer',
    (n) => (h) => {
      for (let i = 0; i < 6; i++) h = A.checkpoint(span(n, i, i + 1))(h);
      return h;
    },
  ],
  [
    'segments of 2, parameters read through the closure',
    (n) => (h) => {
      for (let i = 0; i < 6; i += 2) h = A.checkpoint(span(n, i, i + 2))(h);
      return h;
    },
  ],
  [
    'segments of 3, weights passed as arguments',
    (n) => (h) => {
      const seg = (from: number) =>
        A.checkpoint((z: Tensor, W0: Tensor, W1: Tensor, W2: Tensor) => [W0, W1, W2].reduce((acc, W, k) => n.layer(acc, from + k, W), z));
      return seg(3)(seg(0)(h, n.Ws[0], n.Ws[1], n.Ws[2]), n.Ws[3], n.Ws[4], n.Ws[5]);
    },
  ],
  ['the whole net in one checkpoint', (n) => A.checkpoint(span(n, 0, 6))],
  ['a checkpoint in the middle only', (n) => (h) => span(n, 4, 6)(A.checkpoint(span(n, 1, 4))(span(n, 0, 1)(h)))],
  [
    'nested: checkpointed pairs inside checkpointed halves',
    (n) => (h) => {
      const half = (from: number) =>
        A.checkpoint((z: Tensor) => {
          z = A.checkpoint(span(n, from, from + 2))(z);
          return A.checkpoint(span(n, from + 2, from + 3))(z);
        });
      return half(3)(half(0)(h));
    },
  ],
  ...(['sqrt', 2, 3, 6, 'a budget of 4.5 layers'] as const).map((plan): [string, (n: Net) => (h: Tensor) => Tensor] => [
    `sequentialForward with ${JSON.stringify(plan)}`,
    (n) => {
      const layers = Array.from({ length: 6 }, (_, i) => ({ forward: (h: Tensor) => n.layer(h, i) }));
      const layerBytes = n.x.size * (n.x.dtype === 'float32' ? 4 : 8);
      return (h) => sequentialForward(layers, h, typeof plan === 'string' && plan !== 'sqrt' ? { maxBytes: 4.5 * layerBytes } : plan);
    },
  ]),
];

describe('checkpointed gradients equal uncheckpointed ones bit for bit', () => {
  for (const dtype of DTYPES) {
    for (const dropoutP of [0, 0.3]) {
      for (const [name, make] of variants) {
        it(`${dtype}${dropoutP ? ', dropout 0.3' : ''}: ${name}`, () => {
          const n = net(dtype, 6, 12, 5, dropoutP);
          const plain = gradients(n, span(n, 0, 6));
          const checkpointed = gradients(n, make(n));
          expect(checkpointed).toEqual(plain);
          n.dispose();
        });
      }
    }
  }

  it('retainGraph: a second backward pass recomputes again and doubles the gradients exactly', () => {
    const n = net('float64');
    const twice = (run: (h: Tensor) => Tensor) =>
      A.tidy(() => {
        const loss = A.mseLoss(run(n.x), n.target);
        for (let k = 0; k < 2; k++) backward(loss, undefined, { retainGraph: true });
        return n.Ws.map((W) => {
          const g = bytesOf(W.grad!);
          W.grad!.dispose();
          W.grad = null;
          return g;
        });
      });
    const plain = twice(span(n, 0, 6));
    const ck = twice((h) => A.checkpoint(span(n, 3, 6))(A.checkpoint(span(n, 0, 3))(h)));
    expect(ck).toEqual(plain);
    for (const t of [n.x, ...n.bs]) t.grad?.dispose(), (t.grad = null);
    n.dispose();
  });

  it('inside grad(), vjp() (retained tape, called twice) and with parameters as transform arguments', () => {
    const n = net('float64');
    const f = (run: (h: Tensor, W0: Tensor) => Tensor) => (W0: Tensor) => A.mseLoss(run(n.x, W0), n.target);
    const plainRun = (h: Tensor, W0: Tensor) => span(n, 1, 6)(A.tanh(A.add(A.matmul(h, W0), n.bs[0])));
    const ckRun = (h: Tensor, W0: Tensor) =>
      A.checkpoint(span(n, 3, 6))(A.checkpoint((z: Tensor) => span(n, 1, 3)(A.tanh(A.add(A.matmul(z, W0), n.bs[0]))))(h));
    A.tidy(() => {
      expect(bytesOf(A.grad(f(ckRun))(n.Ws[0]) as Tensor)).toEqual(bytesOf(A.grad(f(plainRun))(n.Ws[0]) as Tensor));
      const [y1, back1] = A.vjp((h: Tensor) => plainRun(h, n.Ws[0]), n.x);
      const [y2, back2] = A.vjp((h: Tensor) => ckRun(h, n.Ws[0]), n.x);
      expect(bytesOf(y2)).toEqual(bytesOf(y1));
      const ct = A.randn(y1.shape, { seed: 3, dtype: 'float64' });
      for (let k = 0; k < 2; k++) expect(bytesOf(back2(ct)[0])).toEqual(bytesOf(back1(ct)[0]));
      back1.release();
      back2.release();
    });
    for (const p of [...n.Ws, ...n.bs]) p.grad?.dispose(), (p.grad = null);
    n.dispose();
  });
});

describe('random draws are replayed by the recomputation', () => {
  it('dropout with an automatic seed: the gradient uses the mask of the forward pass', () => {
    A.tidy(() => {
      const x = A.ones([64, 32], { dtype: 'float64', requiresGrad: true });
      const y = A.checkpoint((h: Tensor) => A.dropout(A.mul(h, 1), 0.5))(x); // no seed: the next automatic one
      A.sum(y).backward();
      const kept = Array.from(y.toArray(), (v) => (v === 0 ? 0 : 2)); // 1/(1 − p) where kept
      expect(Array.from(x.grad!.toArray())).toEqual(kept);
    });
  });

  it('nn.Dropout in a checkpointed nn.Sequential: same masks, same gradients, same RNG stream afterwards', () => {
    const model = (checkpoint?: CheckpointPlan) => {
      const mods = [];
      for (let i = 0; i < 6; i++)
        mods.push(new A.nn.Linear(10, 10, { seed: i, dtype: 'float64' }), new A.nn.Tanh(), new A.nn.Dropout(0.25, { seed: 50 + i }));
      return checkpoint === undefined ? new A.nn.Sequential(...mods) : new A.nn.Sequential(...mods, { checkpoint });
    };
    const x = A.keep(A.randn([7, 10], { seed: 4, dtype: 'float64' }));
    const grads = (m: InstanceType<typeof A.nn.Sequential>) => {
      const steps: Uint8Array[][] = [];
      for (let s = 0; s < 2; s++) {
        // two steps: the second draws fresh masks, in both models alike
        A.tidy(() => A.sum(A.square(m.forward(x))).backward());
        steps.push(
          m.parameters().map((p) => {
            const g = bytesOf(p.grad!);
            p.grad!.dispose();
            p.grad = null;
            return g;
          }),
        );
      }
      return steps;
    };
    const plain = grads(model());
    for (const plan of ['sqrt', 4, { maxBytes: 7 * 10 * 8 * 7 }] as CheckpointPlan[]) expect(grads(model(plan))).toEqual(plain);
    x.dispose();
  });
});

describe('arguments that are not tensors', () => {
  it('pass through as constants, as in PyTorch: gradients of the tensor arguments bit for bit, and the recomputation sees them too', () => {
    const w = A.randn([4, 4], { seed: 3, dtype: 'float64', requiresGrad: true });
    const x = A.randn([3, 4], { seed: 4, dtype: 'float64', requiresGrad: true });
    const block = (h: Tensor, k: number, opts: { square: boolean }, v: Tensor) => {
      const z = A.mul(A.tanh(A.matmul(h, v)), k);
      return opts.square ? A.square(z) : z;
    };
    const grads = (f: typeof block) => {
      A.tidy(() => A.sum(f(x, 3, { square: true }, w)).backward());
      const out = [x, w].map((p) => bytesOf(p.grad!));
      for (const p of [x, w]) {
        p.grad!.dispose();
        p.grad = null;
      }
      return out;
    };
    const base = A.memory().tensors;
    expect(grads(A.checkpoint(block))).toEqual(grads(block));
    expect(A.memory().tensors).toBe(base);
    x.dispose();
    w.dispose();
  });
});

describe('int32 arguments (token ids, indices)', () => {
  it('pass through to fn as constants: same gradients bit for bit, also when the caller frees them before backward', () => {
    const emb = new A.nn.Embedding(7, 5, { seed: 2 });
    const w = A.randn([5, 5], { seed: 1, dtype: 'float32', requiresGrad: true });
    const block = (h: Tensor, ids: Tensor) => A.tanh(A.matmul(emb.forward(ids), h));
    const grads = (f: (h: Tensor, ids: Tensor) => Tensor, freeIds: boolean) => {
      const ids = A.tensor([0, 3, 3, 6, 2], { dtype: 'int32' });
      const loss = A.tidy(() => A.sum(A.square(f(w, ids))));
      if (freeIds) ids.dispose();
      loss.backward();
      loss.dispose();
      if (!freeIds) ids.dispose();
      const out = [w, ...emb.parameters()].map((p) => bytesOf(p.grad!));
      for (const p of [w, ...emb.parameters()]) {
        p.grad!.dispose();
        p.grad = null;
      }
      return out;
    };
    const base = A.memory();
    const want = grads(block, false);
    expect(grads(A.checkpoint(block), false)).toEqual(want);
    expect(grads(A.checkpoint(block), true)).toEqual(want);
    expect(A.memory().tensors).toBe(base.tensors);
    // fn's own ops still refuse arithmetic on them
    expect(() =>
      A.checkpoint((h: Tensor, ids: Tensor) => A.add(h, ids))(A.ones([5]), A.tensor([1, 2, 3, 4, 5], { dtype: 'int32' })),
    ).toThrow(/add: dtypes differ/);
    w.dispose();
  });

  it('nn.Sequential with checkpointing and an Embedding first takes int32 token ids: same gradients', () => {
    const run = (checkpoint: boolean) => {
      const layers = [
        new A.nn.Embedding(11, 8, { seed: 1 }),
        new A.nn.Linear(8, 8, { seed: 2 }),
        new A.nn.Tanh(),
        new A.nn.Linear(8, 11, { seed: 3 }),
      ];
      const m = checkpoint ? new A.nn.Sequential(...layers, { checkpoint: 'sqrt' }) : new A.nn.Sequential(...layers);
      const ids = A.tensor([1, 4, 9, 4, 0, 10], { shape: [2, 3], dtype: 'int32' });
      A.tidy(() => A.sum(A.square(m.forward(ids))).backward());
      const out = m.parameters().map((p) => bytesOf(p.grad!));
      ids.dispose();
      m.dispose();
      return out;
    };
    expect(run(true)).toEqual(run(false));
  });
});

describe('what a checkpoint keeps and frees', () => {
  it('the forward pass keeps the output and no interior; backward returns memory to the baseline plus gradients', () => {
    const n = net('float32', 6, 64, 32);
    const act = 32 * 64 * 4;
    const before = A.memory().bytesInUse,
      gradsBefore = A.memory().gradBytes;
    A.tidy(() => {
      const y = A.checkpoint(span(n, 0, 6))(n.x);
      expect(A.memory().bytesInUse - before).toBe(act); // just y; the saved input is a view of x
      A.mseLoss(y, n.target).backward();
    });
    const grads = [...n.Ws, ...n.bs, n.x].reduce((s, p) => s + p.size * 4, 0);
    expect(A.memory().bytesInUse - before).toBe(grads);
    expect(A.memory().gradBytes - gradsBefore).toBe(grads);
    for (const p of [...n.Ws, ...n.bs, n.x]) p.grad!.dispose(), (p.grad = null);
    n.dispose();
  });

  it('under noGrad it is an ordinary call: same values, nothing recorded', () => {
    const n = net('float64');
    A.tidy(() => {
      const a = A.noGrad(() => A.checkpoint(span(n, 0, 6))(n.x));
      expect(a.requiresGrad).toBe(false);
      expect(bytesOf(a)).toEqual(bytesOf(A.noGrad(() => span(n, 0, 6)(n.x))));
    });
    n.dispose();
  });
});

describe('forward mode through a checkpoint', () => {
  it('jvp and hvp equal the uncheckpointed ones bit for bit', () => {
    const n = net('float64', 4, 6, 3);
    const plain = (h: Tensor) => A.sum(A.square(span(n, 0, 4)(h)));
    const ck = (h: Tensor) => A.sum(A.square(A.checkpoint(span(n, 2, 4))(A.checkpoint(span(n, 0, 2))(h))));
    A.tidy(() => {
      const v = A.randn(n.x.shape, { seed: 11, dtype: 'float64' });
      const [y1, t1] = A.jvp(plain, [n.x], [v]);
      const [y2, t2] = A.jvp(ck, [n.x], [v]);
      expect([bytesOf(y2), bytesOf(t2)]).toEqual([bytesOf(y1), bytesOf(t1)]);
      expect(bytesOf(A.hvp(ck, n.x, v))).toEqual(bytesOf(A.hvp(plain, n.x, v)));
    });
    for (const p of [...n.Ws, ...n.bs]) p.grad?.dispose(), (p.grad = null);
    n.dispose();
  });
});

describe('bad input gives clear errors', () => {
  it('arguments and results that are not tensors', () => {
    expect(() => A.checkpoint(42 as never)).toThrow(/checkpoint: fn must be a function/);
    const x = A.ones([2]);
    expect(() => A.checkpoint((h: Tensor) => h)(3 as never)).toThrow(A.ArgumentError);
    // 3 is a constant argument (as in PyTorch); the function then returns it, which is refused
    expect(() => A.checkpoint((h: Tensor) => h)(3 as never)).toThrow(/the function must return a Tensor, got 3 \(a number\)/);
    expect(() =>
      A.checkpoint(function bad(_h: Tensor) {
        return 1 as never;
      })(x),
    ).toThrow(/checkpoint\(bad\): the function must return a Tensor/);
    x.dispose();
  });

  it('a tensor computed outside the function that requires grad must be an argument', () => {
    const w = A.ones([3], { requiresGrad: true });
    const before = A.memory();
    A.tidy(() => {
      const h = A.tanh(w);
      expect(() =>
        A.checkpoint(function seg(x: Tensor) {
          return A.mul(x, h);
        })(A.ones([3])),
      ).toThrow(
        /checkpoint\(seg\): the function reads a tensor of shape \[3\] that was computed outside it and requires grad; pass it as an argument/,
      );
    });
    expect(A.memory().bytesInUse).toBe(before.bytesInUse);
    // The same inside a nested checkpoint shows up when the outer segment is recomputed.
    A.tidy(() => {
      const outer = A.checkpoint((x: Tensor) => {
        const h = A.tanh(x);
        return A.checkpoint(function inner(z: Tensor) {
          return A.mul(z, h);
        })(x);
      });
      const y = outer(w);
      expect(() => A.sum(y).backward()).toThrow(/checkpoint\(inner\): the function reads a tensor/);
    });
    expect(w.grad).toBe(null); // a failed backward pass leaves .grad as it was
    w.dispose();
  });

  it('Sequential: bad checkpoint options at construction, a budget below the least feasible one at the first call', () => {
    for (const bad of ['log', 0, 2.5, -1, { maxBytes: 0 }, { maxBytes: 'x' }, null]) {
      expect(() => new A.nn.Sequential(new A.nn.Tanh(), { checkpoint: bad as never })).toThrow(
        /Sequential: checkpoint must be 'sqrt', a positive integer/,
      );
    }
    const m = new A.nn.Sequential(new A.nn.Linear(4, 4, { seed: 1 }), new A.nn.Tanh(), new A.nn.Linear(4, 4, { seed: 2 }), {
      checkpoint: { maxBytes: 10 },
    });
    A.tidy(() => {
      expect(() => m.forward(A.ones([2, 4]))).toThrow(
        /maxBytes 10 is below the least activation budget these 3 layers fit in, 96 bytes \(the largest layer alone keeps 32 bytes\)/,
      );
    });
  });
});

// ------------------------------------------------------------------ the planner

/** Every segmentation of L layers, each segment checkpointed or stored. */
function* allPlans(L: number): Generator<Segment[]> {
  for (let cuts = 0; cuts < 1 << (L - 1); cuts++) {
    const bounds = [0];
    for (let i = 1; i < L; i++) if (cuts & (1 << (i - 1))) bounds.push(i);
    bounds.push(L);
    const k = bounds.length - 1;
    for (let flags = 0; flags < 1 << k; flags++) {
      yield Array.from({ length: k }, (_, j) => ({ start: bounds[j], end: bounds[j + 1], checkpoint: ((flags >> j) & 1) === 1 }));
    }
  }
}

const chains: [string, number[]][] = [
  ['uniform 7', [4, 4, 4, 4, 4, 4, 4]],
  ['shrinking (a CNN)', [64, 64, 32, 32, 16, 8, 2]],
  ['growing', [1, 2, 3, 5, 8, 13]],
  ['one wide layer', [3, 3, 40, 3, 3, 3]],
  ['zeros among them', [0, 5, 0, 5, 5, 0]],
  ['single layer', [9]],
];

describe('planSegments', () => {
  for (const [name, bytes] of chains) {
    it(`${name}: a budget gives the fewest recomputed layers that fit (brute force), below the least budget an error`, () => {
      const plans = [...allPlans(bytes.length)].map((s) => planOf(bytes, s));
      const least = Math.min(...plans.map((p) => p.peakBytes));
      expect(minimumBudget(bytes)).toBe(least);
      const total = bytes.reduce((a, b) => a + b, 0);
      for (let M = least; M <= total; M++) {
        const got = planSegments(bytes, { maxBytes: M });
        expect(got.peakBytes).toBeLessThanOrEqual(M);
        expect(got.recomputed).toBe(Math.min(...plans.filter((p) => p.peakBytes <= M).map((p) => p.recomputed)));
        expect(got).toEqual(planOf(bytes, got.segments)); // its numbers are its segments'
      }
      expect(planSegments(bytes, { maxBytes: total })).toEqual({
        segments: [{ start: 0, end: bytes.length, checkpoint: false }],
        peakBytes: total,
        recomputed: 0,
      });
      if (least > 0)
        expect(() => planSegments(bytes, { maxBytes: least - 0.5 })).toThrow(
          new RegExp(`below the least activation budget these ${bytes.length} layers fit in, ${least} bytes`),
        );
    });

    it(`${name}: k segments have the least peak of any k-segmentation, the last one stored`, () => {
      const L = bytes.length;
      for (let k = 1; k <= L + 1; k++) {
        const got = planSegments(bytes, k);
        const count = Math.min(k, L);
        expect(got.segments.length).toBe(count);
        expect(got.segments.map((s) => s.checkpoint)).toEqual(Array.from({ length: count }, (_, j) => j < count - 1));
        const best = Math.min(
          ...[...allPlans(L)]
            .filter((s) => s.length === count && s.every((x, j) => x.checkpoint === j < count - 1))
            .map((s) => planOf(bytes, s).peakBytes),
        );
        expect(got.peakBytes).toBe(best);
      }
      expect(planSegments(bytes, 'sqrt').segments.length).toBe(Math.ceil(Math.sqrt(L)));
    });
  }

  it("'sqrt' on uniform layers: ⌈√L⌉ segments whose planned peak is O(√L) layers", () => {
    for (const L of [16, 64, 256]) {
      const p = planSegments(new Array(L).fill(1), 'sqrt');
      expect(p.segments.length).toBe(Math.ceil(Math.sqrt(L)));
      expect(p.peakBytes).toBeLessThanOrEqual(2 * Math.sqrt(L));
      expect(p.segments[0].start).toBe(0);
      expect(p.segments.at(-1)!.end).toBe(L);
      p.segments.slice(1).forEach((s, j) => expect(s.start).toBe(p.segments[j].end));
    }
  });

  it('rejects bad input', () => {
    expect(() => planSegments([1, -2], 'sqrt')).toThrow(/layerBytes must be an array of non-negative byte counts/);
    expect(() => planSegments([1, 2], 0 as never)).toThrow(/planSegments: checkpoint must be 'sqrt', a positive integer/);
    expect(planSegments([], 'sqrt')).toEqual({ segments: [], peakBytes: 0, recomputed: 0 });
  });
});
