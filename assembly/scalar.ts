// Scalar math for f32 and f64, computed in wasm, so results never depend on the JS engine's
// Math. f64: AssemblyScript's NativeMath, ported from musl (correctly rounded or within 1 ulp).
// f32 exp, log, tanh, sigmoid and softplus: lane 0 of the vector code in vmath.ts, so a scalar
// use anywhere gives the same bits as the SIMD kernels; the rest use NativeMathf.
import { exp4, log4, tanh4, sigmoid4, softplus4 } from './vmath';

/** f(x) through lane 0 of a vector function. */
@inline function lane0(v: v128): f32 { return f32x4.extract_lane(v, 0); }

/** exp(x) */
@inline export function exp_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>lane0(exp4(f32x4.splat(<f32>x)));
  return <T>NativeMath.exp(<f64>x);
}
/** ln(x) */
@inline export function log_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>lane0(log4(f32x4.splat(<f32>x)));
  return <T>NativeMath.log(<f64>x);
}
/** ln(1 + x), accurate near 0 */
@inline export function log1p_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>NativeMathf.log1p(<f32>x);
  return <T>NativeMath.log1p(<f64>x);
}
/** sin(x) with full range reduction */
@inline export function sin_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>NativeMathf.sin(<f32>x);
  return <T>NativeMath.sin(<f64>x);
}
/** cos(x) with full range reduction */
@inline export function cos_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>NativeMathf.cos(<f32>x);
  return <T>NativeMath.cos(<f64>x);
}
/** tanh(x) */
@inline export function tanh_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>lane0(tanh4(f32x4.splat(<f32>x)));
  return <T>NativeMath.tanh(<f64>x);
}
/** x^y with C99 pow semantics */
@inline export function pow_s<T>(x: T, y: T): T {
  if (sizeof<T>() == 4) return <T>NativeMathf.pow(<f32>x, <f32>y);
  return <T>NativeMath.pow(<f64>x, <f64>y);
}
/** 1 / (1 + e^-x), evaluated on the side that cannot overflow. */
@inline export function sigmoid_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>lane0(sigmoid4(f32x4.splat(<f32>x)));
  if (x >= <T>0) return <T>1 / (<T>1 + exp_s<T>(-x));
  const e = exp_s<T>(x);
  return e / (<T>1 + e);
}
/** ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|), stable for large |x|. */
@inline export function softplus_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>lane0(softplus4(f32x4.splat(<f32>x)));
  return max<T>(x, <T>0) + log1p_s<T>(exp_s<T>(-abs<T>(x)));
}
