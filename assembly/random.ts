// Counter-based random numbers: element i of a stream is a pure function of (seed, i), the
// SplitMix64 finaliser of seed ⊕ i·φ, so any slice can be regenerated (dropout replay in
// checkpointing) and every runtime and thread count gives the same bits.
import { st } from './lanes';
import { log_s, cos_s } from './scalar';
import { uniform } from './counter';

/** y[i] = lo + (hi − lo)·U(seed, offset + i), U uniform in [0, 1). */
@inline function rand<T>(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, lo: f64, hi: f64): void {
  const base = <u64>offset;
  for (let i = 0; i < n; i++) st<T>(y, i, <T>(lo + (hi - lo) * uniform(seedLo, seedHi, base + <u64>i)));
}
export function rand_uniform_f32(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, lo: f64, hi: f64): void { rand<f32>(y, n, seedLo, seedHi, offset, lo, hi); }
export function rand_uniform_f64(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, lo: f64, hi: f64): void { rand<f64>(y, n, seedLo, seedHi, offset, lo, hi); }

/** y[i] = mean + std·N(seed, offset + i): Box–Muller on two uniforms per element, in f64. */
@inline function randn<T>(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, mean: f64, std: f64): void {
  const base = <u64>offset;
  for (let i = 0; i < n; i++) {
    const k = (base + <u64>i) << 1;
    const u1 = 1.0 - uniform(seedLo, seedHi, k), u2 = uniform(seedLo, seedHi, k + 1);
    const z = Math.sqrt(-2.0 * log_s<f64>(u1)) * cos_s<f64>(6.283185307179586 * u2);
    st<T>(y, i, <T>(mean + std * z));
  }
}
export function rand_normal_f32(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, mean: f64, std: f64): void { randn<f32>(y, n, seedLo, seedHi, offset, mean, std); }
export function rand_normal_f64(y: usize, n: i32, seedLo: u32, seedHi: u32, offset: f64, mean: f64, std: f64): void { randn<f64>(y, n, seedLo, seedHi, offset, mean, std); }

/** Dropout mask: y[i] = U(seed, i) ≥ p ? 1/(1−p) : 0 (inverted dropout; p < 1). */
@inline function dropoutMask<T>(y: usize, n: i32, seedLo: u32, seedHi: u32, p: f64): void {
  const scale = <T>(1.0 / (1.0 - p));
  for (let i = 0; i < n; i++) st<T>(y, i, uniform(seedLo, seedHi, <u64>i) >= p ? scale : <T>0);
}
export function dropout_mask_f32(y: usize, n: i32, seedLo: u32, seedHi: u32, p: f64): void { dropoutMask<f32>(y, n, seedLo, seedHi, p); }
export function dropout_mask_f64(y: usize, n: i32, seedLo: u32, seedHi: u32, p: f64): void { dropoutMask<f64>(y, n, seedLo, seedHi, p); }
