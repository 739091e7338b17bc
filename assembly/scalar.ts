// Scalar math for f32 and f64, computed in wasm, so results never depend on the JS engine's
// Math. f64: AssemblyScript's NativeMath, ported from musl (correctly rounded or within 1 ulp).
// f32 exp, log, tanh, sigmoid, softplus and erf: lane 0 of the vector code in vmath.ts, so a scalar
// use anywhere gives the same bits as the SIMD kernels; the rest use NativeMathf.
import { exp4, log4, tanh4, sigmoid4, softplus4, erf4 } from './vmath';
// The build uses shrinkLevel 1 for size, which makes NativeMath pick its table-free exp, log and
// pow. f64 exp is named here as the table-driven one: it keeps its bits and its accuracy (the
// table-free exp is an ulp off at 1, e^1). f64 log and pow take the table-free versions (within
// 1 ulp; 8 KB of tables saved); f32 pow keeps its small table. The library marks these @inline:
// the wrappers keep one copy of each.
import { exp_lut, powf_lut } from '~lib/util/math';
function exp_f64(x: f64): f64 { return exp_lut(x); }
function pow_f32(x: f32, y: f32): f32 { return powf_lut(x, y); }
function pow_f64(x: f64, y: f64): f64 { return NativeMath.pow(x, y); }

/** f(x) through lane 0 of a vector function. */
@inline function lane0(v: v128): f32 { return f32x4.extract_lane(v, 0); }
// One out-of-line copy of each f32 scalar: kernels inline the vector function in their SIMD main
// loop and call these in their scalar tails, instead of inlining a second copy there.
function exp1(x: f32): f32 { return lane0(exp4(f32x4.splat(x))); }
function log1(x: f32): f32 { return lane0(log4(f32x4.splat(x))); }
function tanh1(x: f32): f32 { return lane0(tanh4(f32x4.splat(x))); }
function sigmoid1(x: f32): f32 { return lane0(sigmoid4(f32x4.splat(x))); }
function softplus1(x: f32): f32 { return lane0(softplus4(f32x4.splat(x))); }
function erf1(x: f32): f32 { return lane0(erf4(f32x4.splat(x))); }

/** exp(x) */
@inline export function exp_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>exp1(<f32>x);
  return <T>exp_f64(<f64>x);
}
/** ln(x) */
@inline export function log_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>log1(<f32>x);
  return <T>NativeMath.log(<f64>x);
}
/** ln(1 + x), accurate near 0 */
@inline export function log1p_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>NativeMathf.log1p(<f32>x);
  return <T>NativeMath.log1p(<f64>x);
}
// sin and cos of f32 go through the f64 functions (an f32 argument is exact in f64, and the f64
// result rounds to f32 within half an ulp and a hair): NativeMathf's own large-argument reduction
// returned wrong values for every |x| in [2^89, 2^90), e.g. sinf(7e26) = 0.963 where it is 0.586.
/** sin(x) with full range reduction */
@inline export function sin_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T><f32>NativeMath.sin(<f64>x);
  return <T>NativeMath.sin(<f64>x);
}
/** cos(x) with full range reduction */
@inline export function cos_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T><f32>NativeMath.cos(<f64>x);
  return <T>NativeMath.cos(<f64>x);
}
/** tanh(x) */
@inline export function tanh_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>tanh1(<f32>x);
  return <T>NativeMath.tanh(<f64>x);
}
/** x^y with C99 pow semantics (Annex F.10.4.4); the library's pow, with its special cases corrected first. */
@inline export function pow_s<T>(x: T, y: T): T {
  // The library follows JS Math.pow here: 1^y and (−1)^±∞ are NaN there, 1 in C99 and PyTorch.
  if (x == <T>1 || (x == <T>-1 && abs<T>(y) == <T>Infinity)) return <T>1;
  // x ≤ 0 with a non-integer y, decided here exactly (trunc is exact): the f64 pow tests whether
  // |y| < 2^21 is an integer in y's high word only, so y = 1 + 2^-52 passed as an odd integer and
  // (−2)^y came out −2.0000000000000004, (−∞)^y −∞, (−0)^y −0. Finite x < 0 gives NaN; ±0 and −∞
  // give the power of +0 and +∞, unsigned as C99 has it without an odd y (PyTorch's shortcuts for
  // a number exponent give (−0)^0.5 = −0 and (−0)^−0.5 = −∞; we follow C99). A NaN y gives NaN.
  if (x <= <T>0 && trunc<T>(y) != y) {
    if (x != <T>0 && x != <T>-Infinity) return <T>NaN;
    x = abs<T>(x);
  }
  if (sizeof<T>() == 4) return <T>pow_f32(<f32>x, <f32>y);
  return <T>pow_f64(<f64>x, <f64>y);
}
/** 1 / (1 + e^-x), evaluated on the side that cannot overflow. */
@inline export function sigmoid_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>sigmoid1(<f32>x);
  if (x >= <T>0) return <T>1 / (<T>1 + exp_s<T>(-x));
  const e = exp_s<T>(x);
  return e / (<T>1 + e);
}
/** ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|), stable for large |x|. */
@inline export function softplus_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>softplus1(<f32>x);
  return max<T>(x, <T>0) + log1p_s<T>(exp_s<T>(-abs<T>(x)));
}

/** erf x for f64: |x| < 1: x + x·A(x²); 1 ≤ |x| < 6: 1 − e^{−x²}·B_i(1/|x| − m_i) on three pieces; then 1. */
/** A, B_i: Chebyshev fits (mpmath chebyfit) of erf(x)/x − 1 and erfc(x)·e^{x²}; within 1 ulp of the exact value. */
function erf64(x: f64): f64 {
  const a = abs<f64>(x);
  let y: f64;
  if (a < 1) {
    const z = a * a;
    y = a + a * (((((((((((((5.957176147748911e-11) * z + -1.1372848856791674e-09) * z + 1.4659775274047436e-08) * z + -1.6350312701054695e-07) * z + 1.6461000484121368e-06) * z + -1.4925595266831182e-05) * z + 0.0001205533111164271) * z + -0.000854832698083379) * z + 0.0052239776248180145) * z + -0.026866170645076792) * z + 0.11283791670954879) * z + -0.3761263890318375) * z + 0.1283791670955126);
  } else if (a < 1.75) {
    const u = 1 / a - 0.7857142857142857;
    y = 1 - exp_f64(-a * a) * ((((((((((((((((0.0010354424102351494) * u + -0.0028406951028330713) * u + 0.0043199430891636015) * u + -0.005004766753817485) * u + 0.004458789869312571) * u + -0.0021646242484267783) * u + -0.002183136825700243) * u + 0.00836790916425223) * u + -0.01521972468427537) * u + 0.01998974706856139) * u + -0.017486248867713085) * u + -0.0010863370768681218) * u + 0.04965472678149703) * u + -0.1492500827768305) * u + 0.3305180846605498) * u + 0.3631315440187196);
  } else if (a < 3.0) {
    const u = 1 / a - 0.45238095238095233;
    y = 1 - exp_f64(-a * a) * ((((((((((((((-0.26131447742425284) * u + 0.12743966551758948) * u + 0.023292539813526216) * u + -0.10916062931229423) * u + 0.1279486224275914) * u + -0.08753898284280542) * u + 0.012618926745625245) * u + 0.06309369185565061) * u + -0.10567914030923979) * u + 0.08758167256855726) * u + 0.008424723383109463) * u + -0.1878135654955613) * u + 0.4449803380283175) * u + 0.2346306826060696);
  } else if (a < 6.0) {
    const u = 1 / a - 0.25;
    y = 1 - exp_f64(-a * a) * ((((((((((((((4.735055717617932) * u + -0.4111857840928973) * u + -1.5024726689170556) * u + 1.2258688135967513) * u + -0.3384313517436377) * u + -0.2749431858232902) * u + 0.38662644615706565) * u + -0.16998838064332905) * u + -0.09627714189725453) * u + 0.21249144479710058) * u + -0.11290793903240033) * u + -0.1613934793676146) * u + 0.5181360975203433) * u + 0.13699945762506138);
  } else y = a == a ? 1 : a; // NaN stays NaN
  return copysign<f64>(y, x);
}

/** erf(x) */
@inline export function erf_s<T>(x: T): T {
  if (sizeof<T>() == 4) return <T>erf1(<f32>x);
  return <T>erf64(<f64>x);
}
