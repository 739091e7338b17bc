// The strided_copy kernels (assembly/shape.ts) against a plain JS index loop, bit for bit: random
// shapes of 1 to 5 axes (up to three leading axes run as nested loops, more through the per-row
// index decomposition), transposed and broadcast (stride 0) sources, transposed destinations,
// contiguous rows short (moved with v128 loads, with a scalar tail) and long (memory.copy), f32,
// f64 and i32.
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { runtime } from '../src/wasm/module.js';

beforeAll(async () => {
  await A.init({ threads: 1 });
});

/** Deterministic pseudo-random integers in [0, n). */
function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

const dense = (shape: number[]) => shape.map((_, k) => shape.slice(k + 1).reduce((a, b) => a * b, 1));

interface Case {
  shape: number[];
  xs: number[];
  ys: number[];
  xSize: number;
  ySize: number;
}

/** A copy of `shape` from a permuted (and maybe broadcast) source into a dense or permuted destination. */
function makeCase(r: (n: number) => number, ndim: number, lastLong: boolean): Case {
  const shape = Array.from({ length: ndim }, (_, k) => (k === ndim - 1 && lastLong ? 120 + r(20) : 1 + r(7)));
  const perm = (p: number[]) => {
    for (let i = p.length - 1; i > 0; i--) {
      const j = r(i + 1);
      [p[i], p[j]] = [p[j], p[i]];
    }
    return p;
  };
  // Source: the shape's axes stored in a shuffled order (a transpose), one axis maybe broadcast.
  const order = r(2) === 0 ? shape.map((_, k) => k) : perm(shape.map((_, k) => k));
  const stored = order.map((k) => shape[k]);
  const sd = dense(stored);
  const xs = shape.map((_, k) => sd[order.indexOf(k)]);
  if (ndim > 1 && r(4) === 0) xs[r(ndim)] = 0;
  const yOrder = r(3) === 0 ? perm(shape.map((_, k) => k)) : shape.map((_, k) => k);
  const yd = dense(yOrder.map((k) => shape[k]));
  const ys = shape.map((_, k) => yd[yOrder.indexOf(k)]);
  const size = shape.reduce((a, b) => a * b, 1);
  return { shape, xs, ys, xSize: size, ySize: size };
}

function check(c: Case, dtype: 'float32' | 'float64' | 'int32', seed: number) {
  const suffix = { float32: 'f32', float64: 'f64', int32: 'i32' }[dtype];
  const words = dtype === 'float64' ? 2 : 1;
  const x = A.zeros([c.xSize], { dtype }),
    y = A.zeros([c.ySize], { dtype }),
    args = A.zeros([3 * c.shape.length], { dtype: 'int32' });
  const rt = runtime().exports as unknown as Record<string, (...a: number[]) => void> & { memory: WebAssembly.Memory };
  const u32 = () => new Uint32Array(rt.memory.buffer);
  const r = rng(seed);
  // Finite values with every bit pattern of the mantissa (exponent bits kept off all-ones).
  const src = new Uint32Array(c.xSize * words).map(() => (r(2 ** 30) * 2 + r(2)) & 0xbfffffff);
  u32().set(src, x.ptr >> 2);
  new Int32Array(rt.memory.buffer).set([...c.shape, ...c.xs, ...c.ys], args.ptr >> 2);
  const n = c.shape.length;
  rt[`strided_copy_${suffix}`](x.ptr, y.ptr, n, args.ptr, args.ptr + 4 * n, args.ptr + 8 * n);
  const got = u32().slice(y.ptr >> 2, (y.ptr >> 2) + c.ySize * words);
  const want = new Uint32Array(c.ySize * words);
  const idx = new Array<number>(n).fill(0);
  const count = c.shape.reduce((a, b) => a * b, 1);
  for (let e = 0; e < count; e++) {
    let rem = e;
    for (let k = n - 1; k >= 0; k--) (idx[k] = rem % c.shape[k]), (rem = Math.floor(rem / c.shape[k]));
    const xo = idx.reduce((s, v, k) => s + v * c.xs[k], 0),
      yo = idx.reduce((s, v, k) => s + v * c.ys[k], 0);
    for (let w = 0; w < words; w++) want[yo * words + w] = src[xo * words + w];
  }
  expect(Buffer.from(got.buffer).equals(Buffer.from(want.buffer)), JSON.stringify(c)).toBe(true);
  x.dispose(), y.dispose(), args.dispose();
}

describe('strided_copy against a JS index loop, bit for bit', () => {
  for (const dtype of ['float32', 'float64', 'int32'] as const) {
    it(`${dtype}: 1 to 5 axes, short and long rows, transposed and broadcast`, () => {
      const r = rng(dtype.length);
      for (let t = 0; t < 150; t++) check(makeCase(r, 1 + (t % 5), t % 3 === 0), dtype, t);
    });
  }
  it("attention's head split and merge layouts ([B, T, H, D] ↔ [B, H, T, D]) and the packed output's slice", () => {
    const s = [12, 64, 4, 32];
    check({ shape: [12, 4, 64, 32], xs: [8192, 32, 128, 1], ys: dense([12, 4, 64, 32]), xSize: 98304, ySize: 98304 }, 'float32', 1);
    check({ shape: s, xs: [8192, 32, 2048, 1], ys: dense(s), xSize: 98304, ySize: 98304 }, 'float32', 2);
    check({ shape: [48, 64, 32], xs: [2112, 33, 1], ys: dense([48, 64, 32]), xSize: 48 * 64 * 33, ySize: 98304 }, 'float32', 3);
  });
});
