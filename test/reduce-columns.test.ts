// The column reductions of assembly/reduce.ts (sum and max over the middle axis of [outer, r,
// inner], inner > 1) against a plain JS loop that adds each column's values in f32 or f64 in
// ascending order from 0 (−∞ for max), bit for bit: the kernel's blocks of four vectors, its
// single vectors and its scalar tail all keep that order.
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { runtime } from '../src/wasm/module.js';

beforeAll(async () => {
  await A.init({ threads: 1 });
});

type DT = 'float32' | 'float64';

function check(outer: number, r: number, inner: number, dtype: DT, op: 'sum' | 'max', seed: number) {
  const x = A.randn([outer * r * inner], { seed, dtype }).mul(100),
    y = A.zeros([outer * inner], { dtype });
  const e = runtime().exports as unknown as Record<string, (...a: number[]) => void>;
  e[`${op}_${dtype === 'float32' ? 'f32' : 'f64'}`](x.ptr, y.ptr, outer, r, inner);
  const xv = x.toArray() as Float32Array | Float64Array;
  const round = dtype === 'float32' ? Math.fround : (v: number) => v;
  const want = new (dtype === 'float32' ? Float32Array : Float64Array)(outer * inner);
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < inner; i++) {
      let s = op === 'sum' ? 0 : -Infinity,
        lost = 0;
      for (let j = 0; j < r; j++) {
        const v = xv[(o * r + j) * inner + i];
        if (op === 'sum' && dtype === 'float64') {
          const t = s + v; // compensated (Neumaier), as the kernel
          lost += Math.abs(s) >= Math.abs(v) ? s - t + v : v - t + s;
          s = t;
        } else s = op === 'sum' ? round(s + v) : Math.max(s, v);
      }
      want[o * inner + i] = op === 'sum' && dtype === 'float64' && Number.isFinite(s) ? s + lost : s;
    }
  const got = y.toArray() as Float32Array | Float64Array;
  expect(Buffer.from(got.buffer).equals(Buffer.from(want.buffer)), `${op} ${dtype} [${outer}, ${r}, ${inner}]`).toBe(true);
  x.dispose(), y.dispose();
}

describe('column sums and maxima: each column summed alone in ascending order, bit for bit', () => {
  for (const dtype of ['float32', 'float64'] as const)
    for (const op of ['sum', 'max'] as const)
      it(`${op} ${dtype}: inner widths around the 4-vector blocks, several outer slices`, () => {
        let seed = 1;
        for (const inner of [2, 3, 4, 5, 8, 15, 16, 17, 31, 33, 64, 70, 128])
          for (const [outer, r] of [
            [1, 1],
            [1, 768],
            [3, 37],
          ])
            check(outer, r, inner, dtype, op, seed++);
      });
});
