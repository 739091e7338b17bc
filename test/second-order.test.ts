// Second order for every row of the op table, four ways (grad∘grad, jacrev∘grad, jvp∘grad and
// grad∘jvp), each against central differences of the analytic gradient in float64; then
// property-based first-order checks (fast-check) over random shapes, broadcasts, axes and
// dtypes against central differences.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { SPECS, values, tensors, weights, relErr, rng, type OpSpec } from './specs.js';

await A.init();
const f64 = { dtype: 'float64' as const };
const EPS = 1e-5;

/** L(xs) = Σ f(xs)·W: a scalar whose Hessian exercises every second derivative of f. */
function projected(spec: OpSpec, xs: readonly Tensor[]): (...ys: Tensor[]) => Tensor {
  const W = A.keep(weights(A.tidy(() => spec.f(...xs)).shape, 'float64'));
  return (...ys) => A.sum(A.mul(spec.f(...ys), W));
}

const flat = (ts: readonly Tensor[]): number[] => ts.flatMap((t) => Array.from(t.toArray()));

/** H·v by central differences of the analytic gradient (all inputs moved along v). */
function fdHv(L: (...ys: Tensor[]) => Tensor, xs: readonly Tensor[], vs: readonly Tensor[]): number[] {
  const all = xs.map((_, i) => i);
  const at = (s: number) =>
    A.tidy(() => flat(A.grad(L, { argnums: all })(...xs.map((x, i) => A.add(x, A.mul(vs[i], s * EPS)))) as Tensor[]));
  const plus = at(1),
    minus = at(-1);
  return plus.map((p, i) => (p - minus[i]) / (2 * EPS));
}

/** The same with only input k moved (the others held). */
function fdHvAlong(L: (...ys: Tensor[]) => Tensor, xs: readonly Tensor[], k: number, v: Tensor): number[] {
  const at = (s: number) =>
    A.tidy(() => {
      const ys = xs.map((x, i) => (i === k ? A.add(x, A.mul(v, s * EPS)) : x));
      return Array.from((A.grad(L, { argnums: k })(...ys) as Tensor).toArray());
    });
  const plus = at(1),
    minus = at(-1);
  return plus.map((p, i) => (p - minus[i]) / (2 * EPS));
}

const directions = (xs: readonly Tensor[], seed: number): Tensor[] => {
  const r = rng(seed);
  return xs.map((x) =>
    A.tensor(
      Array.from({ length: x.size }, () => r() * 2 - 1),
      { shape: x.shape, ...f64 },
    ),
  );
};

describe.each(SPECS.map((s) => [s.name, s] as const))('second order: %s', (_name, spec) => {
  it('grad∘grad (all inputs, mixed partials) matches differences of the gradient', () => {
    A.tidy(() => {
      const xs = tensors(values(spec), spec.shapes, 'float64');
      const vs = directions(xs, 11);
      const L = projected(spec, xs);
      const all = xs.map((_, i) => i);
      const hv = A.grad(
        (...ys: Tensor[]) => {
          const gs = A.grad(L, { argnums: all })(...ys) as Tensor[];
          return gs.map((g, i) => A.sum(A.mul(g, vs[i]))).reduce((a, b) => A.add(a, b));
        },
        { argnums: all },
      )(...xs) as Tensor[];
      expect(relErr(flat(hv), fdHv(L, xs, vs))).toBeLessThan(1e-6);
    });
  });

  it('jacrev∘grad, jvp∘grad and grad∘jvp (each input) match differences of the gradient', () => {
    A.tidy(() => {
      const xs = tensors(values(spec), spec.shapes, 'float64');
      const vs = directions(xs, 23);
      const L = projected(spec, xs);
      xs.forEach((x, k) => {
        const Lk = (y: Tensor) => L(...xs.map((u, i) => (i === k ? y : u)));
        const gk = A.grad(Lk) as (y: Tensor) => Tensor;
        const want = fdHvAlong(L, xs, k, vs[k]);
        const H = A.jacrev(gk)(x);
        const byRev = A.matmul(A.reshape(H, [x.size, x.size]), A.reshape(vs[k], [x.size]));
        const byFwd = A.jvp(gk, [x], [vs[k]])[1];
        const byRevFwd = A.grad((y: Tensor) => A.sum(A.jvp(Lk, [y], [vs[k]])[1]))(x) as Tensor;
        for (const [how, got] of [
          ['jacrev∘grad', byRev],
          ['jvp∘grad', byFwd],
          ['grad∘jvp', byRevFwd],
        ] as const) {
          expect(relErr(got.toArray(), want), `${how}, input ${k}`).toBeLessThan(1e-6);
        }
      });
    });
  });
});

// Rows the table does not hold: convolution and pooling (their gradient primitives get their own VJPs).
const CONV: OpSpec[] = [
  {
    name: 'conv2d',
    shapes: [
      [2, 2, 5, 5],
      [3, 2, 3, 3],
    ],
    f: (x, w) => A.tanh(A.conv2d(x, w, { padding: 1 })),
    ref: () => {
      throw new Error('unused');
    },
  },
  {
    name: 'conv2d stride 2',
    shapes: [
      [1, 2, 6, 6],
      [2, 2, 3, 3],
    ],
    f: (x, w) => A.square(A.conv2d(x, w, { stride: 2 })),
    ref: () => {
      throw new Error('unused');
    },
  },
  {
    name: 'maxPool2d',
    shapes: [[1, 2, 4, 4]],
    f: (x) => A.square(A.maxPool2d(A.mul(x, 1), 2)),
    ref: () => {
      throw new Error('unused');
    },
  },
  {
    name: 'avgPool2d',
    shapes: [[1, 2, 4, 4]],
    f: (x) => A.exp(A.avgPool2d(x, 2)),
    ref: () => {
      throw new Error('unused');
    },
  },
];

describe.each(CONV.map((s) => [s.name, s] as const))('second order: %s', (_name, spec) => {
  it('grad∘grad and jvp∘grad match differences of the gradient', () => {
    A.tidy(() => {
      const xs = tensors(
        values({ ...spec, domain: [(n, r) => Array.from({ length: n }, (_, i) => ((i * 7919) % 97) / 50 - 1 + 0.001 * r())] }),
        spec.shapes,
        'float64',
      );
      const vs = directions(xs, 5);
      const L = projected(spec, xs);
      const all = xs.map((_, i) => i);
      const hv = A.grad(
        (...ys: Tensor[]) =>
          (A.grad(L, { argnums: all })(...ys) as Tensor[]).map((g, i) => A.sum(A.mul(g, vs[i]))).reduce((a, b) => A.add(a, b)),
        { argnums: all },
      )(...xs) as Tensor[];
      expect(relErr(flat(hv), fdHv(L, xs, vs))).toBeLessThan(1e-6);
      const g0 = A.grad((y: Tensor) => L(y, ...xs.slice(1))) as (y: Tensor) => Tensor;
      expect(relErr(A.jvp(g0, [xs[0]], [vs[0]])[1].toArray(), fdHvAlong(L, xs, 0, vs[0]))).toBeLessThan(1e-6);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Property-based first order: random shapes, broadcasts, axes and dtypes; the analytic gradient
// of L = Σ f(xs)·W against central differences in float64 (float32 gradients to float32 accuracy).

type Dt = 'float32' | 'float64';
const shapeArb = (minRank = 0, maxRank = 3, maxDim = 4) =>
  fc.array(fc.integer({ min: 1, max: maxDim }), { minLength: minRank, maxLength: maxRank });
const dtypeArb = fc.constantFrom<Dt>('float32', 'float64');
const seedArb = fc.integer({ min: 1, max: 1 << 30 });
const sizeOf = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** Values in ±[lo, hi] (away from 0: kinks of relu/abs, poles), or in [lo, hi] when positive. */
function draw(seed: number, n: number, lo = 0.2, hi = 2, positive = false): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => (positive || r() < 0.5 ? 1 : -1) * (lo + (hi - lo) * r()));
}
/** n distinct values at least 0.1 apart, shuffled (max and maximum without ties). */
function spread(seed: number, n: number, offset = 0): number[] {
  const r = rng(seed),
    vs = Array.from({ length: n }, (_, i) => -1 + 0.25 * i + offset + 0.05 * r());
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [vs[i], vs[j]] = [vs[j], vs[i]];
  }
  return vs;
}

/** Checks grad of Σ f(xs)·W in `dtype` against central differences of the float64 function. */
function firstOrder(f: (...xs: Tensor[]) => Tensor, vals: number[][], shapes: number[][], dtype: Dt, seed: number): void {
  A.tidy(() => {
    const xs64 = vals.map((v, i) => A.tensor(v, { shape: shapes[i], ...f64 }));
    const out = f(...xs64);
    const r = rng(seed ^ 0x5bd1);
    const W = A.tensor(
      Array.from({ length: out.size }, () => r() * 2 - 1),
      { shape: out.shape, ...f64 },
    );
    const L = (...ys: Tensor[]) => A.sum(A.mul(f(...ys), W.astype(ys[0].dtype)));
    const xs = xs64.map((x) => x.astype(dtype));
    const all = xs.map((_, i) => i);
    const analytic = (A.grad(L, { argnums: all })(...xs) as Tensor[]).map((g) => Array.from(g.toArray()));
    const h = 1e-6;
    xs64.forEach((x, i) => {
      const base = Array.from(x.toArray());
      const numeric = base.map((_, j) => {
        const at = (d: number) =>
          A.tidy(() => {
            const v = base.slice();
            v[j] += d;
            return L(...xs64.map((u, k) => (k === i ? A.tensor(v, { shape: u.shape, ...f64 }) : u))).item();
          });
        return (at(h) - at(-h)) / (2 * h);
      });
      expect(relErr(analytic[i], numeric), `input ${i} [${shapes[i]}] ${dtype}`).toBeLessThan(dtype === 'float64' ? 1e-6 : 2e-3);
    });
  });
}

// A fixed seed (PROP_SEED to explore others), as junk-args.test.ts: with a fresh seed every run, one
// CI run in many drew a case whose central difference loses digits to cancellation (Σ of a few
// weights near 0: relative error 1.09e-6 against the 1e-6 bound) and failed on unchanged code.
const SEED = Number(process.env.PROP_SEED ?? 1);
const RUNS = { numRuns: 12, seed: SEED };
const UNARY: [string, (x: Tensor) => Tensor, boolean][] = [
  ['neg', A.neg, false],
  ['exp', A.exp, false],
  ['log', A.log, true],
  ['sqrt', A.sqrt, true],
  ['abs', A.abs, false],
  ['square', A.square, false],
  ['sin', A.sin, false],
  ['cos', A.cos, false],
  ['tanh', A.tanh, false],
  ['sigmoid', A.sigmoid, false],
  ['relu', A.relu, false],
  ['softplus', A.softplus, false],
  ['leakyRelu', (x) => A.leakyRelu(x, 0.1), false],
  ['clamp', (x) => A.clamp(x, -1.1, 1.3), false],
  ['gelu', A.gelu, false],
];

describe('first order, property-based (fast-check)', () => {
  it.each(UNARY)('%s over random shapes and dtypes', (_n, f, positive) => {
    fc.assert(
      fc.property(shapeArb(), dtypeArb, seedArb, (shape, dt, seed) => {
        const vals = draw(seed, sizeOf(shape), 0.2, 2, positive).map((v) =>
          Math.abs(Math.abs(v) - 1.1) < 0.05 || Math.abs(v - 1.3) < 0.05 ? v + 0.1 : v,
        );
        firstOrder(f, [vals], [shape], dt, seed);
      }),
      RUNS,
    );
  });

  const BINARY: [string, (a: Tensor, b: Tensor) => Tensor][] = [
    ['add', A.add],
    ['sub', A.sub],
    ['mul', A.mul],
    ['div', A.div],
    ['pow', A.pow],
    ['maximum', A.maximum],
    ['minimum', A.minimum],
  ];
  it.each(BINARY)('%s over random broadcast pairs and dtypes', (name, f) => {
    const pair = shapeArb(1, 4).chain((full) =>
      fc
        .tuple(
          fc.tuple(fc.integer({ min: 0, max: full.length }), fc.array(fc.boolean(), { minLength: full.length, maxLength: full.length })),
          fc.tuple(fc.integer({ min: 0, max: full.length }), fc.array(fc.boolean(), { minLength: full.length, maxLength: full.length })),
        )
        .map(
          ([[ka, ma], [kb, mb]]) =>
            [full.map((d, i) => (ma[i] ? 1 : d)).slice(ka), full.map((d, i) => (mb[i] ? 1 : d)).slice(kb)] as [number[], number[]],
        ),
    );
    fc.assert(
      fc.property(pair, dtypeArb, seedArb, ([sa, sb], dt, seed) => {
        const cmp = name === 'maximum' || name === 'minimum';
        const a = cmp ? spread(seed, sizeOf(sa)) : draw(seed, sizeOf(sa), 0.3, 2, name === 'pow');
        const b = cmp ? spread(seed + 1, sizeOf(sb), 0.11) : draw(seed + 1, sizeOf(sb), 0.3, 1.5, false);
        if (cmp && a.some((u) => b.some((v) => Math.abs(u - v) < 0.02))) return; // a tie: no derivative
        firstOrder(f, [a, b], [sa, sb], dt, seed);
      }),
      RUNS,
    );
  });

  const axesArb = shapeArb(1, 4).chain((shape) => fc.tuple(fc.constant(shape), fc.subarray(shape.map((_, i) => i)), fc.boolean()));
  it.each([
    ['sum', (x: Tensor, ax: number[], k: boolean) => A.sum(x, ax, k)],
    ['mean', (x: Tensor, ax: number[], k: boolean) => A.mean(x, ax, k)],
    ['max', (x: Tensor, ax: number[], k: boolean) => A.max(x, ax, k)],
    ['logsumexp', (x: Tensor, ax: number[], k: boolean) => A.logsumexp(x, ax, k)],
  ] as const)('%s over random axes, keepdims and dtypes', (_n, f) => {
    fc.assert(
      fc.property(axesArb, dtypeArb, seedArb, ([shape, axes, keep], dt, seed) => {
        firstOrder((x) => f(x, axes, keep), [spread(seed, sizeOf(shape))], [shape], dt, seed);
      }),
      RUNS,
    );
  });

  it('shape ops (reshape, transpose, broadcastTo, slice, concat, gather) over random shapes', () => {
    fc.assert(
      fc.property(shapeArb(1, 4), dtypeArb, seedArb, (shape, dt, seed) => {
        const r = rng(seed),
          n = sizeOf(shape),
          rank = shape.length;
        const perm = shape.map((_, i) => i).sort(() => r() - 0.5);
        const begin = shape.map((d) => Math.floor(r() * d)),
          size = shape.map((d, i) => 1 + Math.floor(r() * (d - begin[i])));
        const axis = Math.floor(r() * rank),
          idx = Array.from({ length: 3 }, () => Math.floor(r() * shape[axis]));
        const f = (x: Tensor) =>
          A.concat([
            A.reshape(A.transpose(x, perm), [n]),
            A.reshape(A.slice(x, begin, size), [-1]),
            A.reshape(A.broadcastTo(x, [2, ...shape]), [-1]),
            A.reshape(A.gather(x, idx, axis), [-1]),
          ]);
        firstOrder((x) => A.square(f(x)), [draw(seed, n)], [shape], dt, seed);
      }),
      RUNS,
    );
  });

  it('matmul over random batch broadcasts, softmax / logSoftmax over a random axis', () => {
    fc.assert(
      fc.property(
        fc.tuple(shapeArb(0, 2, 3), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 })),
        dtypeArb,
        seedArb,
        ([batch, m, k, nn], dt, seed) => {
          const sa = [...batch, m, k],
            sb = [k, nn];
          firstOrder(A.matmul, [draw(seed, sizeOf(sa)), draw(seed + 1, sizeOf(sb))], [sa, sb], dt, seed);
          const axis = Math.floor(rng(seed)() * sa.length);
          firstOrder((x) => A.mul(A.softmax(x, axis), A.logSoftmax(x, axis)), [draw(seed, sizeOf(sa), 0.1, 1)], [sa], dt, seed);
        },
      ),
      RUNS,
    );
  });

  it('crossEntropy, layerNorm, dense, conv2d and pools over random sizes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 3, max: 5 }), dtypeArb, seedArb, (n, c, dt, seed) => {
        const labels = Array.from({ length: n }, (_, i) => (i * 7 + seed) % c);
        firstOrder((x) => A.crossEntropy(x, labels), [draw(seed, n * c, 0.1, 1)], [[n, c]], dt, seed);
        // c ≥ 3: a row of two normalises to ±1 whatever x is, a gradient that is all rounding
        firstOrder(
          (x, w, b) => A.layerNorm(x, w, b),
          [draw(seed, n * c), draw(seed + 1, c), draw(seed + 2, c)],
          [[n, c], [c], [c]],
          dt,
          seed,
        );
        const lin = (x: Tensor, w: Tensor, b: Tensor) => A.tanh(A.add(A.matmul(x, A.transpose(w)), b));
        firstOrder(
          lin,
          [draw(seed, n * c, 0.1, 1), draw(seed + 1, 3 * c, 0.1, 1), draw(seed + 2, 3, 0.1, 1)],
          [[n, c], [3, c], [3]],
          dt,
          seed,
        );
        const hw = 2 + (seed % 3);
        firstOrder(
          (x, w) => A.conv2d(x, w, { padding: 1 }),
          [draw(seed, n * 2 * hw * hw), draw(seed + 1, 3 * 2 * 9)],
          [
            [n, 2, hw, hw],
            [3, 2, 3, 3],
          ],
          dt,
          seed,
        );
        firstOrder((x) => A.add(A.maxPool2d(x, 2), A.avgPool2d(x, 2)), [spread(seed, n * 16)], [[n, 1, 4, 4]], dt, seed);
      }),
      { numRuns: 6, seed: SEED },
    );
  });
});
