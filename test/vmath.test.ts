// The f32 SIMD transcendentals (assembly/vmath.ts) against float64 JS Math rounded to f32:
// ulp error over millions of inputs (every 257th f32 bit pattern: 16.7 million, plus edge
// cases), IEEE special values, and bit-identical results whatever the array length or offset
// (the kernel tail runs the lane code too). VMATH_EXHAUSTIVE=1 checks all 2^32 inputs.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import { Tensor } from '../src/ops/tensor.js';
import { kernel, views } from '../src/wasm/module.js';
import { erf } from './ref.js';

beforeAll(() => A.init());

const sigmoid = (x: number) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));
const softplus = (x: number) => Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));

/** Each kernel with its float64 reference and the error bound it is held to (ulp). */
const FNS: [string, (x: number) => number, number][] = [
  ['exp', Math.exp, 1],
  ['log', Math.log, 1],
  ['tanh', Math.tanh, 1],
  ['sigmoid', sigmoid, 1],
  ['softplus', softplus, 2],
  ['erf', erf, 2],
];

/** Inputs near each method's switch points and the range limits. */
const EDGES = [
  0,
  -0,
  Infinity,
  -Infinity,
  NaN,
  1,
  -1,
  0.5,
  2,
  1e-45,
  -1e-45,
  1.17549435e-38,
  -1.17549435e-38,
  3.4028234e38,
  -3.4028234e38,
  0.625,
  -0.625,
  10,
  -10,
  9.01,
  88.72283935546875,
  88.7228469848,
  89,
  -87.33654,
  -103.97208,
  -104,
  -110,
  0.34657359,
  -0.34657359,
  Math.SQRT2,
  Math.SQRT1_2,
  44.36,
  -44.36,
  1e-8,
  -1e-8,
];
const f32bits = new Uint32Array(1),
  f32val = new Float32Array(f32bits.buffer);
const ordered = (v: number): number => {
  f32val[0] = v;
  const b = f32bits[0];
  return b & 0x80000000 ? -(b & 0x7fffffff) : b; // monotone in the float's value, ±0 both 0
};

/** Runs kernel `name`_f32 on xs; returns the outputs. */
function run(name: string, xs: Float32Array): Float32Array {
  const x = Tensor.empty([xs.length], 'float32'),
    y = Tensor.empty([xs.length], 'float32');
  try {
    views().f32.set(xs, x.ptr >> 2);
    kernel(`${name}_f32`)(x.ptr, y.ptr, xs.length, 0, 0);
    return views().f32.slice(y.ptr >> 2, (y.ptr >> 2) + xs.length);
  } finally {
    x.dispose();
    y.dispose();
  }
}

/** Max ulp distance from the correctly rounded value over xs, and where (NaN must match NaN). */
function worst(name: string, ref: (x: number) => number, xs: Float32Array): { ulp: number; at: number } {
  const ys = run(name, xs);
  let w = { ulp: 0, at: NaN };
  for (let i = 0; i < xs.length; i++) {
    const e = Math.fround(ref(xs[i]));
    const d =
      Number.isNaN(e) || Number.isNaN(ys[i])
        ? Number.isNaN(e) === Number.isNaN(ys[i])
          ? 0
          : Infinity
        : Math.abs(ordered(ys[i]) - ordered(e));
    if (d > w.ulp) w = { ulp: d, at: xs[i] };
  }
  return w;
}

/** Every `stride`-th f32 bit pattern starting at `from`, in blocks of 2^22. */
function* patterns(stride: number, from = 0): Generator<Float32Array> {
  const block = 1 << 22;
  for (let lo = from; lo < 2 ** 32; lo += block * stride) {
    const n = Math.min(block, Math.ceil((2 ** 32 - lo) / stride));
    const bits = new Uint32Array(n);
    for (let i = 0; i < n; i++) bits[i] = lo + i * stride;
    yield new Float32Array(bits.buffer);
  }
}

describe.each(FNS)('%s_f32', (name, ref, bound) => {
  it(`is within ${bound} ulp of float64 Math rounded to f32 on every 257th f32 and the edge cases`, () => {
    let w = worst(name, ref, Float32Array.from(EDGES));
    for (const xs of patterns(257, 17)) {
      const r = worst(name, ref, xs);
      if (r.ulp > w.ulp) w = r;
    }
    console.log(`${name}_f32: max error ${w.ulp} ulp (at ${w.at})`);
    expect(w.ulp).toBeLessThanOrEqual(bound);
  }, 120_000);

  it.skipIf(!process.env.VMATH_EXHAUSTIVE)(
    'is within the bound on all 2^32 inputs',
    () => {
      let w = { ulp: 0, at: NaN };
      for (const xs of patterns(1)) {
        const r = worst(name, ref, xs);
        if (r.ulp > w.ulp) w = r;
      }
      console.log(`${name}_f32 exhaustive: max error ${w.ulp} ulp (at ${w.at})`);
      expect(w.ulp).toBeLessThanOrEqual(bound);
    },
    3_600_000,
  );

  it('gives bit-identical elements for every length and offset (tails run the lane code)', () => {
    const base = Float32Array.from(
      { length: 40 },
      (_, i) => (i % 2 ? -1 : 1) * (0.05 + i * 0.37) * (name === 'log' ? -(i % 2 ? -1 : 1) : 1),
    );
    const whole = run(name, base);
    for (let off = 0; off < 4; off++) {
      for (const n of [0, 1, 2, 3, 4, 5, 7, 16, 17, 19]) {
        const part = run(name, base.subarray(off, off + n));
        expect(Array.from(part)).toEqual(Array.from(whole.subarray(off, off + n)));
      }
    }
  });
});

describe('special values', () => {
  const one = (name: string, v: number) => run(name, Float32Array.of(v, 0, 0, 0, v))[4]; // tail lane and main lane agree below
  it.each([
    ['exp', -Infinity, 0],
    ['exp', Infinity, Infinity],
    ['exp', 0, 1],
    ['exp', -0, 1],
    ['exp', 89, Infinity],
    ['exp', -104, 0],
    ['log', 0, -Infinity],
    ['log', -0, -Infinity],
    ['log', Infinity, Infinity],
    ['log', 1, 0],
    ['log', -1, NaN],
    ['log', -Infinity, NaN],
    ['tanh', 0, 0],
    ['tanh', -0, -0],
    ['tanh', Infinity, 1],
    ['tanh', -Infinity, -1],
    ['tanh', 1e30, 1],
    ['sigmoid', 0, 0.5],
    ['sigmoid', -0, 0.5],
    ['sigmoid', Infinity, 1],
    ['sigmoid', -Infinity, 0],
    ['softplus', Infinity, Infinity],
    ['softplus', -Infinity, 0],
    ['softplus', 1e30, 1e30],
    ['erf', 0, 0],
    ['erf', -0, -0],
    ['erf', Infinity, 1],
    ['erf', -Infinity, -1],
    ['erf', 4, 1],
    ['erf', -3.95, -1],
  ] as const)('%s(%d) = %d', (name, x, y) => {
    expect(Object.is(one(name, x), Math.fround(y))).toBe(true);
    expect(Object.is(run(name, Float32Array.of(x, x, x, x))[0], Math.fround(y))).toBe(true);
  });
  it.each(FNS.map(([n]) => n))('%s(NaN) is NaN', (name) => {
    expect(
      run(name, Float32Array.of(NaN, 1, NaN, NaN, NaN))
        .filter((_, i) => i !== 1)
        .every(Number.isNaN),
    ).toBe(true);
  });
  it('exp reaches the subnormal range and rounds to the nearest subnormal', () => {
    const xs = Float32Array.of(-88, -95, -100, -103.5, -103.9);
    const ys = run('exp', xs);
    xs.forEach((x, i) => expect(Math.abs(ordered(ys[i]) - ordered(Math.fround(Math.exp(x))))).toBeLessThanOrEqual(1));
  });
});

describe('erf_f64', () => {
  it('is within 3 ulp of a float64 reference (itself within 1.2 ulp) over [−6.5, 6.5], ±1 beyond, NaN stays NaN', () => {
    const n = 200_001,
      xs = Float64Array.from({ length: n }, (_, i) => -6.5 + (13 * i) / (n - 1));
    const x = Tensor.empty([n], 'float64'),
      y = Tensor.empty([n], 'float64');
    try {
      views().f64.set(xs, x.ptr >> 3);
      kernel('erf_f64')(x.ptr, y.ptr, n, 0, 0);
      const ys = views().f64.slice(y.ptr >> 3, (y.ptr >> 3) + n);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const e = erf(xs[i]),
          ulp = Math.max(Number.MIN_VALUE, Math.abs(e) * 2 ** -52);
        worst = Math.max(worst, Math.abs(ys[i] - e) / ulp);
      }
      expect(worst).toBeLessThanOrEqual(3);
      views().f64.set([NaN, Infinity, -Infinity, -0, 7, 1e-300], x.ptr >> 3);
      kernel('erf_f64')(x.ptr, y.ptr, 6, 0, 0);
      const s = views().f64.slice(y.ptr >> 3, (y.ptr >> 3) + 6);
      expect([Number.isNaN(s[0]), s[1], s[2], Object.is(s[3], -0), s[4]]).toEqual([true, 1, -1, true, 1]);
      expect(s[5] / 1e-300).toBeCloseTo(2 / Math.sqrt(Math.PI), 14);
    } finally {
      x.dispose();
      y.dispose();
    }
  });
});
