// A query row whose every key is masked: the kernels give zeros and zero gradients, and so must
// the higher-order rules, which recompute the probabilities with ops (softmax of a row of −∞ is
// NaN, and dkᵀ = dSᵀq sums over every row, so one dead row used to make all of hvp's k NaN).
// Reference: the same problem with the dead row removed (rows of q are independent, and a dead
// row adds nothing to any derivative).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;
const arr = (t: Tensor) => Array.from(t.toArray());
const rn = (shape: number[], seed: number) => A.randn(shape, { seed, dtype: 'float64' });
const I = -Infinity;
const maxRel = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.max(Math.abs(b[i]), 1e-3)));
const rows = (t: Tensor, keep: number[]) => A.gather(t, keep, t.shape.length - 2);

describe('scaledDotProductAttention: higher derivatives through a fully masked row', () => {
  let q: Tensor, k: Tensor, v: Tensor, w: Tensor, mask: Tensor;
  beforeAll(() => {
    [q, k, v, w] = [rn([3, 4], 1), rn([5, 4], 2), rn([5, 2], 3), rn([3, 2], 4)];
    mask = A.tensor(
      [
        [0, 0, I, 0, 0],
        [I, I, I, I, I],
        [0, I, 0, I, 0],
      ],
      f64,
    );
  });
  const live = [0, 2];
  const att = (q: Tensor, k: Tensor, v: Tensor, m: Tensor) => A.scaledDotProductAttention(q, k, v, { mask: m });

  it('jvp: the dead row has tangent 0, the others match the problem without it', () => {
    const ts = [rn([3, 4], 5), rn([5, 4], 6), rn([5, 2], 7)];
    const [, t] = A.jvp((q: Tensor, k: Tensor, v: Tensor) => att(q, k, v, mask), [q, k, v], ts);
    expect(arr(t).every(Number.isFinite)).toBe(true);
    expect(arr(t).slice(2, 4)).toEqual([0, 0]);
    const [, t2] = A.jvp(
      (q: Tensor, k: Tensor, v: Tensor) => att(q, k, v, rows(mask, live)),
      [rows(q, live), k, v],
      [rows(ts[0], live), ts[1], ts[2]],
    );
    expect(maxRel([...arr(t).slice(0, 2), ...arr(t).slice(4)], arr(t2))).toBeLessThan(1e-13);
  });

  it('jacfwd equals jacrev', () => {
    const jf = A.jacfwd((kk: Tensor) => att(q, kk, v, mask))(k);
    const jr = A.jacrev((kk: Tensor) => att(q, kk, v, mask))(k);
    expect(maxRel(arr(jf), arr(jr))).toBeLessThan(1e-13);
  });

  it('hvp and grad of grad in k and q are finite and match the problem without the dead row', () => {
    const L = (q: Tensor, k: Tensor, m: Tensor, ww: Tensor) => A.sum(A.mul(att(q, k, v, m), ww));
    const dk = rn([5, 4], 8);
    const hk = A.hvp((kk: Tensor) => L(q, kk, mask, w), k, dk);
    const want = A.hvp((kk: Tensor) => L(rows(q, live), kk, rows(mask, live), rows(w, live)), k, dk);
    expect(arr(hk).every(Number.isFinite)).toBe(true);
    expect(maxRel(arr(hk), arr(want))).toBeLessThan(1e-12);
    const dq = rn([3, 4], 9);
    const gg = A.grad((qq: Tensor) => A.sum(A.mul(A.grad((x: Tensor) => L(x, k, mask, w))(qq), dq)))(q);
    const gw = A.grad((qq: Tensor) => A.sum(A.mul(A.grad((x: Tensor) => L(x, k, rows(mask, live), rows(w, live)))(qq), rows(dq, live))))(
      rows(q, live),
    );
    expect(arr(gg).slice(4, 8)).toEqual([0, 0, 0, 0]);
    expect(maxRel([...arr(gg).slice(0, 4), ...arr(gg).slice(8)], arr(gw))).toBeLessThan(1e-12);
  });
});
