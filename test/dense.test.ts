// The fused dense primitive act(x·Wᵀ + b) (src/ops/dense.ts): forward against a float64
// reference at sizes that cut the GEMM's tiles and blocks mid-way, bit-identity with the
// unfused matmul → add → act ops, gradcheck of x, W and b, the one-pass bias gradient, hvp
// through the backward pass, the thread split (bias offset of a column cut), and
// nn.Sequential's Linear → activation fusion.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import { dense, type Activation } from '../src/ops/dense.js';
import { matmulT } from '../src/ops/api.js';
import { thresholds } from '../src/wasm/split.js';
import { threadCount } from '../src/testing.js';
import { rng, relErr } from './specs.js';

beforeAll(() => A.init({ threads: 2 }));

const ACTS: Activation[] = ['none', 'relu', 'tanh', 'sigmoid'];
const ACT_REF: Record<Activation, (v: number) => number> = {
  none: (v) => v,
  relu: (v) => Math.max(v, 0),
  tanh: Math.tanh,
  sigmoid: (v) => 1 / (1 + Math.exp(-v)),
};
const ACT_OP: Record<Activation, (t: Tensor) => Tensor> = { none: (t) => t, relu: A.relu, tanh: A.tanh, sigmoid: A.sigmoid };
// [M, K, N]: tails of the 4×8 tile, K past one 256-deep block (the epilogue waits for the last),
// M past one 64-row A block, N past one 512-column B panel, K = 1.
const SIZES = [
  [1, 1, 1],
  [3, 5, 4],
  [7, 37, 19],
  [70, 300, 17],
  [5, 3, 530],
  [9, 1, 33],
];

function vals(n: number, seed: number, scale = 1): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => (2 * r() - 1) * scale);
}

/** x [M, K], W [N, K], b [N] with pre-activations of order 1. */
function inputs(M: number, K: number, N: number, dtype: DType, seed = 1): [Tensor, Tensor, Tensor] {
  return [
    A.tensor(vals(M * K, seed), { shape: [M, K], dtype }),
    A.tensor(vals(N * K, seed + 1, 2 / Math.sqrt(K)), { shape: [N, K], dtype }),
    A.tensor(vals(N, seed + 2), { shape: [N], dtype }),
  ];
}

/** act(x·Wᵀ + b) in float64 JS. */
function reference(x: Tensor, w: Tensor, b: Tensor, act: Activation): number[] {
  const [M, K] = x.shape,
    N = w.shape[0];
  const xs = x.toArray(),
    ws = w.toArray(),
    bs = b.toArray(),
    out: number[] = [];
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += xs[i * K + k] * ws[j * K + k];
      out.push(ACT_REF[act](s + bs[j]));
    }
  }
  return out;
}

type Op = (x: Tensor, w: Tensor, b: Tensor, act: Activation) => Tensor;
const unfused: Op = (x, w, b, act) => ACT_OP[act](A.add(matmulT(x, w, false, true), b));
const bits = (t: Tensor): number[] => Array.from(new Uint8Array(t.toArray().buffer));

describe.each(['float64', 'float32'] as DType[])('dense forward (%s)', (dtype) => {
  const tol = dtype === 'float64' ? 1e-12 : 2e-6;
  it.each(ACTS)('act = %s matches the float64 reference and the unfused ops bit for bit', (act) => {
    for (const [M, K, N] of SIZES) {
      A.tidy(() => {
        const [x, w, b] = inputs(M, K, N, dtype);
        const y = dense(x, w, b, act);
        expect(y.shape).toEqual([M, N]);
        expect(relErr(y.toArray(), reference(x, w, b, act)), `${M}x${K}x${N}`).toBeLessThan(tol);
        expect(bits(y), `${M}x${K}x${N}`).toEqual(bits(unfused(x, w, b, act)));
      });
    }
  });
});

describe('dense shapes and errors', () => {
  it('takes any number of leading axes (values and gradients) and empty batches', () => {
    A.tidy(() => {
      const [x, w, b] = inputs(6, 5, 3, 'float64');
      const x3 = x.reshape([2, 3, 5]);
      const y = dense(x3, w, b, 'tanh');
      expect(y.shape).toEqual([2, 3, 3]);
      expect(bits(y)).toEqual(bits(dense(x, w, b, 'tanh')));
      expect(dense(A.zeros([0, 5], { dtype: 'float64' }), w, b, 'relu').shape).toEqual([0, 3]);
      const proj = A.tensor(vals(18, 3), { shape: [2, 3, 3], dtype: 'float64' });
      for (const act of ['none', 'tanh'] as const) {
        const r = A.gradcheck((xx, ww, bb) => A.sum(A.mul(dense(xx, ww, bb, act), proj)), [x3, w, b], { eps: 1e-5 });
        expect(r.maxRelError, act).toBeLessThan(1e-7);
      }
    });
  });
  it('names the op and the shapes, dtypes or activation that are wrong', () => {
    A.tidy(() => {
      const [x, w, b] = inputs(2, 3, 4, 'float64');
      expect(() => dense(x, w, A.zeros([3], { dtype: 'float64' }))).toThrow(
        /dense: expected input \[\.\.\., in\], weight \[out, in\] and bias \[out\], got \[2,3\], \[4,3\] and \[3\]/,
      );
      expect(() => dense(A.zeros([2, 4], { dtype: 'float64' }), w, b)).toThrow(A.ShapeError);
      expect(() => dense(x, w, A.zeros([4]))).toThrow(A.DtypeError);
      expect(() => dense(x, w, b, 'gelu' as Activation)).toThrow(/dense: act must be one of 'none', 'relu', 'tanh', 'sigmoid', got "gelu"/);
    });
  });
});

describe('dense gradients', () => {
  it.each(ACTS)('act = %s passes gradcheck in x, W and b', (act) => {
    A.tidy(() => {
      const [x, w, b] = inputs(5, 7, 6, 'float64', 11);
      const proj = A.tensor(vals(30, 5), { shape: [5, 6], dtype: 'float64' });
      // eps 1e-5: at 1e-6 the differences' rounding error (~1e-16/eps) nears 1e-7 of the smallest components.
      const r = A.gradcheck((xx, ww, bb) => A.sum(A.mul(dense(xx, ww, bb, act), proj)), [x, w, b], { eps: 1e-5 });
      expect(r.maxRelError).toBeLessThan(1e-7);
    });
  });

  it.each(['float32', 'float64'] as DType[])(
    '%s: dx and dW equal the unfused ops bit for bit; db is the ascending column sum of gz',
    (dtype) => {
      for (const act of ACTS) {
        A.tidy(() => {
          const [x, w, b] = inputs(37, 21, 19, dtype, 3);
          const proj = A.tensor(vals(37 * 19, 9), { shape: [37, 19], dtype });
          const loss = (f: Op) => (xx: Tensor, ww: Tensor, bb: Tensor) => A.sum(A.mul(f(xx, ww, bb, act), proj));
          const fused = A.grad(loss(dense), { argnums: [0, 1, 2] })(x, w, b) as Tensor[];
          const plain = A.grad(loss(unfused), { argnums: [0, 1, 2] })(x, w, b) as Tensor[];
          expect(bits(fused[0]), act).toEqual(bits(plain[0]));
          expect(bits(fused[1]), act).toEqual(bits(plain[1]));
          // gz = proj·act'(y) as the fused kernel computes it, then Σ_i in order, rounded per add.
          const y = dense(x, w, b, act).toArray(),
            g = proj.toArray();
          const round = dtype === 'float32' ? Math.fround : (v: number) => v;
          const d = (yv: number, gv: number) =>
            act === 'none'
              ? gv
              : act === 'relu'
                ? gv * (yv > 0 ? 1 : 0)
                : act === 'tanh'
                  ? round(gv * round(1 - round(yv * yv)))
                  : round(gv * round(yv * round(1 - yv)));
          const db = Array.from({ length: 19 }, (_, j) => {
            let s = 0;
            for (let i = 0; i < 37; i++) s = round(s + d(y[i * 19 + j], g[i * 19 + j]));
            return s;
          });
          expect(Array.from(fused[2].toArray()), act).toEqual(db);
          expect(relErr(fused[2].toArray(), plain[2].toArray()), act).toBeLessThan(dtype === 'float32' ? 1e-5 : 1e-13);
        });
      }
    },
  );

  it.each(ACTS)('act = %s: hvp through the fused backward equals the unfused one', (act) => {
    A.tidy(() => {
      const [x, w, b] = inputs(4, 6, 5, 'float64', 21);
      const proj = A.tensor(vals(20, 8), { shape: [4, 5], dtype: 'float64' });
      const v = A.tensor(vals(30, 4), { shape: [5, 6], dtype: 'float64' });
      // Squared output so that even act = 'none' has a non-zero Hessian in W.
      const f = (op: Op) => (ww: Tensor) => A.sum(A.mul(A.square(op(x, ww, b, act)), proj));
      const h = A.hvp(f(dense), w, v),
        e = A.hvp(f(unfused), w, v);
      expect(relErr(h.toArray(), e.toArray())).toBeLessThan(1e-12);
      expect(relErr(h.toArray(), new Float64Array(30))).toBeGreaterThan(0); // not trivially zero
    });
  });

  it('forward mode (jvp) matches the unfused ops in every input', () => {
    A.tidy(() => {
      const [x, w, b] = inputs(3, 4, 5, 'float64', 31);
      const ts = [
        A.randn([3, 4], { seed: 1, dtype: 'float64' }),
        A.randn([5, 4], { seed: 2, dtype: 'float64' }),
        A.randn([5], { seed: 3, dtype: 'float64' }),
      ];
      for (const act of ACTS) {
        const [, t1] = A.jvp((xx: Tensor, ww: Tensor, bb: Tensor) => dense(xx, ww, bb, act), [x, w, b], ts);
        const [, t2] = A.jvp((xx: Tensor, ww: Tensor, bb: Tensor) => unfused(xx, ww, bb, act), [x, w, b], ts);
        expect(relErr(t1.toArray(), t2.toArray()), act).toBeLessThan(1e-14);
      }
    });
  });
});

describe('dense under the thread pool', () => {
  it('gives the same bytes with every launch split (rows and columns of y, columns of the bias gradient)', () => {
    expect(threadCount()).toBe(2);
    const run = (): number[][] =>
      A.tidy(() => {
        const out: number[][] = [];
        // Tall (row cuts) and wide-and-short (column cuts: the bias pointer moves with the piece).
        for (const [M, K, N] of [
          [75, 33, 21],
          [5, 33, 75],
        ]) {
          for (const act of ACTS) {
            const [x, w, b] = inputs(M, K, N, 'float32', 41);
            const gs = A.grad((xx: Tensor, ww: Tensor, bb: Tensor) => A.sum(A.square(dense(xx, ww, bb, act))), { argnums: [0, 1, 2] })(
              x,
              w,
              b,
            ) as Tensor[];
            out.push(bits(dense(x, w, b, act)), ...gs.map(bits));
          }
        }
        return out;
      });
    const whole = run();
    const saved = { ...thresholds };
    try {
      thresholds.gemm = 0;
      thresholds.elementwise = 0;
      expect(run()).toEqual(whole);
    } finally {
      Object.assign(thresholds, saved);
    }
  });
});

describe('nn.Sequential fuses Linear → activation', () => {
  it("gives the unfused modules' outputs bit for bit and their gradients within rounding", () => {
    A.tidy(() => {
      const model = new A.nn.Sequential(
        new A.nn.Linear(13, 9, { seed: 1 }),
        new A.nn.ReLU(),
        new A.nn.Linear(9, 7, { seed: 2 }),
        new A.nn.Tanh(),
        new A.nn.Linear(7, 5, { seed: 3 }),
        new A.nn.Linear(5, 4, { seed: 4, bias: false }),
        new A.nn.ReLU(),
      );
      const x = A.randn([11, 13], { seed: 5 });
      const lossOf = (out: Tensor) => A.crossEntropy(out, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]);
      const byLayer = (h: Tensor) => model.layers.reduce((t, m) => m.forward(t), h);
      const params = model.parameters();
      const grads = (fwd: (h: Tensor) => Tensor) => {
        model.zeroGrad();
        const y = fwd(x);
        lossOf(y).backward();
        return [y.toArray(), ...params.map((p) => p.grad!.toArray())];
      };
      const [yf, ...gf] = grads((h) => model.forward(h));
      const [yu, ...gu] = grads(byLayer);
      expect(Array.from(yf)).toEqual(Array.from(yu));
      gf.forEach((g, i) => expect(relErr(g, gu[i]), model.namedParameters()[i][0]).toBeLessThan(1e-5));
      expect(model.namedParameters().map(([n]) => n)).toEqual([
        '0.weight',
        '0.bias',
        '2.weight',
        '2.bias',
        '4.weight',
        '4.bias',
        '5.weight',
      ]);
      model.dispose();
    });
  });

  it('runs a Linear → ReLU / Tanh pair as one dense node, and not with checkpointing, without a bias or with feedback alignment', () => {
    A.tidy(() => {
      const x = A.randn([3, 4], { seed: 6 });
      const lastPrim = (...ms: (A.nn.Module | A.nn.SequentialOptions)[]): string => {
        const model = new A.nn.Sequential(...ms),
          prim = model.forward(x).node!.prim;
        model.dispose();
        return prim;
      };
      expect(lastPrim(new A.nn.Linear(4, 2), new A.nn.Tanh())).toBe('dense');
      expect(lastPrim(new A.nn.Linear(4, 2), new A.nn.ReLU())).toBe('dense');
      expect(lastPrim(new A.nn.Linear(4, 2))).toBe('affine');
      expect(lastPrim(new A.nn.Linear(4, 2), new A.nn.Tanh(), { checkpoint: 1 })).not.toBe('dense');
      expect(lastPrim(new A.nn.Linear(4, 2, { bias: false }), new A.nn.Tanh())).toBe('tanh');
      expect(lastPrim(new A.nn.Linear(4, 2, { feedback: 'alignment' }), new A.nn.ReLU())).toBe('relu');
    });
  });
});
