// Counter-based random numbers: element i of a stream is a pure function of (seed, i), the
// SplitMix64 finaliser of seed ⊕ i·φ, so any slice can be regenerated (dropout replay in
// checkpointing) and every runtime and thread count gives the same bits.
import { st } from './lanes';
import { log_s, cos_s } from './scalar';
import { uniform, streamStart, bitsAt, GOLDEN } from './counter';

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

/**
 * The keep threshold of uniform(seed, i) ≥ p on the 53-bit integer k = bits >> 11: uniform is
 * k·2⁻⁵³ exactly, so it is ≥ p iff k ≥ ⌈p·2⁵³⌉ (every k when p ≤ 0, none when p ≥ 1 or NaN).
 */
@inline function keepFrom(p: f64): u64 {
  if (p > 0) return p < 1 ? <u64>Math.ceil(p * 9007199254740992.0) : <u64>1 << 53;
  return p <= 0 ? 0 : <u64>1 << 53;
}

/**
 * Dropout mask: y[i] = U(seed, i) ≥ p ? 1/(1−p) : 0 (inverted dropout; p < 1). The same bits as
 * that compare, without its u64 → f64 conversion (the cost of the old loop, ~7×): the counter is
 * stepped instead of recomputed, the compare is on integers (keepFrom), and the value is the
 * scale's bits masked.
 */
@inline function dropoutMask<T>(y: usize, n: i32, seedLo: u32, seedHi: u32, p: f64): void {
  const scale = <T>(1.0 / (1.0 - p));
  const t = keepFrom(p);
  let z = streamStart(seedLo, seedHi);
  if (sizeof<T>() == 4) {
    const sb = reinterpret<u32>(<f32>scale);
    for (let i = 0; i < n; i++) {
      z += GOLDEN;
      store<u32>(y + (<usize>i << 2), sb & (0 - <u32>(bitsAt(z) >> 11 >= t)));
    }
  } else {
    const sb = reinterpret<u64>(<f64>scale);
    for (let i = 0; i < n; i++) {
      z += GOLDEN;
      store<u64>(y + (<usize>i << 3), sb & (0 - <u64>(bitsAt(z) >> 11 >= t)));
    }
  }
}
// p before the seed: the seed is the launch's per-call tail (compile replays draw it afresh), while
// p is an ordinary argument, so a p that changes between calls shows as a changed schedule.
export function dropout_mask_f32(y: usize, n: i32, p: f64, seedLo: u32, seedHi: u32): void { dropoutMask<f32>(y, n, seedLo, seedHi, p); }
export function dropout_mask_f64(y: usize, n: i32, p: f64, seedLo: u32, seedHi: u32): void { dropoutMask<f64>(y, n, seedLo, seedHi, p); }
