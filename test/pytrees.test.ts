// Pytree arguments (nested arrays and plain objects of tensors), hasAux, argnums over trees,
// vjp over trees, and functionalCall: the gradient with respect to a model's parameters in one
// line, equal to what backward() writes into .grad.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

await A.init();
const t = (v: number | number[] | number[][]) => A.tensor(v, f64);

describe('pytrees', () => {
  it('a record argument: the gradient is a record with the same keys', () => {
    A.tidy(() => {
      const p = { w: t([1, 2]), b: t(0.5) };
      const g = A.grad((q: { w: Tensor; b: Tensor }) => A.sum(A.add(A.mul(q.w, q.w), q.b)))(p) as { w: Tensor; b: Tensor };
      expect(Object.keys(g)).toEqual(['w', 'b']);
      expect(arr(g.w)).toEqual([2, 4]);
      expect(arr(g.b)).toEqual([2]);
    });
  });

  it('nested arrays and records, argnums over several trees, unused leaves get zeros', () => {
    A.tidy(() => {
      const a = [t([1, 2]), { u: t(3), v: [t(4)] }];
      const c = t(10),
        unused = t([7, 7, 7]);
      const f = (tree: [Tensor, { u: Tensor; v: Tensor[] }], k: Tensor, z: { z: Tensor }) =>
        A.add(A.mul(A.sum(A.mul(tree[0], tree[1].u)), tree[1].v[0]), A.mul(k, 0 * z.z.size + 1));
      const [g0, g2] = A.grad(f, { argnums: [0, 2] })(a, c, { z: unused }) as [any, any];
      expect(arr(g0[0])).toEqual([12, 12]);
      expect(arr(g0[1].u)).toEqual([12]);
      expect(arr(g0[1].v[0])).toEqual([9]);
      expect(arr(g2.z)).toEqual([0, 0, 0]);
    });
  });

  it('junk inside a tree is an ArgumentError naming where it sits', () => {
    A.tidy(() => {
      const f = (q: any) => A.sum(q.w);
      expect(() => A.grad(f)({ w: t([1]), n: 3 })).toThrow(/argument 0\.n is number/);
      expect(() => A.grad(f)({ w: t([1]), s: 'x' })).toThrow(A.ArgumentError);
      expect(() => A.grad(f, { argnums: [0, 0] })({ w: t([1]) })).toThrow(/repeats/);
      expect(() => A.grad(f, { hasAux: 1 as never })).toThrow(A.ArgumentError);
      expect(() => A.grad(f, { argnum: 0 } as never)).toThrow(/unknown option "argnum"/);
    });
  });

  it('hasAux: grad gives [grads, aux], valueAndGrad [[value, aux], grads]', () => {
    A.tidy(() => {
      const f = (x: Tensor): [Tensor, { sq: Tensor; note: string }] => {
        const sq = A.square(x);
        return [A.sum(sq), { sq, note: 'kept' }];
      };
      const [g, aux] = A.grad(f, { hasAux: true })(t([1, -2])) as [Tensor, { sq: Tensor; note: string }];
      expect(arr(g)).toEqual([2, -4]);
      expect(arr(aux.sq)).toEqual([1, 4]);
      expect(aux.note).toBe('kept');
      const [[value, aux2], g2] = A.valueAndGrad(f, { hasAux: true })(t([3])) as [[Tensor, { sq: Tensor }], Tensor];
      expect(value.item()).toBe(9);
      expect(arr(aux2.sq)).toEqual([9]);
      expect(arr(g2)).toEqual([6]);
      expect(() => A.grad((x: Tensor) => A.sum(x), { hasAux: true })(t([1]))).toThrow(/\[value, aux\]/);
    });
  });

  it('vjp over a tree argument returns a tree cotangent', () => {
    A.tidy(() => {
      const [y, back] = A.vjp((p: { a: Tensor; b: Tensor }) => A.mul(p.a, p.b), { a: t([1, 2]), b: t([3, 4]) });
      expect(arr(y)).toEqual([3, 8]);
      const [ct] = back(t([1, 1])) as unknown as [{ a: Tensor; b: Tensor }];
      expect(arr(ct.a)).toEqual([3, 4]);
      expect(arr(ct.b)).toEqual([1, 2]);
      back.release();
    });
  });
});

describe('functionalCall', () => {
  const model = () =>
    new A.nn.Sequential(
      new A.nn.Linear(4, 5, { seed: 1, dtype: 'float64' }),
      new A.nn.Tanh(),
      new A.nn.Linear(5, 3, { seed: 2, dtype: 'float64' }),
    );
  const x = () =>
    A.tensor(
      Array.from({ length: 8 }, (_, i) => Math.sin(i + 1)),
      { shape: [2, 4], ...f64 },
    );

  it('grad over the parameter record equals what backward() writes into .grad, and touches no .grad', () => {
    A.tidy(() => {
      const m = model(),
        xs = x();
      const loss = (out: Tensor) => A.crossEntropy(out, [2, 0]);
      const g = A.grad((p: Record<string, Tensor>) => loss(A.functionalCall(m, p, xs)))(m.stateDict()) as Record<string, Tensor>;
      expect(Object.keys(g)).toEqual(['0.weight', '0.bias', '2.weight', '2.bias']);
      for (const p of m.parameters()) expect(p.grad).toBe(null);
      loss(m.forward(xs)).backward();
      for (const [n, p] of m.namedParameters()) close(arr(g[n]), arr(p.grad!), 1e-15);
      m.zeroGrad();
      m.dispose();
    });
  });

  it("replaces for one call only (restored after a throw too), partial records keep the module's own", () => {
    A.tidy(() => {
      const m = model(),
        xs = x();
      const W0 = m.parameters()[0];
      const zeros = { '2.weight': A.zeros([3, 5], f64), '2.bias': t([1, 2, 3]) };
      expect(arr(A.functionalCall(m, zeros, xs))).toEqual([1, 2, 3, 1, 2, 3]);
      expect(m.parameters()[0]).toBe(W0);
      expect(arr(m.forward(xs))).not.toEqual([1, 2, 3, 1, 2, 3]);
      const before = m.parameters();
      expect(() => A.functionalCall(m, { '0.weight': A.zeros([5, 4], f64) }, t([1, 2]))).toThrow(A.ShapeError);
      expect(m.parameters()).toEqual(before);
      expect(() => A.functionalCall(m, { nope: t(1) }, xs)).toThrow(/not a parameter/);
      expect(() => A.functionalCall(m, { '2.bias': t([1, 2]) }, xs)).toThrow(A.ShapeError);
      expect(() => A.functionalCall(m, null as never, xs)).toThrow(A.ArgumentError);
      m.dispose();
    });
  });

  it('second order through functionalCall: Hessian-vector product in parameter space by jvp of grad', () => {
    A.tidy(() => {
      const m = model(),
        xs = x();
      const L = (p: Record<string, Tensor>) => A.sum(A.square(A.functionalCall(m, p, xs)));
      const b = (w: Tensor) => L({ ...m.stateDict(), '2.bias': w });
      const w0 = m.stateDict()['2.bias'];
      const hv = A.hvp(b, w0, t([1, 0, 0]));
      close(arr(hv), [4, 0, 0], 1e-14); // ∂²/∂b² Σ(z + b)² = 2 per row, 2 rows
      m.dispose();
    });
  });
});
