// customVjp frees what its forward made on the way (as every other op and transform does): a
// training loop outside tidy() must not leave the user's intermediates to the garbage collector.
// And it takes int32 arguments (indices, labels), which take no gradient.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;

describe('customVjp memory', () => {
  it("the forward's intermediates are freed when the call returns; the output alone stays", () => {
    const x = A.keep(A.tensor([1, 2, 3], f64));
    const cube = A.customVjp(
      (a: Tensor) => A.mul(A.square(a), a),
      (g: Tensor, [a]: readonly Tensor[]) => [A.mul(g, A.mul(A.square(a), 3))],
    );
    const m0 = A.memory().tensors;
    const y = cube(x);
    expect(Array.from(y.toArray())).toEqual([1, 8, 27]);
    expect(A.memory().tensors - m0).toBe(1);
    y.dispose();
    expect(A.memory().tensors).toBe(m0);
    const g = A.grad((v: Tensor) => A.sum(cube(v)))(x) as Tensor;
    expect(Array.from(g.toArray())).toEqual([3, 12, 27]);
    g.dispose();
    expect(A.memory().tensors).toBe(m0);
  });

  it('a forward that returns its input or a captured tensor keeps it alive', () => {
    const x = A.keep(A.tensor([1, 2], f64));
    const c = A.keep(A.tensor([5, 6], f64));
    const id = A.customVjp(
      (a: Tensor) => a,
      (g: Tensor) => [g],
    );
    const konst = A.customVjp(
      (_a: Tensor) => c,
      () => [null],
    );
    const y = id(x),
      z = konst(x);
    y.dispose();
    z.dispose();
    expect(Array.from(x.toArray())).toEqual([1, 2]);
    expect(Array.from(c.toArray())).toEqual([5, 6]);
  });
});

describe('customVjp residuals read through the closure', () => {
  it("backward may read the forward's intermediates (its only way to keep residuals); they are freed with the node", () => {
    const x = A.keep(A.tensor([0, 1, 2], f64));
    let e: Tensor | null = null;
    // d/dx 2·exp(x) = 2·exp(x): backward reuses forward's exp instead of recomputing it.
    const twoExp = A.customVjp(
      (a: Tensor) => {
        e = A.exp(a);
        return A.mul(e, 2);
      },
      (g: Tensor) => [A.mul(A.mul(g, e!), 2)],
    );
    const want = Array.from(A.tidy(() => A.mul(A.exp(x), 2)).toArray());
    const m0 = A.memory().tensors;
    const g = A.grad((v: Tensor) => A.sum(twoExp(v)))(x) as Tensor;
    expect(Array.from(g.toArray())).toEqual(want);
    g.dispose();
    expect(A.memory().tensors).toBe(m0);
    // define-by-run, outside any tidy: alive until backward has run, then freed with the node
    const w = A.tensor([0, 1, 2], { dtype: 'float64', requiresGrad: true });
    const loss = A.sum(twoExp(w));
    const kept = e!;
    expect(kept.disposed).toBe(false);
    loss.backward();
    expect(Array.from(w.grad!.toArray())).toEqual(want);
    expect(kept.disposed).toBe(true); // the graph is released after backward, and the residual with it
    loss.dispose();
    w.dispose();
    // inside a tidy
    const v = A.keep(A.tensor([0, 1, 2], { dtype: 'float64', requiresGrad: true }));
    A.tidy(() => A.sum(twoExp(v)).backward());
    expect(Array.from(v.grad!.toArray())).toEqual(want);
    v.dispose();
    // not recorded: nothing can read them, so they go at once
    const m1 = A.memory().tensors; // the define-by-run passes above left their temporaries to the GC
    const y = twoExp(x);
    expect(A.memory().tensors - m1).toBe(1);
    y.dispose();
    expect(A.memory().tensors).toBe(m1);
  });
});

describe('customVjp with int32 arguments', () => {
  it('indices reach forward and backward as they are (as JAX custom_vjp), take no gradient, and a cotangent for them is refused', () => {
    // A gather whose gradient is doubled: x.grad = 2 · scatter of ones at ids.
    const pick = A.customVjp(
      (x: Tensor, ids: Tensor) => A.gather(x, ids, 0),
      (g: Tensor, [x, ids]: readonly Tensor[]) => {
        const rows = Array.from(ids!.toArray());
        const d = new Float64Array(x!.size);
        const gv = g.toArray();
        rows.forEach((r, k) => {
          d[r] += 2 * gv[k]!;
        });
        return [A.tensor(Array.from(d), { dtype: 'float64' }), null];
      },
    );
    const x = A.tensor([1, 2, 3], { dtype: 'float64', requiresGrad: true });
    const ids = A.tensor([0, 2, 2], { dtype: 'int32' });
    A.tidy(() => A.sum(pick(x, ids)).backward());
    expect(Array.from(x.grad!.toArray())).toEqual([2, 0, 4]);
    const bad = A.customVjp(
      (v: Tensor, i: Tensor) => A.gather(v, i, 0),
      (g: Tensor, [v, i]: readonly Tensor[]) => [A.zeros(v!.shape, { dtype: 'float64' }), A.zeros(i!.shape, { dtype: 'float64' })],
    );
    expect(() => A.tidy(() => A.sum(bad(x, ids)).backward())).toThrow(/input 1 is int32 .* must return null for it/);
    for (const t of [x, ids]) t.dispose();
  });
});
