// Multiply-add, the one place the two kernel builds differ. The default build (asconfig target
// `release`) computes c + a·b as a multiply then an add, two roundings, the same bits on every
// engine. The relaxed build (target `relaxed`, relaxed-simd enabled) uses f32x4/f64x2.relaxed_madd:
// one fused rounding where the CPU has FMA (V8 on x64 with FMA3, arm64), faster but with other
// last bits. ASC_FEATURE_RELAXED_SIMD is a compile-time constant, so each build holds one branch.

/** c + a·b per lane of T (f32 or f64): fused in the relaxed build, mul then add in the default. */
@inline export function madd<T>(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return v128.relaxed_madd<T>(a, b, c);
  return v128.add<T>(c, v128.mul<T>(a, b));
}

/** Scalar c + a·b with madd's rounding (lane 0 of the vector op in the relaxed build), so scalar fallbacks and tails match the SIMD loops. */
@inline export function maddScalar<T>(a: T, b: T, c: T): T {
  if (ASC_FEATURE_RELAXED_SIMD) {
    return v128.extract_lane<T>(v128.relaxed_madd<T>(v128.splat<T>(a), v128.splat<T>(b), v128.splat<T>(c)), 0);
  }
  return c + a * b;
}
