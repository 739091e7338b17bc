// stopGradient and detach inside vmap, under an outer grad or jvp. The outer transforms record on
// a batched tensor's physical tensor, so a detached handle must cut that level too: the values
// below are the closed forms (d/dx of x·sg(x) is sg(x), not 2x).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;
const arr = (t: Tensor) => Array.from(t.toArray());
const x = () => A.tensor([1, 2, 3, 4, 5, 6], { shape: [3, 2], ...f64 });
const half = (r: Tensor) => A.sum(A.mul(r, A.stopGradient(r)));

describe('stopGradient and detach inside vmap', () => {
  it('grad of a vmapped function stops at stopGradient and detach: d/dx x·sg(x) = x', () => {
    expect(arr(A.grad((v: Tensor) => A.sum(A.vmap(half)(v)))(x()))).toEqual([1, 2, 3, 4, 5, 6]);
    const viaDetach = (r: Tensor) => A.sum(A.mul(r.detach(), r));
    expect(arr(A.grad((v: Tensor) => A.sum(A.vmap(viaDetach)(v)))(x()))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('jvp of a vmapped function carries no tangent through stopGradient: row sums of x·t', () => {
    const [, t] = A.jvp((v: Tensor) => A.vmap(half)(v), [x()], [A.ones([3, 2], f64)]);
    expect(arr(t)).toEqual([3, 7, 11]);
  });

  it('nested vmap inside grad: every level is cut', () => {
    const inner = A.vmap(A.vmap((e: Tensor) => A.mul(e, A.stopGradient(e))));
    expect(arr(A.grad((v: Tensor) => A.sum(inner(v)))(x()))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('the values of the detached batched tensor are unchanged, and vmap(grad) already agreed', () => {
    expect(arr(A.vmap((r: Tensor) => A.stopGradient(r), { inAxes: 1, outAxes: 1 })(x()))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(arr(A.vmap(A.grad(half))(x()))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('stopGradient cuts tangents in both modes; noGrad is reverse mode only (docs/transforms.md)', () => {
    const v = A.tensor([1, 2, 3], f64),
      t = A.ones([3], f64);
    const viaSg = (r: Tensor) => A.mul(r, A.stopGradient(A.square(r)));
    const viaNoGrad = (r: Tensor) =>
      A.mul(
        r,
        A.noGrad(() => A.square(r)),
      );
    expect(arr(A.jvp(viaSg, [v], [t])[1])).toEqual([1, 4, 9]);
    expect(arr(A.jvp(viaNoGrad, [v], [t])[1])).toEqual([3, 12, 27]);
    expect(arr(A.hvp((r: Tensor) => A.sum(viaNoGrad(r)), v, t))).toEqual([2, 4, 6]);
    expect(arr(A.grad((r: Tensor) => A.sum(A.grad((u: Tensor) => A.sum(viaNoGrad(u)))(r)))(v))).toEqual([0, 0, 0]);
  });
});

describe('dropout under vmap (docs/vmap.md, "Dropout under vmap")', () => {
  it('draws one mask and uses it for every example, with or without a seed', () => {
    const x = A.ones([3, 16]);
    for (const f of [(r: Tensor) => A.dropout(r, 0.5), (r: Tensor) => A.dropout(r, 0.5, { seed: 7 })]) {
      const rows = Array.from((A.vmap(f)(x) as Tensor).toArray());
      const first = rows.slice(0, 16);
      expect(first.some((v) => v === 0) && first.some((v) => v === 2)).toBe(true);
      expect(rows.slice(16, 32)).toEqual(first);
      expect(rows.slice(32, 48)).toEqual(first);
    }
    // With the seed, the mask is the one a single call draws.
    expect(Array.from((A.vmap((r: Tensor) => A.dropout(r, 0.5, { seed: 7 }))(x) as Tensor).toArray()).slice(0, 16)).toEqual(
      Array.from(A.dropout(A.ones([16]), 0.5, { seed: 7 }).toArray()),
    );
  });
});
