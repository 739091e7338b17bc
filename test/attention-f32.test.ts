// The register-blocked float32 attention kernels (assembly/attention-f32.ts: float32, no
// dropout, d and dv multiples of 4) against the float64 path (tiled GEMM kernels, itself checked
// against a float64 reference in attention.test.ts): outputs and the gradients of q, k, v and a
// float mask, over shapes that exercise every edge of the blocking: query rows not a multiple of
// the 8-row block, keys not a multiple of the 4-key group, dv ≡ 4 mod 8 (the one-vector column
// tail), causal with Tq < Tk and Tq > Tk, mask layouts, and a fully masked row.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';

beforeAll(async () => {
  await A.init({ threads: 1 });
});

/** max |a − b| / max(max |b|, 0.01). */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let e = 0,
    m = 0;
  for (let i = 0; i < b.length; i++) {
    e = Math.max(e, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return e / Math.max(m, 1e-2); // (gradients that are 0 in exact arithmetic: rounding noise)
}

interface Case {
  name: string;
  q: number[];
  k: number[];
  v: number[];
  causal?: boolean;
  mask?: number[];
}
const CASES: Case[] = [
  { name: 'one row, one key', q: [1, 1, 4], k: [1, 1, 4], v: [1, 1, 4] },
  { name: 'ragged Tq and Tk, dv ≡ 4 mod 8', q: [2, 3, 13, 8], k: [2, 3, 10, 8], v: [2, 3, 10, 12] },
  { name: 'causal square, T = 37', q: [3, 37, 16], k: [3, 37, 16], v: [3, 37, 8], causal: true },
  { name: 'causal, Tq < Tk', q: [2, 5, 12], k: [2, 23, 12], v: [2, 23, 4], causal: true },
  { name: 'causal, Tq > Tk', q: [2, 21, 4], k: [2, 6, 4], v: [2, 6, 8], causal: true },
  { name: 'GPT shape (T = 64, d = 32), causal', q: [2, 64, 32], k: [2, 64, 32], v: [2, 64, 32], causal: true },
  { name: 'mask [Tq, Tk]', q: [2, 2, 11, 4], k: [2, 2, 9, 4], v: [2, 2, 9, 4], mask: [11, 9] },
  {
    name: 'mask per head, one row [H, 1, Tk], causal',
    q: [2, 3, 10, 8],
    k: [2, 3, 10, 8],
    v: [2, 3, 10, 4],
    mask: [3, 1, 10],
    causal: true,
  },
  { name: 'mask [B, 1, Tq, 1]', q: [2, 2, 9, 4], k: [2, 2, 7, 4], v: [2, 2, 7, 4], mask: [2, 1, 9, 1] },
  // Odd T past one 8-row block with a 3-key tail group: the score tiles' own row maxima, then
  // scoreBlock on the tail only (no mask), or on every group (mask), and causal with a mask.
  { name: 'T = 67, d = 32', q: [2, 67, 32], k: [2, 67, 32], v: [2, 67, 32] },
  { name: 'T = 67, d = 32, causal, mask [Tq, Tk]', q: [2, 67, 32], k: [2, 67, 32], v: [2, 67, 32], mask: [67, 67], causal: true },
];

const rn = (shape: number[], seed: number, dtype: DType) => A.randn(shape, { seed, dtype });

/** Output and gradients (q, k, v, mask) of Σ w ⊙ attention at `dtype`, as float64 arrays. */
function run(c: Case, dtype: DType): number[][] {
  return A.tidy(() => {
    const xs = [rn(c.q, 1, dtype), rn(c.k, 2, dtype), rn(c.v, 3, dtype)];
    if (c.mask) xs.push(A.mul(rn(c.mask, 4, dtype), 0.5));
    const f = (q: Tensor, k: Tensor, v: Tensor, mask?: Tensor) => A.scaledDotProductAttention(q, k, v, { causal: c.causal, mask });
    const y = f(...(xs as [Tensor, Tensor, Tensor, Tensor?]));
    const w = rn([...y.shape], 9, dtype);
    const gs = A.grad((...a: Tensor[]) => A.sum(A.mul(f(...(a as [Tensor, Tensor, Tensor, Tensor?])), w)), {
      argnums: xs.map((_, i) => i),
    })(...xs) as Tensor[];
    return [y, ...gs].map((t) => Array.from(t.toArray()));
  });
}

describe('scaledDotProductAttention: the float32 register-blocked kernels', () => {
  it.each(CASES)('$name: output and gradients agree with float64 to 1e-5', (c) => {
    const [a, b] = [run(c, 'float32'), run(c, 'float64')];
    // (a mask constant along the keys has gradient 0: only rounding noise to compare)
    const n = c.mask?.[c.mask.length - 1] === 1 ? 4 : a.length;
    a.slice(0, n).forEach((x, i) => expect(relErr(x, b[i]), `result ${i}`).toBeLessThan(1e-5));
  });

  it('a fully masked row gives zeros and zero gradients, no NaN', () => {
    A.tidy(() => {
      const q = rn([9, 4], 1, 'float32'),
        k = rn([5, 4], 2, 'float32'),
        v = rn([5, 4], 3, 'float32');
      const m = new Float32Array(9 * 5);
      for (let j = 0; j < 5; j++) m[8 * 5 + j] = -Infinity; // the last row: in the second 8-row block
      for (let j = 0; j < 5; j += 2) m[2 * 5 + j] = -Infinity;
      const mask = A.tensor(m, { shape: [9, 5] });
      q.requiresGrad = true;
      k.requiresGrad = true;
      const y = A.scaledDotProductAttention(q, k, v, { mask });
      expect(Array.from(y.toArray()).slice(32)).toEqual([0, 0, 0, 0]);
      A.sum(A.mul(y, rn([9, 4], 5, 'float32'))).backward();
      const gq = Array.from(q.grad!.toArray()),
        gk = Array.from(k.grad!.toArray());
      expect([...gq, ...gk].every(Number.isFinite)).toBe(true);
      expect(gq.slice(32)).toEqual([0, 0, 0, 0]);
      // A row that sees keys 1 and 3 only: equal to attention over those two keys.
      const sub = A.scaledDotProductAttention(A.slice(q, [2, 0], [1, 4]), A.gather(k, [1, 3], 0), A.gather(v, [1, 3], 0));
      expect(relErr(Array.from(y.toArray()).slice(8, 12), Array.from(sub.toArray()))).toBeLessThan(1e-6);
    });
  });
});
