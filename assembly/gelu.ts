// Exact GELU ½x·(1 + erf(x/√2)) on f32x4 lanes, for the gelu_erf kernels and the fused
// gelu_erf_vjp in unary.ts. GELU only needs erf to an absolute accuracy near f32's rounding of 1 + erf
// (its result is x·Φ(x), Φ = ½(1 + erf)), so instead of erf4's two branches (a polynomial below 1,
// e^{−c²}·B(1/c) above, both computed on every lane) it uses one rational function without exp:
// erf(c) ≈ c·P(c²)/Q(c²) on [0, 3.92], P degree 6 and Q degree 5, fitted here for minimax absolute
// error (Lawson's iteration; 6e-9 in exact arithmetic), 1 from 3.92 on (where erf rounds to 1 in
// f32). In f32 arithmetic it is within 4e-7 of erf (≤ 7 ulp of values near 1); GELU within 5 ulp
// for x > −1, and to the same absolute error as before in the left tail, where 1 + erf cancels.
// Plain IEEE add, mul and div only (no FMA, no relaxed SIMD), so every engine returns the same bits.
import { exp4 } from './vmath';

// Constants in static memory, splatted by one load each (see vmath.ts: V8 rebuilds a v128.const at every use).
const P0 = memory.data<f32>([1.128379225730896]);
const P1 = memory.data<f32>([0.18202243745326996]);
const P2 = memory.data<f32>([0.05477244034409523]);
const P3 = memory.data<f32>([0.003833462717011571]);
const P4 = memory.data<f32>([0.00041519664227962494]);
const P5 = memory.data<f32>([5.706179763365071e-6]);
const P6 = memory.data<f32>([-1.823001483103326e-8]);
const Q1 = memory.data<f32>([0.4946472644805908]);
const Q2 = memory.data<f32>([0.11342013627290726]);
const Q3 = memory.data<f32>([0.015554736368358135]);
const Q4 = memory.data<f32>([0.0013521260116249323]);
const Q5 = memory.data<f32>([7.2797505708877e-5]);
const ONE = memory.data<f32>([1]);
const HALF = memory.data<f32>([0.5]);
const NEG_HALF = memory.data<f32>([-0.5]);
const SQRT_HALF = memory.data<f32>([0.7071067690849304]); // <f32>Math.SQRT1_2, as the composite
const INV_SQRT_2PI = memory.data<f32>([0.3989422917366028]); // <f32>(1/√(2π))
const ERF_ONE = memory.data<f32>([3.92]);
const FOUR = memory.data<f32>([4]);
const SIGN = memory.data<i32>([0x80000000]);

@inline function k(p: usize): v128 { return v128.load32_splat(p); }
@inline function add(a: v128, b: v128): v128 { return f32x4.add(a, b); }
@inline function mul(a: v128, b: v128): v128 { return f32x4.mul(a, b); }

/** erf c per lane for GELU (absolute error ≤ 4e-7, see above); NaN stays NaN, the sign is kept. */
@inline function erfRational4(c: v128): v128 {
  const a = f32x4.pmin(f32x4.abs(c), k(FOUR)); // 4 < |c| ? 4 : |c|: min's value (NaN stays NaN), one instruction on x86
  const z = mul(a, a);
  let p = add(mul(k(P6), z), k(P5));
  p = add(mul(p, z), k(P4));
  p = add(mul(p, z), k(P3));
  p = add(mul(p, z), k(P2));
  p = add(mul(p, z), k(P1));
  p = add(mul(p, z), k(P0));
  let q = add(mul(k(Q5), z), k(Q4));
  q = add(mul(q, z), k(Q3));
  q = add(mul(q, z), k(Q2));
  q = add(mul(q, z), k(Q1));
  q = add(mul(q, z), k(ONE));
  const y = v128.bitselect(k(ONE), f32x4.div(mul(a, p), q), f32x4.ge(a, k(ERF_ONE)));
  return v128.or(y, v128.and(c, k(SIGN)));
}

/** erf(x/√2) per lane: the term GELU and its derivative share (gelu_erf_with_grad computes it once for both). */
@inline export function geluErfTerm4(x: v128): v128 {
  return erfRational4(mul(x, k(SQRT_HALF)));
}

/** ½x·(1 + e) per lane, e = geluErfTerm4(x). */
@inline export function geluFromTerm4(x: v128, e: v128): v128 {
  return mul(mul(x, k(HALF)), add(e, k(ONE)));
}

/** ½(1 + e) + x·e^{−x²/2}/√(2π) per lane, e = geluErfTerm4(x). */
@inline export function geluGradFromTerm4(x: v128, e: v128): v128 {
  const cdf = mul(k(HALF), add(e, k(ONE)));
  const pdf = mul(exp4(mul(mul(x, x), k(NEG_HALF))), k(INV_SQRT_2PI));
  return add(cdf, mul(x, pdf));
}

/** ½x·(1 + erf(x/√2)) per lane, in the rounding order of mul(mul(x, ½), add(erf(mul(x, √½)), 1)). */
@inline export function geluErf4(x: v128): v128 {
  return geluFromTerm4(x, geluErfTerm4(x));
}

/** Φ(x) + x·φ(x) per lane: ½(1 + erf(x/√2)) + x·e^{−x²/2}/√(2π), GELU's derivative. */
@inline export function geluErfGrad4(x: v128): v128 {
  return geluGradFromTerm4(x, geluErfTerm4(x));
}
