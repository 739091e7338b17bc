// Forward mode over the op spec table (jvp against central differences, and the jvp/vjp
// duality ⟨u, J v⟩ = ⟨Jᵀu, v⟩), then the Jacobian and Hessian transforms built on it.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { SPECS, values, tensors, relErr, rng } from './specs.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;
const H = 1e-6;

/** Random values in [-1, 1) of a shape, as a float64 tensor. */
function randomLike(shape: readonly number[], seed: number): Tensor {
  const r = rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return A.tensor(
    Array.from({ length: n }, () => 2 * r() - 1),
    { shape, ...f64 },
  );
}
const arr = (t: Tensor): number[] => Array.from(t.toArray());
const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => Array.from(a).reduce((s, v, i) => s + v * b[i], 0);

describe.each(SPECS.map((s) => [s.name, s] as const))('%s', (_name, spec) => {
  it('jvp matches central differences and the primal output', () => {
    A.tidy(() => {
      const vals = values(spec);
      const xs = tensors(vals, spec.shapes, 'float64');
      const vs = spec.shapes.map((s, i) => randomLike(s, 11 + i));
      const [y, t] = A.jvp(spec.f, xs, vs);
      expect(t.shape).toEqual(y.shape);
      expect(relErr(y.toArray(), spec.f(...xs).toArray())).toBe(0);
      const at = (h: number) => spec.f(...xs.map((x, i) => A.add(x, A.mul(vs[i], h))));
      const fd = A.div(A.sub(at(H), at(-H)), 2 * H);
      expect(relErr(t.toArray(), fd.toArray())).toBeLessThan(1e-7);
    });
  });

  it('duality: ⟨u, J v⟩ = ⟨Jᵀ u, v⟩', () => {
    A.tidy(() => {
      const xs = tensors(values(spec), spec.shapes, 'float64');
      const vs = spec.shapes.map((s, i) => randomLike(s, 21 + i));
      const [y, jv] = A.jvp(spec.f, xs, vs);
      const u = randomLike(y.shape, 31);
      const [, back] = A.vjp(spec.f, ...xs);
      const jtu = back(u);
      back.release();
      const lhs = dot(u.toArray(), jv.toArray());
      const rhs = jtu.reduce((s, g, i) => s + dot(g.toArray(), vs[i].toArray()), 0);
      expect(Math.abs(lhs - rhs) / Math.max(Math.abs(lhs), Math.abs(rhs))).toBeLessThan(1e-10);
    });
  });

  it('hvp (forward-over-reverse through its VJP rules) matches differences of the gradient', () => {
    A.tidy(() => {
      const [x0, ...rest] = tensors(values(spec), spec.shapes, 'float64');
      const w = randomLike(spec.f(x0, ...rest).shape, 41);
      const loss = (x: Tensor) => A.sum(A.mul(spec.f(x, ...rest), w));
      const v = randomLike(x0.shape, 51);
      const g = A.grad(loss) as (x: Tensor) => Tensor;
      const fd = A.div(A.sub(g(A.add(x0, A.mul(v, H))), g(A.sub(x0, A.mul(v, H)))), 2 * H);
      const hv = A.hvp(loss, x0, v).toArray();
      expect(relErr(hv, fd.toArray())).toBeLessThan(1e-6);
    });
  });
});

describe('jvp', () => {
  it('carries the tangent in one pass without recording a tape or touching the primals', () => {
    A.tidy(() => {
      const x = A.tensor([0.5, -1, 2], f64);
      const w = A.tensor([1, 2, 3], f64);
      const [y, t] = A.jvp((a: Tensor) => A.mul(A.sin(a), w), [x], [A.tensor([1, 0, -1], f64)]);
      expect(y.requiresGrad).toBe(false);
      expect(y.node).toBe(null);
      expect(y.tangent).toBe(null);
      expect(x.tangent).toBe(null);
      expect(arr(t)).toEqual([Math.cos(0.5) * 1, 0, -Math.cos(2) * 3]);
    });
  });

  it('records for tensors an outer tape owns: the tangent is differentiable by backward()', () => {
    A.tidy(() => {
      const x = A.tensor([0.5, -1, 2], f64);
      const w = A.tensor([1, 2, 3], { ...f64, requiresGrad: true });
      const [, t] = A.jvp((a: Tensor) => A.mul(A.sin(a), w), [x], [A.tensor([1, 0, -1], f64)]);
      expect(x.tangent).toBe(null);
      A.sum(t).backward(); // d/dw Σ cos(x)·v·w = cos(x)·v
      expect(arr(w.grad!)).toEqual([Math.cos(0.5), 0, -Math.cos(2)]);
    });
  });

  it('takes one tangent per primal (matmul in both arguments)', () => {
    A.tidy(() => {
      const a = A.tensor(
          [
            [1, 2],
            [3, 4],
          ],
          f64,
        ),
        b = A.tensor(
          [
            [0.5, -1],
            [2, 0],
          ],
          f64,
        );
      const ta = A.tensor(
          [
            [1, 0],
            [0, 0],
          ],
          f64,
        ),
        tb = A.tensor(
          [
            [0, 0],
            [0, 1],
          ],
          f64,
        );
      const [, t] = A.jvp(A.matmul, [a, b], [ta, tb]);
      // ta·b + a·tb
      expect(arr(t)).toEqual([0.5, -1 + 2, 0, 4]);
    });
  });

  it('gives a zero tangent for an output that does not depend on the primal', () => {
    A.tidy(() => {
      const c = A.tensor([1, 2], f64);
      const [y, t] = A.jvp(() => A.exp(c), [A.tensor([3], f64)], [A.tensor([1], f64)]);
      expect(arr(y)).toEqual([Math.exp(1), Math.exp(2)]);
      expect(arr(t)).toEqual([0, 0]);
    });
  });

  it('frees every temporary: memory returns to its baseline', () => {
    const x = A.tensor([0.1, 0.2, 0.3, 0.4], f64),
      v = A.tensor([1, 1, 1, 1], f64);
    const before = A.memory();
    A.tidy(() => {
      A.jvp((a: Tensor) => A.logsumexp(A.tanh(A.matmul(A.reshape(a, [2, 2]), A.reshape(a, [2, 2])))), [x], [v]);
      A.hvp((a: Tensor) => A.sum(A.mul(A.exp(a), a)), x, v);
    });
    const after = A.memory();
    expect([after.tensors, after.bytesInUse]).toEqual([before.tensors, before.bytesInUse]);
  });

  it('rejects bad tangents, naming the argument position', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2, 3], f64),
        y = A.tensor([[1, 2]], f64);
      const f = (a: Tensor, b: Tensor) => A.add(A.sum(a), A.sum(b));
      expect(() => A.jvp(f, [x, y], [x])).toThrow(/jvp: got 1 tangent\(s\) for 2 primal\(s\)/);
      expect(() => A.jvp(f, [x, y], [x, x])).toThrow(A.ShapeError);
      expect(() => A.jvp(f, [x, y], [x, x])).toThrow('jvp: tangent 1 has shape [3], expected the shape of primal 1 [1,2]');
      expect(() => A.jvp(f, [x, y], [A.tensor([1, 2, 3]), y])).toThrow(A.DtypeError);
      expect(() => A.jvp(f, [x, y], [A.tensor([1, 2, 3]), y])).toThrow(
        'jvp: tangent 0 is float32, expected the dtype of primal 0 (float64)',
      );
      expect(() => A.hvp((a: Tensor) => A.sum(a), x, A.tensor([1, 2], f64))).toThrow('hvp: v has shape [2], expected the shape of x [3]');
      expect(() =>
        A.jvp(
          A.customVjp(
            (a: Tensor) => A.exp(a),
            (g) => [g],
          ),
          [x],
          [x],
        ),
      ).toThrow(A.GradError);
      // The engine still works after every error.
      expect(arr(A.jvp(A.square, [x], [x])[1])).toEqual([2, 8, 18]);
    });
  });
});

describe('jacfwd and jacrev', () => {
  const W = () =>
    A.tensor(
      [
        [0.5, -1, 0.25],
        [2, 0.1, -0.3],
      ],
      f64,
    );
  const cases: [string, number[], (x: Tensor) => Tensor][] = [
    [
      'R³ → R²ˣ³ (outer product)',
      [3],
      (x) => A.mul(A.reshape(A.sin(x), [1, 3]), A.reshape(A.sum(x, undefined, true), [1, 1]).broadcastTo([2, 3])),
    ],
    ['R²ˣ³ → R² (rows through tanh)', [2, 3], (x) => A.sum(A.tanh(A.mul(x, W())), 1)],
    ['R³ → R (scalar)', [3], (x) => A.logsumexp(A.mul(x, x))],
    ['R³ → R² (matmul + softmax)', [3], (x) => A.softmax(A.matmul(W(), x))],
    ['R²ˣ³ → R²ˣ³ (layerNorm)', [2, 3], (x) => A.layerNorm(x)],
  ];

  it.each(cases)('agree on %s, with shape [...out, ...x]', (_n, shape, f) => {
    A.tidy(() => {
      const x = randomLike(shape, 5);
      const out = f(x).shape;
      const jf = A.jacfwd(f)(x),
        jr = A.jacrev(f)(x);
      expect(jf.shape).toEqual([...out, ...shape]);
      expect(jr.shape).toEqual([...out, ...shape]);
      expect(relErr(jf.toArray(), jr.toArray())).toBeLessThan(1e-13);
      // A column of the Jacobian is the JVP along a basis vector, checked by central differences.
      const e = A.tensor(
        Array.from({ length: x.size }, (_, i) => (i === 1 ? 1 : 0)),
        { shape, ...f64 },
      );
      const fd = A.div(A.sub(f(A.add(x, A.mul(e, H))), f(A.sub(x, A.mul(e, H)))), 2 * H).toArray();
      const col = Array.from({ length: fd.length }, (_, i) => jf.toArray()[i * x.size + 1]);
      expect(relErr(col, fd)).toBeLessThan(1e-7);
    });
  });

  it('of a linear map is its matrix', () => {
    A.tidy(() => {
      const jac = A.jacrev((x: Tensor) => A.matmul(W(), x))(A.tensor([1, 2, 3], f64));
      expect(arr(jac)).toEqual(arr(W()));
      expect(arr(A.jacfwd((x: Tensor) => A.matmul(W(), x))(A.tensor([1, 2, 3], f64)))).toEqual(arr(W()));
    });
  });
});

describe('hvp and hessian (forward-over-reverse)', () => {
  const f = (x: Tensor) => A.add(A.logsumexp(A.mul(A.tanh(x), 2)), A.sum(A.mul(A.square(x), A.sin(x))));

  it('hvp matches central differences of the gradient and jacfwd(grad f)·v', () => {
    A.tidy(() => {
      const x = randomLike([4], 1),
        v = randomLike([4], 2);
      const hv = A.hvp(f, x, v);
      const g = A.grad(f) as (x: Tensor) => Tensor;
      const fd = A.div(A.sub(g(A.add(x, A.mul(v, H))), g(A.sub(x, A.mul(v, H)))), 2 * H);
      expect(relErr(hv.toArray(), fd.toArray())).toBeLessThan(1e-7);
      const hess = A.jacfwd(g)(x);
      expect(relErr(hv.toArray(), A.matmul(hess, v).toArray())).toBeLessThan(1e-13);
      expect(relErr(A.hessian(f)(x).toArray(), hess.toArray())).toBe(0);
    });
  });

  it('hvp through a small MLP loss (matmul, layerNorm, crossEntropy)', () => {
    A.tidy(() => {
      const x = randomLike([2, 3], 3),
        w = randomLike([3, 4], 4);
      const loss = (w: Tensor) => A.crossEntropy(A.matmul(A.layerNorm(A.tanh(x)), w), [1, 3]);
      const v = randomLike([3, 4], 6);
      const g = A.grad(loss) as (w: Tensor) => Tensor;
      const fd = A.div(A.sub(g(A.add(w, A.mul(v, H))), g(A.sub(w, A.mul(v, H)))), 2 * H);
      expect(relErr(A.hvp(loss, w, v).toArray(), fd.toArray())).toBeLessThan(1e-7);
    });
  });

  it('the Hessian of a quadratic form xᵀAx is A + Aᵀ', () => {
    A.tidy(() => {
      const a = A.tensor(
        [
          [1, 2, 0],
          [-1, 3, 4],
          [0.5, 0, -2],
        ],
        f64,
      );
      const hess = A.hessian((x: Tensor) => A.matmul(x, A.matmul(a, x)))(A.tensor([0.3, -0.2, 0.9], f64));
      expect(hess.shape).toEqual([3, 3]);
      expect(arr(hess)).toEqual(arr(A.add(a, A.transpose(a))));
    });
  });

  it('the Hessian has the shape [...x, ...x] and is symmetric', () => {
    A.tidy(() => {
      const hess = A.hessian((x: Tensor) => A.sum(A.mul(A.softmax(x), A.tanh(x))))(randomLike([2, 2], 9));
      expect(hess.shape).toEqual([2, 2, 2, 2]);
      const h = hess.toArray(),
        ht = A.transpose(A.reshape(hess, [4, 4])).toArray();
      expect(relErr(h, ht)).toBeLessThan(1e-14);
    });
  });

  it('rejects a non-scalar f for grad, hvp and hessian', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2], f64);
      expect(() => A.grad(A.exp)(x)).toThrow('grad: the function must return a scalar, got shape [2]');
      expect(() => A.hvp(A.exp, x, x)).toThrow(/hvp: f must return a scalar, got shape \[2\]/);
      expect(() => A.hessian(A.exp)(x)).toThrow(A.GradError);
      expect(arr(A.hvp((a: Tensor) => A.sum(A.mul(A.square(a), a)), x, x))).toEqual([6, 24]);
    });
  });
});
