// pow at the special values of C99 Annex F.10.4.4, in float32 and float64. The wanted values are
// C99's (math.pow), which PyTorch 1.13 also gives except where a comment says otherwise. Several
// rows once returned another value: (−2)^(1 + 2^-52) was −2.0000000000000004 and (−∞)^(1 + 2^-52)
// −∞ (the f64 odd-integer test read only y's high word), 1^NaN, 1^±∞ and (−1)^±∞ were NaN (JS
// Math.pow's rules). The derivatives there are PyTorch's, and ordinary powers keep the bits they
// had before those fixes.
import { createHash } from 'node:crypto';
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';

await A.init();
const inf = Number.POSITIVE_INFINITY;
const nan = Number.NaN;
/** Each dtype with its machine epsilon: 1 + eps is the exponent one ulp above 1. */
const DTYPES = [
  ['float32', 2 ** -23],
  ['float64', 2 ** -52],
] as const;
type DType = (typeof DTYPES)[number][0];

/** A value as text that tells −0 from +0 (toEqual on the strings names the row that differs). */
const show = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));
const f = (dtype: DType, v: number[]) => A.tensor(v, { dtype });
/** Column k of a table of rows, as a tensor. */
function col(dtype: DType, rows: number[][], k: number) {
  const v = rows.map((r) => r[k]);
  return A.tensor(v, { dtype });
}
/** SHA-256 of a typed array's bytes. */
const sha = (v: Float32Array | Float64Array | Int32Array): string =>
  createHash('sha256')
    .update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
    .digest('hex');

/** [x, y, pow(x, y)] rows of C99 Annex F.10.4.4; eps is the dtype's machine epsilon. */
const annexF = (eps: number): [number, number, number][] => [
  // x^±0 = 1 for any x, NaN too
  ...[0, -0, 1, -1, 2, -2, inf, -inf, nan].flatMap((x): [number, number, number][] => [
    [x, 0, 1],
    [x, -0, 1],
  ]),
  // 1^y = 1 for any y, NaN too; (−1)^±∞ = 1 (the library gave NaN for all of these)
  [1, inf, 1],
  [1, -inf, 1],
  [1, nan, 1],
  [1, 2.5, 1],
  [1, -1e30, 1],
  [-1, inf, 1],
  [-1, -inf, 1],
  // (±0)^y: ±∞ for odd y < 0, +∞ for other y < 0; ±0 for odd y > 0, +0 for other y > 0
  [0, -3, inf],
  [-0, -3, -inf],
  [0, -2, inf],
  [-0, -2, inf],
  [-0, -inf, inf],
  [0, 3, 0],
  [-0, 3, -0],
  [-0, 2, 0],
  [-0, inf, 0],
  [-0, 0.5, 0], // PyTorch −0 (it takes sqrt's sign); C99 +0
  [-0, -0.5, inf], // PyTorch −∞ (1/sqrt); C99 +∞
  [-0, 1.5, 0],
  // |x| < 1 and |x| > 1 with ±∞
  [0.5, -inf, inf],
  [-0.5, -inf, inf],
  [2, -inf, 0],
  [-2, -inf, 0],
  [0.5, inf, 0],
  [-0.5, inf, 0],
  [2, inf, inf],
  [-2, inf, inf],
  // (−∞)^y: −0 for odd y < 0, +0 for other y < 0; −∞ for odd y > 0, +∞ for other y > 0
  [-inf, -3, -0],
  [-inf, -2, 0],
  [-inf, -0.5, 0],
  [-inf, 3, -inf],
  [-inf, 2, inf],
  [-inf, 0.5, inf],
  // (+∞)^y: +0 for y < 0, +∞ for y > 0
  [inf, -0.5, 0],
  [inf, -3, 0],
  [inf, 0.5, inf],
  [inf, 3, inf],
  // finite x < 0 with a finite non-integer y, and NaN operands
  [-2, 0.5, nan],
  [-8, 1 / 3, nan],
  [nan, 2, nan],
  [2, nan, nan],
  [-1, nan, nan],
  [-0, nan, nan],
  [-inf, nan, nan],
  // exponents an ulp or so from an integer: not integers, so no odd sign either
  [-2, 1 + eps, nan],
  [-2, 3 + 2 * eps, nan],
  [-2, -(1 + eps), nan],
  [-1, 1 + eps, nan],
  [-0.5, 2 + 2 * eps, nan],
  [-2, 1 + 2 ** -23, nan],
  [-2, 1 + 2 ** -20, nan],
  [-2, 2 ** 20 + 0.5, nan],
  [-inf, 1 + eps, inf],
  [-inf, 1 + 2 ** -23, inf],
  [-inf, -(1 + eps), 0],
  [-inf, 3 + 2 * eps, inf],
  [-0, 1 + eps, 0],
  [-0, 1 + 2 ** -23, 0],
  [-0, -(1 + eps), inf],
  [-0, 3 + 2 * eps, 0],
  // 2^p − 1 (p the significand's bits), the largest odd float, is still odd
  [-1, 2 / eps - 1, -1],
  [-0, 2 / eps - 1, -0],
  [-inf, 2 / eps - 1, -inf],
  [-1, 4 / eps, 1],
];

describe('pow at the special values of C99 Annex F.10.4.4', () => {
  for (const [dtype, eps] of DTYPES) {
    it(`every row in ${dtype}`, () => {
      const rows = annexF(eps);
      const got = A.pow(col(dtype, rows, 0), col(dtype, rows, 1)).toArray();
      const line = (r: [number, number, number], v: number) => `pow(${show(r[0])}, ${show(r[1])}) = ${show(v)}`;
      expect(rows.map((r, i) => line(r, got[i]))).toEqual(rows.map((r) => line(r, r[2])));
    });

    it(`a number exponent (NaN, ±∞) broadcasts with the same values in ${dtype}, as torch.pow(t, s)`, () => {
      const x = f(dtype, [1, -1, 2, 0.5, -0.5]);
      expect(Array.from(A.pow(x, nan).toArray())).toEqual([1, nan, nan, nan, nan]);
      expect(Array.from(A.pow(x, inf).toArray())).toEqual([1, 1, inf, 0, 0]);
      expect(Array.from(A.pow(x, -inf).toArray())).toEqual([1, 1, 0, inf, inf]);
      expect(Array.from(A.pow(-2, f(dtype, [1 + eps, 2, nan])).toArray())).toEqual([nan, 4, nan]);
    });
  }
});

describe("pow's derivatives at those points are PyTorch 1.13's", () => {
  for (const [dtype, eps] of DTYPES) {
    it(`∂/∂a and ∂/∂b of Σ aᵇ in ${dtype}`, () => {
      // [a, b, ∂/∂a, ∂/∂b]: a.grad and b.grad of torch.pow(a, b).sum().backward()
      const rows: [number, number, number, number][] = [
        [-2, 1 + eps, nan, nan],
        [-2, 3 + 2 * eps, nan, nan],
        [-1, 1 + eps, nan, nan],
        [-0, 1 + eps, 0, 0],
        [-0, -(1 + eps), -inf, -inf],
        [-inf, 1 + eps, inf, nan],
        [-inf, -(1 + eps), -0, nan],
        [-inf, 2 + 2 * eps, inf, nan],
        [1, inf, inf, 0],
        [1, -inf, -inf, 0],
        [1, nan, nan, 0],
        [-1, inf, inf, nan],
        [-1, -inf, -inf, nan],
      ];
      const grads = A.grad((a: A.Tensor, b: A.Tensor) => A.sum(A.pow(a, b)), { argnums: [0, 1] });
      const [ga, gb] = grads(col(dtype, rows, 0), col(dtype, rows, 1)) as A.Tensor[];
      const da = ga.toArray();
      const db = gb.toArray();
      const line = (r: number[], x: number, y: number) => `(${show(r[0])}, ${show(r[1])}): ${show(x)} ${show(y)}`;
      expect(rows.map((r, i) => line(r, da[i], db[i]))).toEqual(rows.map((r) => line(r, r[2], r[3])));
    });

    it(`the gradient through a number exponent (NaN, ±∞) in ${dtype}`, () => {
      const x = f(dtype, [1, -1, 2, 0.5]);
      const g = (s: number) => Array.from((A.grad((t: A.Tensor) => A.sum(A.pow(t, s)))(x) as A.Tensor).toArray());
      expect(g(nan)).toEqual([nan, nan, nan, nan]);
      expect(g(inf)).toEqual([inf, inf, inf, nan]);
      expect(g(-inf)).toEqual([-inf, -inf, nan, -inf]);
    });
  }
});

/** 24,000 ordinary (x, y): x > 0 over ten decades with fractional y, x < 0 with integer y. */
function ordinary(): [number[], number[]] {
  const xs: number[] = [];
  const ys: number[] = [];
  const scale = [1e-4, 0.03, 1, 30, 1e4];
  for (let i = 0; i < 300; i++) {
    const x = (((i % 37) + 1) / ((i % 29) + 3)) * scale[i % 5];
    for (let j = 0; j < 40; j++) {
      xs.push(x, -x);
      ys.push((j - 20) / 3 + (i % 7) / 8, (j % 13) - 6 + (i % 3));
    }
  }
  return [xs, ys];
}

describe('ordinary powers keep their bits', () => {
  // SHA-256 of pow's values and of ∂/∂a over ordinary(), taken before the special cases were fixed
  // (∂/∂b is left out: it takes the log of negative bases, whose NaN sign the hardware picks).
  const before = {
    float32: [
      '3e8fe8a2a76b0ed1ec06b6c3662849a15fadf80fd185b3b775d783a8a83dee8d',
      '65ddc0f734dbb183e1b56372a7d32104eee9c55f85eaa66f1828c7e2537681fd',
    ],
    float64: [
      '48804284c3bd30b5f61eea729a8a597b2017bec13538b2b6844b3532717652c0',
      'ad532bc2b825f0d2bbd3f935b52995b77d67f74cc50cfa6b149465959220fb5a',
    ],
  };
  for (const [dtype] of DTYPES) {
    it(`values and ∂/∂a in ${dtype}`, () => {
      const [xs, ys] = ordinary();
      const a = f(dtype, xs);
      const b = f(dtype, ys);
      const da = A.grad((t: A.Tensor) => A.sum(A.pow(t, b)))(a) as A.Tensor;
      expect([sha(A.pow(a, b).toArray()), sha(da.toArray())]).toEqual(before[dtype]);
    });
  }
});
