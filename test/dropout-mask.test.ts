// The dropout mask kernels against the counter generator's definition, computed here with BigInt:
// y[i] = U(seed, i) ≥ p ? 1/(1−p) : 0 with U(seed, i) = (mix(mix(seed) + (i+1)·φ) >> 11)·2⁻⁵³
// (SplitMix64's finaliser). The kernels compare on integers and step the counter; this holds them
// to the plain float compare bit for bit, at p on and next to the 2⁻⁵³ grid and the edges.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import { kernel, runtime, views } from '../src/wasm/module.js';

beforeAll(async () => {
  await A.init();
});

const M64 = (1n << 64n) - 1n;
function mix(z: bigint): bigint {
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}
function uniform(seedLo: number, seedHi: number, i: number): number {
  const seed = (BigInt(seedHi) << 32n) | BigInt(seedLo);
  const b = mix((mix(seed) + BigInt(i + 1) * 0x9e3779b97f4a7c15n) & M64);
  return Number(b >> 11n) * 2 ** -53;
}

const PS = [0, -0, 0.5, 0.3, 0.1, 0.9, 1 / 3, 2 ** -53, 3 * 2 ** -54, 5e-324, 1 - 2 ** -53, 0.999999, 1, 2, NaN, -1];

describe('dropout_mask kernels', () => {
  for (const [name, bytes] of [
    ['dropout_mask_f32', 4],
    ['dropout_mask_f64', 8],
  ] as const) {
    it(`${name}: the float compare's bits at every p`, () => {
      const n = 1000,
        ptr = runtime().arena.alloc(n * bytes);
      try {
        for (const p of PS)
          for (const [lo, hi] of [
            [7, 0],
            [0xdeadbeef, 0x12345678],
          ]) {
            kernel(name)(ptr, n, p, lo, hi);
            const v = views(),
              got = bytes === 4 ? v.f32.slice(ptr >> 2, (ptr >> 2) + n) : v.f64.slice(ptr >> 3, (ptr >> 3) + n);
            const scale = bytes === 4 ? Math.fround(1 / (1 - p)) : 1 / (1 - p);
            const want = Array.from({ length: n }, (_, i) => (uniform(lo, hi, i) >= p ? scale : 0));
            expect(Array.from(got), `p = ${p}, seed ${lo}/${hi}`).toEqual(want);
          }
        // The kept share is about 1 − p (the compare is not constant).
        kernel(name)(ptr, n, 0.25, 3, 4);
        const v = views(),
          kept = (bytes === 4 ? v.f32.slice(ptr >> 2, (ptr >> 2) + n) : v.f64.slice(ptr >> 3, (ptr >> 3) + n)).filter((x) => x > 0).length;
        expect(kept).toBeGreaterThan(700);
        expect(kept).toBeLessThan(800);
      } finally {
        runtime().arena.free(ptr, n * bytes);
      }
    });
  }
});
