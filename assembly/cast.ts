// Casts between int32 and the float types. Float → int32 truncates toward zero and saturates
// (NaN → 0, beyond ±2³¹ → the int32 limits), as wasm's trunc_sat does; int32 → float64 is
// exact, int32 → float32 rounds to nearest even above 2²⁴. Contract: (x, y, n), no aliasing.
import { ld, st, at } from './lanes';

// Scalar tails use the same SIMD instruction on lane 0, so a tail element rounds exactly as the main loop's.
@inline function truncF32(v: f32): i32 { return i32x4.extract_lane(i32x4.trunc_sat_f32x4_s(f32x4.splat(v)), 0); }
@inline function truncF64(v: f64): i32 { return i32x4.extract_lane(i32x4.trunc_sat_f64x2_s_zero(f64x2.splat(v)), 0); }

/** y[i] = trunc_sat(x[i]) (f32 → i32) */
export function cast_f32_i32(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(at<i32>(y, i), i32x4.trunc_sat_f32x4_s(v128.load(at<f32>(x, i))));
  for (; i < n; i++) st<i32>(y, i, truncF32(ld<f32>(x, i)));
}
/** y[i] = trunc_sat(x[i]) (f64 → i32); two lanes per step, stored as one i64 */
export function cast_f64_i32(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 2 <= n; i += 2) v128.store64_lane(at<i32>(y, i), i32x4.trunc_sat_f64x2_s_zero(v128.load(at<f64>(x, i))), 0);
  for (; i < n; i++) st<i32>(y, i, truncF64(ld<f64>(x, i)));
}
/** y[i] = f32(x[i]) (i32 → f32, round to nearest even) */
export function cast_i32_f32(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(at<f32>(y, i), f32x4.convert_i32x4_s(v128.load(at<i32>(x, i))));
  for (; i < n; i++) st<f32>(y, i, <f32>ld<i32>(x, i));
}
/** y[i] = f64(x[i]) (i32 → f64, exact) */
export function cast_i32_f64(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 2 <= n; i += 2) v128.store(at<f64>(y, i), f64x2.convert_low_i32x4_s(v128.load64_zero(at<i32>(x, i))));
  for (; i < n; i++) st<f64>(y, i, <f64>ld<i32>(x, i));
}
