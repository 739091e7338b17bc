// Vectorised f32 math on f32x4 lanes: exp, log, tanh, sigmoid, softplus, erf. Plain IEEE add, mul
// and div only (no FMA, no relaxed SIMD), so every engine returns the same bits; kernel tails
// run the same lane code on a partly filled vector, so a result never depends on where an
// element sits. Max errors over all 2^32 f32 inputs against float64 Math rounded to f32
// (VMATH_EXHAUSTIVE=1 npx vitest run test/vmath.test.ts): exp, log, tanh, sigmoid 1 ulp,
// softplus 2 ulp. Error-free transformations (Fast2Sum: s = a + b, e = b − (s − a) for
// |a| ≥ |b|, Dekker 1971) keep the low-order bits a plain evaluation would round away.

// Constants live in static memory and are splatted by one load each (v128.load32_splat): V8
// rebuilds a v128.const with three instructions at every use, which doubled these kernels' cost.
const ZERO = memory.data<f32>([0]);
const ONE = memory.data<f32>([1]);
const TWO = memory.data<f32>([2]);
const HALF = memory.data<f32>([0.5]);
const TEN = memory.data<f32>([10]);
const INF = memory.data<f32>([Infinity]);
const NEG_INF = memory.data<f32>([-Infinity]);
const QNAN = memory.data<f32>([NaN]);
const EXP_MIN = memory.data<f32>([-104]); // e^x rounds to 0 below
const EXP_MAX = memory.data<f32>([89]); // and to ∞ above
const TANH_SMALL = memory.data<f32>([0.625]);
const MIN_NORMAL = memory.data<f32>([1.1754943508222875e-38]);
const TWO_25 = memory.data<f32>([33554432]);
const BIAS = memory.data<i32>([127]);
const SIGN = memory.data<i32>([0x80000000]);
const ROUND_BITS = memory.data<i32>([0x4b400000]);
const MANT = memory.data<i32>([0x007fffff]);
const SQRT_HALF_BITS = memory.data<i32>([0x3f3504f3]);
const LOG_SHIFT = memory.data<i32>([0x3f800000 - 0x3f3504f3]);
const EXP_BIAS = memory.data<i32>([0x7f]);
const SUBNORMAL_SHIFT = memory.data<i32>([25]);

/** The 32-bit constant at p in every lane. */
@inline function k(p: usize): v128 { return v128.load32_splat(p); }
@inline function add(a: v128, b: v128): v128 { return f32x4.add(a, b); }
@inline function sub(a: v128, b: v128): v128 { return f32x4.sub(a, b); }
@inline function mul(a: v128, b: v128): v128 { return f32x4.mul(a, b); }
@inline function div(a: v128, b: v128): v128 { return f32x4.div(a, b); }

/** 2^n for integer lanes n in [−126, 127], built in the exponent field. */
@inline function pow2(n: v128): v128 { return i32x4.shl(i32x4.add(n, k(BIAS)), 23); }

// exp: x = q·ln2 + s, |s| ≤ ln2/2; ln2 split so q·LN2_HI is exact for |q| < 512 (9 zero bits).
const LOG2E = memory.data<f32>([1.4426950216293335]);
const LN2_HI = memory.data<f32>([0.693145751953125]);
const LN2_LO = memory.data<f32>([1.428606765330187e-6]);
// e^s ≈ 1 + s + s²·(½ + E3·s + … + E7·s⁵), minimax on [−ln2/2, ln2/2] (SLEEF's expf, Shibata).
const E3 = memory.data<f32>([0.1666666716337204]);
const E4 = memory.data<f32>([0.041666485369205475]);
const E5 = memory.data<f32>([0.008333360776305199]);
const E6 = memory.data<f32>([0.0013930435525253415]);
const E7 = memory.data<f32>([0.00019852761761285365]);

/** The low-order part of the last expLo4 call: e^x ≈ y + expLo (0 where y is 0 or ∞). */
let expLo: v128 = i32x4.splat(0);
/** 1.5·2^23: adding it rounds |v| < 2^22 to an integer (ties to even) held in the low mantissa bits. */
const ROUND = memory.data<f32>([12582912]);

/**
 * e^x per lane, within 0.7 ulp of the exact value on normal results. The unscaled value is
 * formed as (1 + s) + small with Fast2Sum, so only the last addition rounds; 2^q is applied in
 * two halves so results reaching the subnormal range or overflowing round once, as they should.
 * With `lo`, also leaves that last rounding error, scaled, in expLo.
 */
@inline function expCore(x: v128, lo: bool): v128 {
  const xc = f32x4.pmin(f32x4.pmax(x, k(EXP_MIN)), k(EXP_MAX)); // pmin/pmax keep a NaN x
  const qr = add(mul(xc, k(LOG2E)), k(ROUND));
  const q = sub(qr, k(ROUND)); // nearest integer to x·log2(e)
  const s1 = sub(xc, mul(q, k(LN2_HI))); // exact
  const m = mul(q, k(LN2_LO));
  const s = sub(s1, m);
  const sLo = sub(sub(s1, s), m); // what s lost to rounding
  let p = add(mul(k(E7), s), k(E6));
  p = add(mul(p, s), k(E5));
  p = add(mul(p, s), k(E4));
  p = add(mul(p, s), k(E3));
  p = add(mul(p, s), k(HALF));
  const w = add(mul(mul(s, s), p), sLo);
  const h = add(k(ONE), s);
  const t = add(sub(k(ONE), h), s); // 1 + s = h + t exactly
  const r = add(t, w);
  const u = add(h, r);
  const n = i32x4.sub(qr, k(ROUND_BITS)); // q as an integer
  const na = i32x4.shr_s(n, 1);
  const pa = pow2(na), pb = pow2(i32x4.sub(n, na));
  const y = mul(mul(u, pa), pb);
  if (lo) {
    const uLo = add(sub(h, u), r);
    expLo = v128.and(mul(mul(uLo, pa), pb), f32x4.lt(f32x4.abs(y), k(INF)));
  }
  return y;
}

/** e^x per lane, within 1 ulp. */
@inline export function exp4(x: v128): v128 { return expCore(x, false); }

/** e^x per lane as exp4, with the low-order part of the result left in expLo. */
@inline function expLo4(x: v128): v128 { return expCore(x, true); }

// log: x = 2^k·(1 + f), 1 + f ∈ [√2/2, √2); ln(1 + f) = 2·atanh(f/(2 + f)) as in FreeBSD's
// e_logf.c (Sun Microsystems, 1993): the same coefficients, evaluated lane-wise.
const LG1 = memory.data<f32>([0.6666666269302368]);
const LG2 = memory.data<f32>([0.40000972151756287]);
const LG3 = memory.data<f32>([0.2849878668785095]);
const LG4 = memory.data<f32>([0.24279078841209412]);
const LOG_HI = memory.data<f32>([0.6931381225585938]);
const LOG_LO = memory.data<f32>([9.05800061445916e-6]);

/** ln x per lane, within 1 ulp; ln 0 = −∞, ln(x < 0) = NaN, ln ∞ = ∞, NaN stays NaN. */
@inline export function log4(x: v128): v128 {
  const tiny = f32x4.lt(x, k(MIN_NORMAL)); // subnormal (or ≤ 0): scale up by 2^25
  const xs = v128.bitselect(mul(x, k(TWO_25)), x, tiny);
  const ix = i32x4.add(xs, k(LOG_SHIFT));
  const e = i32x4.sub(i32x4.sub(i32x4.shr_s(ix, 23), k(EXP_BIAS)), v128.and(tiny, k(SUBNORMAL_SHIFT)));
  const f = sub(i32x4.add(v128.and(ix, k(MANT)), k(SQRT_HALF_BITS)), k(ONE));
  const s = div(f, add(k(TWO), f));
  const z = mul(s, s), w = mul(z, z);
  const r = add(mul(z, add(k(LG1), mul(w, k(LG3)))), mul(w, add(k(LG2), mul(w, k(LG4)))));
  const hfsq = mul(mul(k(HALF), f), f);
  const dk = f32x4.convert_i32x4_s(e);
  let y = add(sub(add(mul(s, add(hfsq, r)), mul(dk, k(LOG_LO))), hfsq), f);
  y = add(y, mul(dk, k(LOG_HI)));
  y = v128.bitselect(k(NEG_INF), y, f32x4.eq(x, k(ZERO)));
  y = v128.bitselect(k(QNAN), y, f32x4.lt(x, k(ZERO)));
  return v128.bitselect(y, x, f32x4.lt(x, k(INF))); // ∞ and NaN map to themselves
}

// tanh |x| < 0.625: odd polynomial x + x³·P(x²), P minimax for relative error (fitted here).
const T0 = memory.data<f32>([-0.3333328366279602]);
const T1 = memory.data<f32>([0.13331490755081177]);
const T2 = memory.data<f32>([-0.05374349653720856]);
const T3 = memory.data<f32>([0.020650586113333702]);
const T4 = memory.data<f32>([-0.005717043299227953]);

/**
 * tanh x per lane, within 1 ulp: |x| < 0.625 an odd degree-11 polynomial, otherwise
 * 1 − 2/(e^{2|x|} + 1) (|x| capped at 10, where tanh rounds to 1); the sign is copied back,
 * so tanh(−0) = −0. exp4's half-ulp accuracy is what keeps this within 1 ulp uncorrected.
 */
@inline export function tanh4(x: v128): v128 {
  const a = f32x4.abs(x);
  const z = mul(a, a);
  let p = add(mul(k(T4), z), k(T3));
  p = add(mul(p, z), k(T2));
  p = add(mul(p, z), k(T1));
  p = add(mul(p, z), k(T0));
  const small = add(a, mul(mul(a, z), p));
  const isSmall = f32x4.lt(a, k(TANH_SMALL));
  // All four lanes small (the usual case for a hidden layer's pre-activations): the select below
  // would pick `small` in every lane, so skip exp4 and the division (the same bits, ~2× faster).
  if (v128.all_true<i32>(isSmall)) return v128.or(small, v128.and(x, k(SIGN)));
  const big = sub(k(ONE), div(k(TWO), add(exp4(mul(k(TWO), f32x4.pmin(a, k(TEN)))), k(ONE))));
  const y = v128.bitselect(small, big, isSmall);
  return v128.or(y, v128.and(x, k(SIGN)));
}

/**
 * 1/(1 + e^−x) per lane, within 1 ulp: with e = e^−|x| (never overflows), 1/(1 + e) for
 * x ≥ 0 and e/(1 + e) for x < 0, the rounding of 1 + e and of e itself corrected to first order.
 */
@inline export function sigmoid4(x: v128): v128 {
  const e = expLo4(f32x4.neg(f32x4.abs(x)));
  const neg = f32x4.lt(x, k(ZERO));
  const num = v128.bitselect(e, k(ONE), neg);
  const numLo = v128.and(expLo, neg);
  const d = add(k(ONE), e);
  const t = add(add(sub(k(ONE), d), e), expLo); // 1 + e = d + t
  const r = div(num, d);
  return add(r, div(sub(numLo, mul(r, t)), d)); // (num + numLo)/(d + t)
}

/**
 * ln(1 + e^x) = max(x, 0) + ln(1 + e) with e = e^−|x|, per lane, within 2 ulp; ln(1 + e) is
 * ln(u) for u = 1 + e plus the correction (e − (u − 1))/u for the rounding of u (Goldberg 1991).
 */
@inline export function softplus4(x: v128): v128 {
  const e = expLo4(f32x4.neg(f32x4.abs(x)));
  const u = add(k(ONE), e);
  const c = div(add(sub(e, sub(u, k(ONE))), expLo), u);
  return add(f32x4.max(x, k(ZERO)), add(log4(u), c));
}

// erf: |x| < 1: x + x·A(x²); 1 ≤ |x| < 4: 1 − e^{−x²}·B(1/|x| − BM); |x| ≥ 4: 1 (erf rounds to 1
// in f32 from 3.92). A and B are Chebyshev fits (mpmath chebyfit, degree 6 and 9) of erf(x)/x − 1
// on x² ∈ [0, 1] and of erfc(x)·e^{x²} on 1/x ∈ [¼, 1]: within 1.2 ulp of the float64 value.
const EA0 = memory.data<f32>([7.875874871388078e-05]);
const EA1 = memory.data<f32>([-0.000801686430349946]);
const EA2 = memory.data<f32>([0.005189087241888046]);
const EA3 = memory.data<f32>([-0.02685421146452427]);
const EA4 = memory.data<f32>([0.11283594369888306]);
const EA5 = memory.data<f32>([-0.3761262595653534]);
const EA6 = memory.data<f32>([0.12837916612625122]);
const EB0 = memory.data<f32>([0.025032542645931244]);
const EB1 = memory.data<f32>([-0.007090389262884855]);
const EB2 = memory.data<f32>([-0.026610223576426506]);
const EB3 = memory.data<f32>([0.044660355895757675]);
const EB4 = memory.data<f32>([-0.04697577655315399]);
const EB5 = memory.data<f32>([0.023258429020643234]);
const EB6 = memory.data<f32>([0.04376821964979172]);
const EB7 = memory.data<f32>([-0.17239350080490112]);
const EB8 = memory.data<f32>([0.3822837471961975]);
const EB9 = memory.data<f32>([0.3059529960155487]);
const BM = memory.data<f32>([0.625]);
const FOUR = memory.data<f32>([4]);

/** erf x per lane, within 1.2 ulp; erf(±∞) = ±1, NaN stays NaN, the sign of ±0 is kept. */
@inline export function erf4(x: v128): v128 {
  const a = f32x4.abs(x), z = mul(a, a);
  const small = add(a, mul(a, add(mul(add(mul(add(mul(add(mul(add(mul(add(mul(k(EA0), z), k(EA1)), z), k(EA2)), z), k(EA3)), z), k(EA4)), z), k(EA5)), z), k(EA6))));
  const c = f32x4.min(a, k(FOUR)); // NaN stays NaN
  const u = sub(div(k(ONE), c), k(BM));
  const large = sub(k(ONE), mul(exp4(f32x4.neg(mul(c, c))), add(mul(add(mul(add(mul(add(mul(add(mul(add(mul(add(mul(add(mul(add(mul(k(EB0), u), k(EB1)), u), k(EB2)), u), k(EB3)), u), k(EB4)), u), k(EB5)), u), k(EB6)), u), k(EB7)), u), k(EB8)), u), k(EB9))));
  const y = v128.bitselect(small, v128.bitselect(k(ONE), large, f32x4.ge(a, k(FOUR))), f32x4.lt(a, k(ONE)));
  return v128.or(y, v128.and(x, k(SIGN)));
}

/** Lanes [0, n) of the f32 array at p (0 < n < 4), the others 0: kernel tails run the lane code too. */
@inline export function loadTail(p: usize, n: i32): v128 {
  let v = f32x4.replace_lane(f32x4.splat(0), 0, load<f32>(p));
  if (n > 1) v = f32x4.replace_lane(v, 1, load<f32>(p, 4));
  if (n > 2) v = f32x4.replace_lane(v, 2, load<f32>(p, 8));
  return v;
}

/** Stores lanes [0, n) of v to the f32 array at p (0 < n < 4). */
@inline export function storeTail(p: usize, v: v128, n: i32): void {
  store<f32>(p, f32x4.extract_lane(v, 0));
  if (n > 1) store<f32>(p, f32x4.extract_lane(v, 1), 4);
  if (n > 2) store<f32>(p, f32x4.extract_lane(v, 2), 8);
}
