// Elementwise unary kernels y = f(x). Contract for every kernel here:
// (x, y: pointers to n elements of T; n ≥ 0; p0, p1: the op's scalar parameters or unused);
// in-place (x == y) is allowed. f32 exp/log/tanh/sigmoid/softplus/erf run the vmath.ts lane code,
// tail included (a partly filled vector); f64 ones the musl scalar code. Derivatives are
// composed from these in src/ops; the fused VJP kernels at the end (tanh, sigmoid, relu)
// do g·f'(y) in one pass.
import { lanes, ld, st, at } from './lanes';
import { exp_s, log_s, sin_s, cos_s, tanh_s, sigmoid_s, softplus_s, erf_s } from './scalar';
import { exp4, log4, tanh4, sigmoid4, softplus4, erf4, loadTail, storeTail } from './vmath';
import { geluErf4, geluErfGrad4, geluErfTerm4, geluFromTerm4, geluGradFromTerm4 } from './gelu';
import { geluErf64, geluTanh64, geluDeriv } from './gelu64';

@inline const NEG = 0;
@inline const EXP = 1;
@inline const LOG = 2;
@inline const SQRT = 3;
@inline const ABS = 4;
@inline const SQUARE = 5;
@inline const SIN = 6;
@inline const COS = 7;
@inline const TANH = 8;
@inline const SIGMOID = 9;
@inline const RELU = 10;
@inline const SOFTPLUS = 11;
@inline const LEAKY = 12;
@inline const CLAMP = 13;
@inline const STEP = 14;
@inline const INSIDE = 15;
@inline const SIGN = 16;
@inline const RECIP = 17;
@inline const ERF = 18;
@inline const GELU_ERF = 19;
@inline const GELU_ERF_GRAD = 20;
@inline const GELU_TANH = 21;
@inline const GELU_TANH_GRAD = 22;

/** f(x) for one element; op is a constant after inlining, so the switch folds away. */
@inline function f<T>(op: i32, x: T, p0: T, p1: T): T {
  switch (op) {
    case NEG: return -x;
    case EXP: return exp_s<T>(x);
    case LOG: return log_s<T>(x);
    case SQRT: return sqrt<T>(x);
    case ABS: return abs<T>(x);
    case SQUARE: return x * x;
    case SIN: return sin_s<T>(x);
    case COS: return cos_s<T>(x);
    case TANH: return tanh_s<T>(x);
    case SIGMOID: return sigmoid_s<T>(x);
    case RELU: return x > <T>0 || x != x ? x : <T>0; // NaN stays NaN, as max(x, 0)
    case SOFTPLUS: return softplus_s<T>(x);
    case LEAKY: return x > <T>0 ? x : x * p0;
    case CLAMP: return min<T>(max<T>(x, p0), p1);
    case STEP: return x > <T>0 ? p0 : p1;
    case INSIDE: return x >= p0 && x <= p1 ? <T>1 : <T>0;
    case SIGN: return x > <T>0 ? <T>1 : x < <T>0 ? <T>-1 : <T>0;
    case RECIP: return <T>1 / x;
    case ERF: return erf_s<T>(x);
    // f64 GELU: gelu64.ts (accurate in the left tail, where these formulas cancel); f32 keeps its bits.
    case GELU_ERF:
      if (sizeof<T>() == 8) return <T>geluErf64(<f64>x);
      return x * <T>0.5 * (erf_s<T>(x * <T>Math.SQRT1_2) + <T>1);
    case GELU_ERF_GRAD:
      if (sizeof<T>() == 8) return <T>geluErfGrad64(<f64>x);
      return <T>0.5 * (erf_s<T>(x * <T>Math.SQRT1_2) + <T>1) + x * exp_s<T>(x * x * <T>-0.5) * <T>INV_SQRT_2PI;
    // The tanh form as a kernel, f32 rounded from the f64 value (public f32 gelu stays the composite).
    case GELU_TANH: return <T>geluTanh64(<f64>x);
    case GELU_TANH_GRAD: return <T>geluTanhGrad64(<f64>x);
  }
  return x;
}

/** gelu'(x) of the two forms in f64 (gelu64.ts computes it with the value). */
function geluErfGrad64(x: f64): f64 { geluErf64(x); return geluDeriv; }
function geluTanhGrad64(x: f64): f64 { geluTanh64(x); return geluDeriv; }

/** 1/√(2π): the normal density's constant (GELU's derivative). */
@inline const INV_SQRT_2PI: f64 = 0.3989422804014327;

/** Whether op's f32 form is vmath.ts lane code, which the tail must run too (same bits). */
@inline function vmath<T>(op: i32): bool {
  return (
    sizeof<T>() == 4 &&
    (op == EXP || op == LOG || op == TANH || op == SIGMOID || op == SOFTPLUS || op == ERF || op == GELU_ERF || op == GELU_ERF_GRAD)
  );
}

/** Whether op has a v128 form for T (the rest run the scalar loop over all n). */
@inline function simd<T>(op: i32): bool {
  return op == NEG || op == SQRT || op == ABS || op == SQUARE || op == RELU || op == CLAMP || op == RECIP || op == STEP || vmath<T>(op);
}

/** f(x) for one vector of lanes; only called when simd<T>(op). */
@inline function fv<T>(op: i32, x: v128, p0: v128, p1: v128): v128 {
  switch (op) {
    case EXP: return exp4(x);
    case LOG: return log4(x);
    case TANH: return tanh4(x);
    case SIGMOID: return sigmoid4(x);
    case SOFTPLUS: return softplus4(x);
    case ERF: return erf4(x);
    // Exact GELU and its derivative: gelu.ts's lane code (a rational erf, no exp in the forward).
    case GELU_ERF: return geluErf4(x);
    case GELU_ERF_GRAD: return geluErfGrad4(x);
    case NEG: return v128.neg<T>(x);
    case SQRT: return v128.sqrt<T>(x);
    case ABS: return v128.abs<T>(x);
    case SQUARE: return v128.mul<T>(x, x);
    case RELU: return v128.and(x, v128.or(v128.gt<T>(x, v128.splat<T>(<T>0)), v128.ne<T>(x, x))); // NaN stays NaN
    case CLAMP: return v128.min<T>(v128.max<T>(x, p0), p1);
    case STEP: return v128.bitselect(p0, p1, v128.gt<T>(x, v128.splat<T>(<T>0))); // relu's VJP mask: branch-free
    case RECIP: return v128.div<T>(v128.splat<T>(<T>1), x);
  }
  return x;
}

@inline function map<T>(op: i32, x: usize, y: usize, n: i32, p0d: f64, p1d: f64): void {
  const p0 = <T>p0d, p1 = <T>p1d;
  const L = lanes<T>();
  let i = 0;
  if (simd<T>(op)) {
    const v0 = v128.splat<T>(p0), v1 = v128.splat<T>(p1);
    for (; i + L <= n; i += L) v128.store(at<T>(y, i), fv<T>(op, v128.load(at<T>(x, i)), v0, v1));
    if (vmath<T>(op) && i < n) {
      storeTail(at<T>(y, i), fv<T>(op, loadTail(at<T>(x, i), n - i), v0, v1), n - i);
      return;
    }
  }
  for (; i < n; i++) st<T>(y, i, f<T>(op, ld<T>(x, i), p0, p1));
}

/** y = -x */
export function neg_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(NEG, x, y, n, p0, p1); }
export function neg_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(NEG, x, y, n, p0, p1); }
/** y = e^x (f32: x = q·ln2 + s, |s| ≤ ln2/2, degree-7 polynomial, 2^q in the exponent bits; ≤ 1 ulp) */
export function exp_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(EXP, x, y, n, p0, p1); }
export function exp_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(EXP, x, y, n, p0, p1); }
/** y = ln x (f32: x = 2^k·m, m ∈ [√½, √2), ln m = 2·atanh(s), s = (m − 1)/(m + 1), odd degree-9 polynomial; ≤ 1 ulp) */
export function log_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(LOG, x, y, n, p0, p1); }
export function log_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(LOG, x, y, n, p0, p1); }
/** y = √x */
export function sqrt_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SQRT, x, y, n, p0, p1); }
export function sqrt_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SQRT, x, y, n, p0, p1); }
/** y = |x| */
export function abs_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(ABS, x, y, n, p0, p1); }
export function abs_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(ABS, x, y, n, p0, p1); }
/** y = x² */
export function square_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SQUARE, x, y, n, p0, p1); }
export function square_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SQUARE, x, y, n, p0, p1); }
/** y = sin x */
export function sin_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SIN, x, y, n, p0, p1); }
export function sin_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SIN, x, y, n, p0, p1); }
/** y = cos x */
export function cos_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(COS, x, y, n, p0, p1); }
export function cos_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(COS, x, y, n, p0, p1); }
/** y = tanh x (f32: |x| < 0.625 odd degree-11 polynomial, else 1 − 2/(e^{2|x|} + 1), sign copied; ≤ 1 ulp) */
export function tanh_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(TANH, x, y, n, p0, p1); }
export function tanh_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(TANH, x, y, n, p0, p1); }
/** y = 1 / (1 + e^-x) (f32: e = e^{−|x|}, 1/(1 + e) or e/(1 + e), rounding of e and 1 + e corrected; ≤ 1 ulp) */
export function sigmoid_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SIGMOID, x, y, n, p0, p1); }
export function sigmoid_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SIGMOID, x, y, n, p0, p1); }
/** y = max(x, 0) */
export function relu_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(RELU, x, y, n, p0, p1); }
export function relu_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(RELU, x, y, n, p0, p1); }
/** y = ln(1 + e^x) (f32: max(x, 0) + ln(1 + e^{−|x|}) with the rounding of 1 + e corrected; ≤ 2 ulp) */
export function softplus_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SOFTPLUS, x, y, n, p0, p1); }
export function softplus_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SOFTPLUS, x, y, n, p0, p1); }
/** y = x > 0 ? x : p0·x */
export function leaky_relu_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(LEAKY, x, y, n, p0, p1); }
export function leaky_relu_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(LEAKY, x, y, n, p0, p1); }
/** y = min(max(x, p0), p1) */
export function clamp_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(CLAMP, x, y, n, p0, p1); }
export function clamp_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(CLAMP, x, y, n, p0, p1); }
/** y = x > 0 ? p0 : p1 (derivative mask of relu / leakyRelu) */
export function step_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(STEP, x, y, n, p0, p1); }
export function step_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(STEP, x, y, n, p0, p1); }
/** y = p0 ≤ x ≤ p1 ? 1 : 0 (derivative mask of clamp, as PyTorch) */
export function inside_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(INSIDE, x, y, n, p0, p1); }
export function inside_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(INSIDE, x, y, n, p0, p1); }
/** y = sign(x) ∈ {-1, 0, 1} (derivative of abs) */
export function sign_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(SIGN, x, y, n, p0, p1); }
export function sign_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(SIGN, x, y, n, p0, p1); }
/** y = 1 / x */
export function recip_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(RECIP, x, y, n, p0, p1); }
export function recip_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(RECIP, x, y, n, p0, p1); }
/** y = erf x (f32: vmath.ts lane code, ≤ 1.2 ulp; f64: piecewise fits in scalar.ts, ≤ 1 ulp) */
export function erf_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(ERF, x, y, n, p0, p1); }
export function erf_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(ERF, x, y, n, p0, p1); }

// Fused VJPs dx = g·f'(y) from the saved output y, in one pass instead of two or three.
// Contract: (y, g, dx: pointers to n elements of T; n ≥ 0); dx may alias y or g. The
// arithmetic is the composed rule's, in its order, so dx is bit-identical to it.
@inline const TANH_VJP = 0;
@inline const SIGMOID_VJP = 1;
@inline const RELU_VJP = 2;

@inline function df<T>(op: i32, y: T, g: T): T {
  switch (op) {
    case TANH_VJP: return g * (<T>1 - y * y);
    case SIGMOID_VJP: return g * (y * (<T>1 - y));
  }
  return y > <T>0 ? g : <T>0; // a select, as PyTorch's threshold_backward: an infinite or NaN g stops where y ≤ 0
}

@inline function dfv<T>(op: i32, y: v128, g: v128): v128 {
  const one = v128.splat<T>(<T>1);
  switch (op) {
    case TANH_VJP: return v128.mul<T>(g, v128.sub<T>(one, v128.mul<T>(y, y)));
    case SIGMOID_VJP: return v128.mul<T>(g, v128.mul<T>(y, v128.sub<T>(one, y)));
  }
  return v128.and(g, v128.gt<T>(y, v128.splat<T>(<T>0)));
}

@inline function vjp<T>(op: i32, y: usize, g: usize, dx: usize, n: i32): void {
  const L = lanes<T>();
  let i = 0;
  for (; i + L <= n; i += L) v128.store(at<T>(dx, i), dfv<T>(op, v128.load(at<T>(y, i)), v128.load(at<T>(g, i))));
  for (; i < n; i++) st<T>(dx, i, df<T>(op, ld<T>(y, i), ld<T>(g, i)));
}

/** dx = g·(1 − y²), y = tanh x */
export function tanh_vjp_f32(y: usize, g: usize, dx: usize, n: i32): void { vjp<f32>(TANH_VJP, y, g, dx, n); }
export function tanh_vjp_f64(y: usize, g: usize, dx: usize, n: i32): void { vjp<f64>(TANH_VJP, y, g, dx, n); }
/** dx = g·y(1 − y), y = sigmoid x */
export function sigmoid_vjp_f32(y: usize, g: usize, dx: usize, n: i32): void { vjp<f32>(SIGMOID_VJP, y, g, dx, n); }
export function sigmoid_vjp_f64(y: usize, g: usize, dx: usize, n: i32): void { vjp<f64>(SIGMOID_VJP, y, g, dx, n); }
/** dx = y > 0 ? g : 0, y = relu x */
export function relu_vjp_f32(y: usize, g: usize, dx: usize, n: i32): void { vjp<f32>(RELU_VJP, y, g, dx, n); }
export function relu_vjp_f64(y: usize, g: usize, dx: usize, n: i32): void { vjp<f64>(RELU_VJP, y, g, dx, n); }
/** y = ½x·(1 + erf(x/√2)), exact GELU in one pass (f32: gelu.ts's rational erf, within 5 ulp for x > −1; f64: gelu64.ts, x·Φ(x) within 3 ulp) */
export function gelu_erf_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(GELU_ERF, x, y, n, p0, p1); }
export function gelu_erf_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(GELU_ERF, x, y, n, p0, p1); }
/** y = Φ(x) + x·φ(x) = ½(1 + erf(x/√2)) + x·e^{−x²/2}/√(2π), the derivative of exact GELU (f32: gelu.ts's lane code; f64: gelu64.ts) */
export function gelu_erf_grad_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(GELU_ERF_GRAD, x, y, n, p0, p1); }
export function gelu_erf_grad_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(GELU_ERF_GRAD, x, y, n, p0, p1); }

/** GELU's derivative for one element (f64: gelu64.ts). */
@inline function geluGrad<T>(x: T): T { return f<T>(GELU_ERF_GRAD, x, <T>0, <T>0); }

/**
 * dx = g·(Φ(x) + x·φ(x)), exact GELU's VJP from its saved input in one pass (the product of
 * gelu_erf_grad and g, same bits). (x, g, dx: pointers to n elements of T; n ≥ 0; dx may alias x or g.)
 */
@inline function geluVjp<T>(x: usize, g: usize, dx: usize, n: i32): void {
  let i = 0;
  if (sizeof<T>() == 4) {
    for (; i + 4 <= n; i += 4) v128.store(at<T>(dx, i), f32x4.mul(v128.load(at<T>(g, i)), geluErfGrad4(v128.load(at<T>(x, i)))));
    if (i < n) storeTail(at<T>(dx, i), f32x4.mul(loadTail(at<T>(g, i), n - i), geluErfGrad4(loadTail(at<T>(x, i), n - i))), n - i);
    return;
  }
  for (; i < n; i++) st<T>(dx, i, ld<T>(g, i) * geluGrad<T>(ld<T>(x, i)));
}

/** dx = g·gelu'(x), exact GELU's VJP in one pass (f32: the lane code of gelu_erf_grad_f32; f64: gelu64.ts) */
export function gelu_erf_vjp_f32(x: usize, g: usize, dx: usize, n: i32): void { geluVjp<f32>(x, g, dx, n); }
export function gelu_erf_vjp_f64(x: usize, g: usize, dx: usize, n: i32): void { geluVjp<f64>(x, g, dx, n); }

/**
 * y = gelu(x) and d = gelu'(x) in one pass, erf computed once per element: the same bits as
 * gelu_erf and gelu_erf_grad (the same lane code, tail included; f64 the scalar code). A compiled
 * step runs it in the forward pass when x is otherwise only read by gelu_erf_vjp, which then
 * becomes g·d (src/compile/gelu-grad.ts). (x, y, d: n elements of T; d may alias x; y must not alias d.)
 */
@inline function geluWithGrad<T>(x: usize, y: usize, d: usize, n: i32): void {
  let i = 0;
  if (sizeof<T>() == 4) {
    for (; i + 4 <= n; i += 4) {
      const v = v128.load(at<T>(x, i)), e = geluErfTerm4(v);
      v128.store(at<T>(y, i), geluFromTerm4(v, e));
      v128.store(at<T>(d, i), geluGradFromTerm4(v, e));
    }
    if (i < n) {
      const v = loadTail(at<T>(x, i), n - i), e = geluErfTerm4(v);
      storeTail(at<T>(y, i), geluFromTerm4(v, e), n - i);
      storeTail(at<T>(d, i), geluGradFromTerm4(v, e), n - i);
    }
    return;
  }
  for (; i < n; i++) {
    const v = ld<T>(x, i);
    st<T>(y, i, <T>geluErf64(<f64>v));
    st<T>(d, i, <T>geluDeriv);
  }
}

/** y = gelu(x), d = gelu'(x) in one pass (the bits of gelu_erf_f32 and gelu_erf_grad_f32); d may alias x, not y */
export function gelu_erf_with_grad_f32(x: usize, y: usize, d: usize, n: i32): void { geluWithGrad<f32>(x, y, d, n); }
export function gelu_erf_with_grad_f64(x: usize, y: usize, d: usize, n: i32): void { geluWithGrad<f64>(x, y, d, n); }

/** y = x·σ(w), w = 2√(2/π)(x + 0.044715x³): GELU's tanh form ½x(1 + tanh(w/2)) without its cancellation (gelu64.ts; f32: that rounded) */
export function gelu_tanh_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(GELU_TANH, x, y, n, p0, p1); }
export function gelu_tanh_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(GELU_TANH, x, y, n, p0, p1); }
/** y = σ(w) + x·w'·σ(w)(1 − σ(w)), the derivative of gelu_tanh (gelu64.ts; f32: that rounded) */
export function gelu_tanh_grad_f32(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f32>(GELU_TANH_GRAD, x, y, n, p0, p1); }
export function gelu_tanh_grad_f64(x: usize, y: usize, n: i32, p0: f64, p1: f64): void { map<f64>(GELU_TANH_GRAD, x, y, n, p0, p1); }
