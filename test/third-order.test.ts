// Second and third derivatives by every mix of forward and reverse mode, for the ops whose VJP
// reads a saved input (sin, cos, erf, pow, div, gelu): jacrev(jacfwd(f)), jacfwd(jacrev(f)),
// jacrev(hessian(g)), jacfwd(hessian(g)) and grad(sum(hessian(g))), against closed forms and
// float64 central differences. These used to throw (or read a batched tensor) because a saved
// input kept the tangent of a jvp that had returned, and an outer sweep carried it along.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { close, f64 } from './helpers.js';

await A.init();
type F = (x: Tensor) => Tensor;
const t = (v: number[] | number[][]) => A.tensor(v, f64);
const X = [0.3, -0.5, 1.1];
const total =
  (f: F): F =>
  (x) =>
    A.sum(f(x));

/** Row r of a [2, n] tensor, as [n]. */
const row = (z: Tensor, r: number): Tensor => A.reshape(A.slice(z, [r, 0], [1, z.shape[1]]), [z.shape[1]]);

/** Central differences (step 1e-5) of h at z0: [...h.shape, ...z0.shape], flat. */
function numJac(h: F, z0: Tensor): number[] {
  const base = Array.from(z0.toArray());
  const eps = 1e-5;
  const at = (k: number, d: number) =>
    A.tidy(() => {
      const v = base.slice();
      v[k] += d;
      return Array.from(h(A.reshape(A.tensor(v, f64), z0.shape)).toArray());
    });
  const cols = base.map((_, k) => {
    const p = at(k, eps),
      m = at(k, -eps);
    return p.map((pv, i) => (pv - m[i]) / (2 * eps));
  });
  return cols[0].flatMap((_, i) => cols.map((c) => c[i]));
}

/** The diagonal tensor of rank r over n indices with d(x_i) at (i, …, i), flat. */
function diag(r: number, xs: readonly number[], d: (v: number) => number): number[] {
  const n = xs.length;
  const out = new Array<number>(n ** r).fill(0);
  const step = (n ** r - 1) / (n - 1);
  xs.forEach((v, i) => (out[i * step] = d(v)));
  return out;
}

const phi = (v: number) => Math.exp((-v * v) / 2) / Math.sqrt(2 * Math.PI);
const erf1 = (v: number) => (2 / Math.sqrt(Math.PI)) * Math.exp(-v * v);

// Unary ops: f, f'' and f''' in closed form.
const unaryRows: [string, F, (v: number) => number, (v: number) => number][] = [
  ['sin', A.sin, (v) => -Math.sin(v), (v) => -Math.cos(v)],
  ['cos', A.cos, (v) => -Math.cos(v), (v) => Math.sin(v)],
  ['erf', A.erf, (v) => -2 * v * erf1(v), (v) => (4 * v * v - 2) * erf1(v)],
  ['pow(x, 3)', (x) => A.pow(x, 3), (v) => 6 * v, () => 6],
  ['gelu exact', (x) => A.gelu(x, { approximate: 'none' }), (v) => phi(v) * (2 - v * v), (v) => phi(v) * (v ** 3 - 4 * v)],
];

describe('second and third derivatives of unary ops, every mix, against closed forms', () => {
  for (const [name, f, d2, d3] of unaryRows) {
    it(`${name}: jacrev∘jacfwd, jacfwd∘jacrev, jacrev∘hessian, jacfwd∘hessian, grad∘sum∘hessian`, () => {
      A.tidy(() => {
        const x = t(X);
        const want2 = diag(3, X, d2),
          want3 = diag(3, X, d3);
        close(A.jacrev(A.jacfwd(f))(x).toArray(), want2, 1e-12);
        close(A.jacfwd(A.jacrev(f))(x).toArray(), want2, 1e-12);
        close(A.jacrev(A.jacrev(f))(x).toArray(), want2, 1e-12);
        close(A.jacfwd(A.jacfwd(f))(x).toArray(), want2, 1e-12);
        const H = A.hessian(total(f));
        close(A.jacrev(H)(x).toArray(), want3, 1e-12);
        close(A.jacfwd(H)(x).toArray(), want3, 1e-12);
        close((A.grad((z: Tensor) => A.sum(H(z))) as F)(x).toArray(), X.map(d3), 1e-12);
      });
    });
  }

  it('third derivatives of the vector functions sin and cos: rank-4 diagonals -cos and sin by three mixes', () => {
    A.tidy(() => {
      const x = t(X);
      for (const [f, d3] of [
        [A.sin, (v: number) => -Math.cos(v)],
        [A.cos, (v: number) => Math.sin(v)],
      ] as [F, (v: number) => number][]) {
        const want = diag(4, X, d3);
        close(A.jacrev(A.jacfwd(A.jacfwd(f)))(x).toArray(), want, 1e-12);
        close(A.jacfwd(A.jacrev(A.jacfwd(f)))(x).toArray(), want, 1e-12);
        close(A.jacrev(A.jacrev(A.jacfwd(f)))(x).toArray(), want, 1e-12);
        close(A.jacrev(A.jacfwd(A.jacrev(f)))(x).toArray(), want, 1e-12);
      }
    });
  });

  it('the fourth derivative of Σ sin by grad of the sum of jacrev∘hessian is Σ_jk ∂⁴ = sin', () => {
    A.tidy(() => {
      const g = A.grad((z: Tensor) => A.sum(A.jacrev(A.hessian(total(A.sin)))(z))) as F;
      close(g(t(X)).toArray(), X.map(Math.sin), 1e-12);
    });
  });
});

// Ops differentiated in every argument, and gelu's tanh form: against central differences of a
// lower order computed by reverse mode alone.
const z0: number[][] = [
  [0.7, 1.3, 2.1],
  [1.5, -0.4, 2.2],
];
const diffRows: [string, F, number[] | number[][]][] = [
  ['pow(a, b) in both', (z) => A.pow(row(z, 0), row(z, 1)), z0],
  ['div(a, b) in both', (z) => A.div(row(z, 0), row(z, 1)), z0],
  ['pow(x, x)', (x) => A.pow(x, x), z0[0]],
  ['div(1, x) and div(x, 2)', (x) => A.add(A.div(1, x), A.div(x, 2)), X],
  ['gelu tanh', (x) => A.gelu(x, { approximate: 'tanh' }), X],
  ['gelu exact', (x) => A.gelu(x, { approximate: 'none' }), X],
];

describe('binary ops in both arguments and gelu tanh, every mix, against central differences', () => {
  for (const [name, f, z] of diffRows) {
    it(`${name}: second derivatives by four mixes, third by three`, () => {
      A.tidy(() => {
        const x = t(z as number[][]);
        const want2 = numJac(A.jacrev(f), x);
        for (const J2 of [A.jacrev(A.jacfwd(f)), A.jacfwd(A.jacrev(f)), A.jacrev(A.jacrev(f)), A.jacfwd(A.jacfwd(f))]) {
          close(J2(x).toArray(), want2, 1e-8);
        }
        const g = total(f);
        const want3 = numJac(A.jacrev(A.grad(g) as F), x);
        const H = A.hessian(g);
        close(A.jacrev(H)(x).toArray(), want3, 1e-8);
        close(A.jacfwd(H)(x).toArray(), want3, 1e-8);
        const n = x.size;
        const sums = Array.from({ length: n }, (_, k) => want3.reduce((s, v, i) => (i % n === k ? s + v : s), 0));
        close((A.grad((y: Tensor) => A.sum(H(y))) as F)(x).toArray(), sums, 1e-8);
        const r = A.gradcheck((y: Tensor) => A.sum(H(y)), [x], { eps: 1e-5, rtol: 1e-7 });
        expect(r.ok, `${name}: max relative error ${r.maxRelError}`).toBe(true);
      });
    });
  }
});

describe('a jvp leaves no tangent on what it saved', () => {
  it('the repro: jacrev∘jacfwd(sin), jacrev∘hessian and grad∘sum∘hessian, then memory back to its baseline', () => {
    const x = t(X);
    const before = A.memory();
    A.tidy(() => {
      close(
        A.jacrev(A.jacfwd(A.sin))(x).toArray(),
        diag(3, X, (v) => -Math.sin(v)),
        1e-12,
      );
      close(
        A.jacrev(A.hessian(total(A.sin)))(x).toArray(),
        diag(3, X, (v) => -Math.cos(v)),
        1e-12,
      );
      close(
        (A.grad((z: Tensor) => A.sum(A.hessian(total(A.sin))(z))) as F)(x).toArray(),
        X.map((v) => -Math.cos(v)),
        1e-12,
      );
    });
    const after = A.memory();
    expect([after.tensors, after.bytesInUse]).toEqual([before.tensors, before.bytesInUse]);
    x.dispose();
  });

  it('grad of a jvp along a mapped tangent sees only its own perturbation: d/dx Σ sin′(x)·v = −sin(x)·Σv', () => {
    A.tidy(() => {
      const x = t(X);
      // jvp inside vmap (a batched tangent), then an outer reverse sweep through the VJP of sin
      const g = A.grad((y: Tensor) =>
        A.sum(
          A.vmap((v: Tensor) => A.jvp((z: Tensor) => A.sin(z), [y], [v])[1], { inAxes: 0 })(
            t([
              [1, 0, 0],
              [0, 1, 0],
              [0, 0, 1],
            ]),
          ),
        ),
      ) as F;
      close(
        g(x).toArray(),
        X.map((v) => -Math.sin(v)),
        1e-12,
      );
    });
  });
});
