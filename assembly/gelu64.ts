// Float64 GELU in both forms with its derivative, to a few ulp over the whole line. The textbook
// formulas cancel in the left tail: ½x(1 + erf(x/√2)) loses digits from x ≈ −1.4 on and every one
// once erf rounds to −1 (x < −8.3), ½x(1 + tanh u) once tanh u does (x < −7.9).
// Exact form, a = |x|: Φ(−a) = e^{−a²/2}·K(a) with K(a) = Φ(−a)·e^{a²/2} (Mills' ratio over √(2π)),
// smooth and positive, so nothing cancels: Φ(x) = Φ(−a) for x < 0, 1 − Φ(−a) for x ≥ 0. K is a
// Chebyshev fit (mpmath chebyfit, error < 2e-17 relative) in a on [0, 1.5) and [1.5, 3), and a·K(a)
// one in 1/a on [3, 40]. e^{−a²/2} comes from a² split exactly (Dekker's product): a rounded a²/2
// alone would cost a²/2 ulp (400 at a = 28).
// Tanh form: ½x(1 + tanh u) = x·σ(w), w = 2u = 2√(2/π)·x(1 + 0.044715x²), w in double-double (its
// rounding would cost |w| ulp in e^w) and σ(w) = e^w/(1 + e^w) below 0, 1/(1 + e^{−w}) above.
// Each derivative has a zero near x = −0.752, where its two terms cancel: there it is (x − x0)·R(x),
// x0 in double-double and R a fit, so it keeps its relative accuracy up to the zero.
// A result that would be subnormal is computed 2^128 larger and scaled once, at the end.
// Plain IEEE f64 arithmetic and scalar.ts's exp only: the same bits in every engine.
import { exp_s } from './scalar';

/** Second results of the helpers (AssemblyScript has no tuples): twoProd's error term, expScaled's scale. */
let lo: f64 = 0;
let scale: f64 = 1;
/** gelu'(x) of the last geluErf64 or geluTanh64 call. */
export let geluDeriv: f64 = 0;

@inline const SPLIT: f64 = 134217729; // 2^27 + 1, Veltkamp's splitter
@inline const LN2_128: f64 = 88.722839111673; // 128·ln 2 = LN2_128 + LN2_128_LO
@inline const LN2_128_LO: f64 = 2.9683799217232634e-15;
@inline const INV_SQRT_2PI: f64 = 0.3989422804014327; // 1/√(2π)
@inline const K_HI: f64 = 0.044715; // 0.044715 = K_HI + K_LO
@inline const K_LO: f64 = 2.1960211427085595e-18;
@inline const C_HI: f64 = 1.5957691216057308; // 2√(2/π) = C_HI + C_LO
@inline const C_LO: f64 = -9.96930880911092e-17;
@inline const A0_HI: f64 = 0.7517915246935645; // exact GELU's minimum at x = −a0, a0 = A0_HI + A0_LO
@inline const A0_LO: f64 = -1.4956759177009883e-17;
@inline const X1_HI: f64 = -0.7524614220710163; // the tanh form's minimum at x1 = X1_HI + X1_LO
@inline const X1_LO: f64 = 3.635560509207687e-17;

/** a·b, its rounding error in lo: a·b = result + lo exactly (Dekker's product, no FMA; |a·b| < 2^995). */
function twoProd(a: f64, b: f64): f64 {
  const p = a * b;
  let t = SPLIT * a;
  const ah = t - (t - a), al = a - ah;
  t = SPLIT * b;
  const bh = t - (t - b), bl = b - bh;
  lo = ah * bh - p + ah * bl + al * bh + al * bl;
  return p;
}

/** e^{h + l}/scale for |l| ≤ ulp(h); scale = 2^-128 when e^{h + l} is below 2^-1000 (then computed as e^{h + l + 128 ln 2}), else 1. */
function expScaled(h: f64, l: f64): f64 {
  let s = h + l;
  let t = h - s + l; // s + t = h + l (Dekker's fast two-sum: |h| ≥ |l|)
  scale = 1;
  if (s < -700) {
    const r = s + LN2_128, b = r - s;
    t += s - (r - b) + (LN2_128 - b) + LN2_128_LO; // Knuth's two-sum
    s = r;
    scale = reinterpret<f64>(0x37f0000000000000); // 2^-128
  }
  const e = exp_s<f64>(s);
  return e + e * t; // e^{s + t} = e^s(1 + t), |t| ≤ 2^-43
}

/** K(a) = Φ(−a)·e^{a²/2} for 0 ≤ a < 3, a·K(a) for 3 ≤ a (fits for a ≤ 40). */
function mills(a: f64): f64 {
  let s: f64;
  if (a < 1.5) {
    s = a - 0.75;
    return (((((((((((((((((-6.425699795055755e-10 * s + 2.960437066721053e-09) * s + -1.166243693445892e-08) * s + 5.0541315489993836e-08) * s + -2.1425241055455632e-07) * s + 8.734059917896166e-07) * s + -3.439620755421035e-06) * s + 1.3058084972255995e-05) * s + -4.762960033192849e-05) * s + 0.0001663037404629346) * s + -0.0005533941733646733) * s + 0.00174547544630892) * s + -0.005182865801499235) * s + 0.014360002037776102) * s + -0.036684330535685455) * s + 0.08495325605254773) * s + -0.17376793364646947) * s + 0.30023246233995093);
  }
  if (a < 3) {
    s = a - 2.25;
    return (((((((((((((((-9.309613138371037e-11 * s + 4.892420547552298e-10) * s + -2.302165514570366e-09) * s + 1.1478815458001923e-08) * s + -5.5920644467398254e-08) * s + 2.6399817216828e-07) * s + -1.2090506208310048e-06) * s + 5.360174845724831e-06) * s + -2.294186642152256e-05) * s + 9.450063419887262e-05) * s + -0.00037321948963778387) * s + 0.0014067476530188474) * s + -0.005031279667623729) * s + 0.016947369864409412) * s + -0.05322542119778899) * s + 0.15365193742384164);
  }
  s = 1 / a - 0.17916666666666667;
  return (((((((((((((((((((((856697.7498980549 * s + 229955.9295387532) * s + -328498.85070973315) * s + 45489.52382554517) * s + 26224.51605704678) * s + -14247.448036147554) * s + 3417.1476917955815) * s + 162.20447521939835) * s + -608.1531999458587) * s + 295.35996971798977) * s + -52.76311824176237) * s + -24.58670966109938) * s + 23.09076905342942) * s + -7.508838296477139) * s + -0.9315377085374266) * s + 2.3111811783825025) * s + -1.0578067010244736) * s + -0.09227894997992775) * s + 0.4382048834619175) * s + -0.23414059678030247) * s + -0.12057362446109404) * s + 0.3872061578993082);
}

/**
 * (K(a) − a/√(2π))/(a − a0) for 0 ≤ a < 1.5 (a fit as mills'), a0 = A0_HI + A0_LO its root: exact
 * GELU's derivative at x = −a is e^{−a²/2}·(K(a) − a/√(2π)), which cancels next to x = −a0.
 */
function millsRoot(a: f64): f64 {
  const s = a - 0.75;
  return (((((((((((((((((1.360173753828708e-10 * s + -6.423263010188233e-10) * s + 2.6149923418535603e-09) * s + -1.1657752111105009e-08) * s + 5.088355289776312e-08) * s + -2.1416125141304367e-07) * s + 8.728157906641315e-07) * s + -3.4380570843791276e-06) * s + 1.305199406591364e-05) * s + -4.760621736225915e-05) * s + 0.00016621843941943504) * s + -0.0005530963889259276) * s + 0.001744484561928155) * s + -0.005179740514328998) * s + 0.014350722404658548) * s + -0.03665862086212702) * s + 0.0848875812280429) * s + -0.5725581358499552);
}

/** x·Φ(x), exact GELU; geluDeriv = Φ(x) + x·φ(x). Beyond |x| = 40 (both round to 0 or x and 1 there), ±∞ and NaN: the erf formula's values. */
export function geluErf64(x: f64): f64 {
  const a = abs<f64>(x);
  if (!(a <= 40)) {
    geluDeriv = x * 0 + (x > 0 ? 1 : 0);
    return x > 0 ? x : x * 0;
  }
  const h = twoProd(a, a);
  const e = expScaled(h * -0.5, lo * -0.5); // e^{−a²/2}/scale
  const m = mills(a);
  let tail: f64, aTail: f64; // Φ(−a)/scale, a·Φ(−a)/scale
  if (a < 3) {
    tail = e * m;
    aTail = a * tail;
  } else {
    aTail = e * m;
    tail = aTail / a;
  }
  const aPdf = a * e * INV_SQRT_2PI; // a·φ(a)/scale
  if (x < 0) {
    geluDeriv = a < 1.5 ? e * (a - A0_HI - A0_LO) * millsRoot(a) : (tail - aPdf) * scale; // (a − A0_HI exact)
    return -aTail * scale;
  }
  geluDeriv = 1 + (aPdf - tail) * scale;
  return a < 3 ? x * (1 - tail) : x - aTail * scale; // x·(1 − Φ(−x)) (a product where x may be subnormal)
}

/**
 * (1 + e^w + x·w')/(x − x1) for −1.25 ≤ x ≤ −0.5 (a fit as mills'), x1 = X1_HI + X1_LO its root:
 * the tanh form's derivative is e^w(1 + e^w + x·w')/(1 + e^w)², which cancels next to x = x1.
 */
function tanhRoot(x: f64): f64 {
  const s = x + 0.875;
  return (((((((((((((3.399584994022995e-07 * s + 1.3940849012889842e-06) * s + 5.170891386657299e-06) * s + 1.9567297928833087e-05) * s + 7.420308844664762e-05) * s + 0.00025971701821819135) * s + 0.000853482244452547) * s + 0.0028366245253615883) * s + 0.00891151425506533) * s + 0.024327724046516296) * s + 0.06258497839002794) * s + 0.3750745967375705) * s + -0.19484260113533822) * s + 2.478779593182043);
}

/** x·σ(w), GELU's tanh form; geluDeriv = σ(w) + x·w'·σ(w)(1 − σ(w)). Beyond |x| = 40, ±∞ and NaN: the composite's values. */
export function geluTanh64(x: f64): f64 {
  if (!(abs<f64>(x) <= 40)) {
    geluDeriv = x * 0 + (x > 0 ? 1 : 0);
    return x > 0 ? x : x * 0;
  }
  const x2 = twoProd(x, x),
    x2l = lo;
  const t = twoProd(K_HI, x2),
    tl = lo + K_HI * x2l + K_LO * x2; // 0.044715x² = t + tl
  const q = 1 + t,
    b = q - 1,
    ql = 1 - (q - b) + (t - b) + tl; // 1 + 0.044715x² = q + ql
  const c = twoProd(C_HI, x),
    cl = lo + C_LO * x; // 2√(2/π)·x = c + cl
  const w = twoProd(c, q),
    wl = lo + c * ql + cl * q;
  const r3 = twoProd(3, t),
    r = 1 + r3,
    b1 = r - 1,
    rl = 1 - (r - b1) + (r3 - b1) + lo + 3 * tl; // 1 + 3·0.044715x² = r + rl
  const xdw = twoProd(c, r),
    xdwl = lo + c * rl + cl * r; // x·w' = 2√(2/π)·x(1 + 3·0.044715x²)
  if (x < 0) {
    const e = expScaled(w, wl), // e^w/scale
      es = e * scale,
      den = 1 + es, // 1 + e^w; σ(w) = e^w/den, 1 − σ(w) = 1/den
      n = 1 + xdw,
      b2 = n - xdw,
      num =
        x >= -1.25 && x <= -0.5
          ? (x - X1_HI - X1_LO) * tanhRoot(x) // (x − X1_HI exact)
          : n + (1 - b2 + (xdw - (n - b2)) + xdwl + es); // 1 + e^w + x·w', from double-doubles
    geluDeriv = ((e * num) / (den * den)) * scale; // σ(w)(1 + x·w'(1 − σ(w)))
    return ((x * e) / den) * scale;
  }
  const e = expScaled(-w, -wl) * scale, // e^{−w}
    den = 1 + e; // σ(w) = 1/den, 1 − σ(w) = e/den
  geluDeriv = (1 + (xdw * e) / den) / den;
  return x / den;
}
