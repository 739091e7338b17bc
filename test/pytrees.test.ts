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

  // f(p) = Σ w² · b + Σ w·c over p = { w: [2], b: [] } (c captured): closed-form Jacobians and Hessians.
  const c = () => t([1, -1]);
  const fTree = (p: { w: Tensor; b: Tensor }) => A.add(A.mul(A.sum(A.square(p.w)), p.b), A.sum(A.mul(p.w, c())));
  const point = () => ({ w: t([1, 2]), b: t(3) });

  it('jacrev and jacfwd of a function of a record give a record of Jacobians, [...out, ...leaf]', () => {
    A.tidy(() => {
      for (const jac of [A.jacrev, A.jacfwd]) {
        const J = jac(fTree)(point()) as unknown as { w: Tensor; b: Tensor };
        expect(Object.keys(J)).toEqual(['w', 'b']);
        expect(J.w.shape).toEqual([2]);
        expect(arr(J.w)).toEqual([2 * 1 * 3 + 1, 2 * 2 * 3 - 1]); // 2 w b + c
        expect(J.b.shape).toEqual([]);
        expect(arr(J.b)).toEqual([5]); // Σ w²
        // Vector output, nested-array argument: [3] out, leaves [2] and [] → [3, 2] and [3].
        const g = (q: [Tensor, Tensor]) => A.mul(A.concat([q[0], A.reshape(q[1], [1])], 0), q[1]);
        const K = jac(g)([t([1, 2]), t(3)]) as unknown as [Tensor, Tensor];
        expect(K[0].shape).toEqual([3, 2]);
        expect(arr(K[0])).toEqual([3, 0, 0, 3, 0, 0]);
        expect(arr(K[1])).toEqual([1, 2, 6]);
      }
    });
  });

  it('hessian of a function of a record is a record of records of blocks; hvp of a record mirrors it', () => {
    A.tidy(() => {
      const H = A.hessian(fTree)(point()) as unknown as { w: { w: Tensor; b: Tensor }; b: { w: Tensor; b: Tensor } };
      expect(H.w.w.shape).toEqual([2, 2]);
      expect(arr(H.w.w)).toEqual([6, 0, 0, 6]); // 2b·I
      expect(arr(H.w.b)).toEqual([2, 4]); // 2w
      expect(arr(H.b.w)).toEqual([2, 4]);
      expect(arr(H.b.b)).toEqual([0]);
      const hv = A.hvp(fTree, point(), { w: t([1, 0]), b: t(1) }) as unknown as { w: Tensor; b: Tensor };
      expect(arr(hv.w)).toEqual([6 + 2, 4]); // H·v: [6·1 + 2·1, 0 + 4·1]
      expect(arr(hv.b)).toEqual([2]); // 2w·[1,0] + 0
      expect(() => A.hvp(fTree, point(), { w: t([1, 0]) } as never)).toThrow(/v has 1 tensors, x has 2/);
      expect(() => A.hvp(fTree, point(), { w: t([1, 0, 0]), b: t(1) })).toThrow(A.ShapeError);
    });
  });

  it('vjp with a trailing { hasAux: true } gives [out, vjpFn, aux]; a record primal is not taken for options', () => {
    A.tidy(() => {
      const f = (x: Tensor): [Tensor, { sq: Tensor }] => {
        const sq = A.square(x);
        return [A.sum(A.mul(sq, x)), { sq }];
      };
      const r = A.vjp(f, t([1, 2]), { hasAux: true });
      expect(r.length).toBe(3);
      const [out, back, aux] = r as [Tensor, A.VjpFn, { sq: Tensor }];
      expect(arr(out)).toEqual([9]);
      expect(arr(aux.sq)).toEqual([1, 4]);
      expect(arr(back(t(1))[0])).toEqual([3, 12]);
      back.release();
      expect(A.vjp((x: Tensor) => A.sum(x), t([1]), { hasAux: false }).length).toBe(2);
      expect(() => A.vjp((x: Tensor) => A.sum(x), t([1]), { hasAux: true })).toThrow(/must return \[value, aux\]/);
      expect(() => A.vjp((x: Tensor) => A.sum(x), t([1]), { hasAux: true, extra: 1 } as never)).toThrow(/unknown option "extra"/);
      // A record of tensors, even with a key named hasAux, is a primal.
      const [y2, back2] = A.vjp((p: { hasAux: Tensor }) => A.sum(A.square(p.hasAux)), { hasAux: t([3]) });
      expect(arr(y2)).toEqual([9]);
      expect(arr((back2(t(1))[0] as unknown as { hasAux: Tensor }).hasAux)).toEqual([6]);
      back2.release();
    });
  });
});

describe('jvp with pytree primals', () => {
  it('takes nested objects and arrays with tangents of the same structure, as JAX; a mismatch names both counts', () => {
    const a = A.tensor([0.5, -1], { dtype: 'float64' }),
      b = A.tensor([2, 3], { dtype: 'float64' }),
      c = A.tensor(0.25, { dtype: 'float64' });
    const f = (p: { a: Tensor; bc: Tensor[] }) => A.sum(A.mul(A.sin(p.a), A.mul(p.bc[0], p.bc[1])));
    const ta = A.tensor([1, 0], { dtype: 'float64' }),
      tb = A.tensor([0, 1], { dtype: 'float64' }),
      tc = A.tensor(2, { dtype: 'float64' });
    const [y, t] = A.jvp(f, [{ a, bc: [b, c] }], [{ a: ta, bc: [tb, tc] }]);
    // f = c·Σ sin(a)·b; df = c·Σ cos(a)·b·da + c·Σ sin(a)·db + dc·Σ sin(a)·b
    const sa = [Math.sin(0.5), Math.sin(-1)],
      ca = [Math.cos(0.5), Math.cos(-1)];
    expect(y.item()).toBeCloseTo(0.25 * (sa[0] * 2 + sa[1] * 3), 14);
    expect(t.item()).toBeCloseTo(0.25 * ca[0] * 2 + 0.25 * sa[1] + 2 * (sa[0] * 2 + sa[1] * 3), 14);
    expect(() => A.jvp(f, [{ a, bc: [b, c] }], [{ a: ta, bc: [tb] }])).toThrow(/jvp: the tangents hold 2 tensors, the primals 3/);
  });
});

describe('grad of an int32 leaf', () => {
  it('names the transform, the argument and the leaf (it said "requiresGrad: an int32 tensor [1]")', () => {
    const p = { w: A.tensor([1, 2]), i: A.tensor([1], { dtype: 'int32' }) };
    expect(() => A.grad((q: typeof p) => A.sum(A.gather(q.w, q.i)))(p)).toThrow(
      /grad: argument 0 holds an int32 tensor \[1\] \(leaf 1 of its tree\), which cannot be differentiated/,
    );
    expect(() => A.valueAndGrad((x: Tensor) => A.sum(x))(A.tensor([1], { dtype: 'int32' }))).toThrow(
      /valueAndGrad: argument 0 holds an int32 tensor \[1\],/,
    );
    // outside argnums it is fine
    const g = A.grad((w: Tensor, i: Tensor) => A.sum(A.gather(w, i)))(p.w, p.i);
    expect(arr(g)).toEqual([0, 1]);
  });
});
