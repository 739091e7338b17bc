// The internal fused primitives (src/ops/nn.ts), one table row each: the kernel against the
// composition of public ops it replaces (bit-identical where the kernel keeps the composed
// order), gradcheck and JVP-vs-differences through the primitive's own composed rules (so
// second derivatives of tanh, crossEntropy, layerNorm are checked), float32 against float64,
// and kernel tails at sizes 0, 1, 3, 4, 5, 16, 17 (elements, or row length for row kernels).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import { apply } from '../src/ops/apply.js';
import { tanhGrad, sigmoidGrad, reluGrad } from '../src/ops/nn.js';
import { rng, weights, relErr, uniform, type Domain } from './specs.js';

beforeAll(() => A.init());

const TAILS = [0, 1, 3, 4, 5, 16, 17];
const LABELS = (n: number, c: number) => Int32Array.from({ length: n }, (_, i) => (i * 7 + 3) % Math.max(1, c));
const onehot = (labels: Int32Array, c: number, dtype: DType) =>
  A.tensor(
    Array.from({ length: labels.length * c }, (_, i) => (i % c === labels[Math.floor(i / c)] ? 1 : 0)),
    { shape: [labels.length, c], dtype },
  );

interface Row {
  name: string;
  /** Input shapes for a size parameter n (elements, or the row length). */
  shapes: (n: number) => number[][];
  domains: Domain[];
  fused: (...xs: Tensor[]) => Tensor;
  composed: (...xs: Tensor[]) => Tensor;
  /** The kernel keeps the composed order: equal bits, float32 and float64. */
  exact: boolean;
}

const last = (t: Tensor) => t.shape.length - 1;
const lnComposed = (x: Tensor) => {
  const xc = A.sub(x, A.div(A.sum(x, last(x), true), x.shape[last(x)]));
  return A.div(xc, A.sqrt(A.add(A.div(A.sum(A.square(xc), last(x), true), x.shape[last(x)]), 1e-5)));
};
const rowMean = (t: Tensor) => A.mean(t, last(t), true);

const ROWS: Row[] = [
  {
    name: 'tanhGrad',
    shapes: (n) => [[n], [n]],
    domains: [uniform(-0.95, 0.95), uniform(-2, 2)],
    exact: true,
    fused: tanhGrad,
    composed: (y, g) => A.mul(g, A.sub(1, A.square(y))),
  },
  {
    name: 'sigmoidGrad',
    shapes: (n) => [[n], [n]],
    domains: [uniform(0.05, 0.95), uniform(-2, 2)],
    exact: true,
    fused: sigmoidGrad,
    composed: (y, g) => A.mul(g, A.mul(y, A.sub(1, y))),
  },
  {
    name: 'reluGrad',
    shapes: (n) => [[n], [n]],
    domains: [uniform(-2, 2, [0], 0.2), uniform(-2, 2)],
    exact: true,
    fused: reluGrad,
    composed: (y, g) => A.where(apply('step', [y], { a: 1, b: 0 }), g, 0), // a select: +0 where y ≤ 0, whatever g is
  },
  // Labels need a class: size 0 is zero rows of 4 classes.
  {
    name: 'softmaxCrossEntropy',
    shapes: (n) => [n ? [3, n] : [0, 4]],
    domains: [uniform(-2, 2)],
    exact: true,
    fused: (x) => apply('softmaxCrossEntropy', [x], { labels: LABELS(x.shape[0], x.shape[1]) }),
    composed: (x) =>
      A.mul(
        A.gather(
          A.reshape(A.logSoftmax(x), [x.size]),
          Array.from(LABELS(x.shape[0], x.shape[1]), (l, i) => i * x.shape[1] + l),
        ),
        -1,
      ),
  },
  {
    name: 'softmaxCrossEntropyGrad',
    shapes: (n) => (n ? [[3, n], [3]] : [[0, 4], [0]]),
    domains: [uniform(-2, 2), uniform(0.5, 1.5)],
    exact: false,
    fused: (x, g) => apply('softmaxCrossEntropyGrad', [x, g], { labels: LABELS(x.shape[0], x.shape[1]) }),
    composed: (x, g) =>
      A.mul(A.reshape(g, [x.shape[0], 1]), A.sub(A.softmax(x), onehot(LABELS(x.shape[0], x.shape[1]), x.shape[1], x.dtype))),
  },
  {
    name: 'layerNorm',
    shapes: (n) => [[2, 3, n]],
    domains: [uniform(-2, 2)],
    exact: true,
    fused: (x) => apply('layerNorm', [x], { eps: 1e-5 }),
    composed: lnComposed,
  },
  {
    name: 'layerNormGrad',
    shapes: (n) => [
      [3, n],
      [3, n],
    ],
    domains: [uniform(-2, 2), uniform(-2, 2)],
    exact: false,
    fused: (x, g) => apply('layerNormGrad', [x, g], { eps: 1e-5 }),
    composed: (x, g) => {
      const yh = lnComposed(x),
        s = A.sqrt(A.add(rowMean(A.square(A.sub(x, rowMean(x)))), 1e-5));
      return A.div(A.sub(A.sub(g, rowMean(g)), A.mul(yh, rowMean(A.mul(g, yh)))), s);
    },
  },
];

function inputs(row: Row, n: number, dtype: DType, salt = 0): Tensor[] {
  const r = rng(n * 101 + salt + row.name.length);
  return row.shapes(n).map((s, i) => {
    const size = s.reduce((a, b) => a * b, 1);
    return A.tensor(row.domains[Math.min(i, row.domains.length - 1)](size, r), { shape: s, dtype });
  });
}
/** L = Σ f(xs)·W with fixed weights: every output element weighs on the gradient. */
const projected =
  (f: (...xs: Tensor[]) => Tensor) =>
  (...xs: Tensor[]) => {
    const y = f(...xs);
    return A.sum(A.mul(y, weights(y.shape, y.dtype)));
  };
const randomLike = (x: Tensor, seed: number) => {
  const r = rng(seed);
  return A.tensor(
    Array.from({ length: x.size }, () => 2 * r() - 1),
    { shape: x.shape, dtype: x.dtype },
  );
};

describe.each(ROWS.map((r) => [r.name, r] as const))('%s', (_name, row) => {
  it.each(TAILS)(`matches the composed ops at size %i (float32 and float64${row.exact ? ', bit for bit' : ''})`, (n) => {
    A.tidy(() => {
      for (const dtype of ['float64', 'float32'] as const) {
        const xs = inputs(row, n, dtype);
        const y = row.fused(...xs),
          e = row.composed(...xs);
        expect(y.shape).toEqual(e.shape);
        if (row.exact) expect(Array.from(y.toArray())).toEqual(Array.from(e.toArray()));
        else expect(relErr(y.toArray(), e.toArray())).toBeLessThan(dtype === 'float64' ? 1e-14 : 1e-6);
      }
    });
  });

  it.each([1, 3, 5])('gradcheck (float64) through its own rules at size %i', (n) => {
    A.tidy(() => expect(A.gradcheck(projected(row.fused), inputs(row, n, 'float64', 1)).maxRelError).toBeLessThan(1e-7));
  });

  // Larger sizes have gradient entries near 0, where differences lose digits; the composed
  // ops' gradient (each of their rules gradchecked in ops.test.ts) is exact to compare with.
  it.each(TAILS)("gradient equals the composed ops' gradient at size %i (float64)", (n) => {
    A.tidy(() => {
      const xs = inputs(row, n, 'float64', 2),
        argnums = xs.map((_, i) => i);
      const gf = A.grad(projected(row.fused), { argnums })(...xs) as Tensor[];
      const gc = A.grad(projected(row.composed), { argnums })(...xs) as Tensor[];
      gc.forEach((g, i) => expect(relErr(gf[i].toArray(), g.toArray())).toBeLessThan(1e-12));
    });
  });

  it('jvp matches central differences', () => {
    A.tidy(() => {
      const xs = inputs(row, 5, 'float64', 2),
        vs = xs.map((x, i) => randomLike(x, 11 + i));
      const [, t] = A.jvp(row.fused, xs, vs);
      const at = (h: number) => row.fused(...xs.map((x, i) => A.add(x, A.mul(vs[i], h))));
      expect(relErr(t.toArray(), A.div(A.sub(at(1e-6), at(-1e-6)), 2e-6).toArray())).toBeLessThan(1e-7);
    });
  });

  it('float32 value and gradient match float64', () => {
    A.tidy(() => {
      const [x32, x64] = [inputs(row, 6, 'float32', 3), inputs(row, 6, 'float64', 3)];
      expect(relErr(row.fused(...x32).toArray(), row.fused(...x64).toArray())).toBeLessThan(1e-4);
      const argnums = x32.map((_, i) => i);
      const g32 = A.grad(projected(row.fused), { argnums })(...x32) as Tensor[];
      const g64 = A.grad(projected(row.fused), { argnums })(...x64) as Tensor[];
      g64.forEach((g, i) => expect(relErr(g32[i].toArray(), g.toArray())).toBeLessThan(1e-4));
    });
  });
});

describe('public ops on the fused primitives', () => {
  it('crossEntropy takes one kernel each way and matches log-softmax picking (float32 bits)', () => {
    A.tidy(() => {
      const x = inputs(ROWS[3], 10, 'float32')[0],
        labels = Array.from(LABELS(3, 10));
      expect(A.crossEntropy(x, labels, { reduction: 'none' }).toArray()).toEqual(ROWS[3].composed(x).toArray());
      const g = A.grad((v: Tensor) => A.crossEntropy(v, labels))(x) as Tensor;
      const e = A.div(A.sub(A.softmax(x), onehot(LABELS(3, 10), 10, 'float32')), 3);
      expect(relErr(g.toArray(), e.toArray())).toBeLessThan(1e-6);
    });
  });

  it('layerNorm with weight and bias: hessian-vector product matches differences of the gradient', () => {
    A.tidy(() => {
      const [x] = inputs(ROWS[5], 6, 'float64', 4),
        w = randomLike(A.zeros([6], { dtype: 'float64' }), 5),
        b = randomLike(w, 6);
      const wt = weights(x.shape, 'float64');
      const loss = (v: Tensor) => A.sum(A.mul(A.tanh(A.layerNorm(v, w, b)), wt));
      const v = randomLike(x, 7),
        g = A.grad(loss) as (x: Tensor) => Tensor;
      const fd = A.div(A.sub(g(A.add(x, A.mul(v, 1e-6))), g(A.sub(x, A.mul(v, 1e-6)))), 2e-6);
      expect(relErr(A.hvp(loss, x, v).toArray(), fd.toArray())).toBeLessThan(1e-6);
    });
  });
});
