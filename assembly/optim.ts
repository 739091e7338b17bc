// Fused optimizer updates and gradient-clipping helpers. Each update is one pass over a
// parameter and its state, in place, following PyTorch's single-tensor update
// (torch/optim/sgd.py, adam.py) operation for operation so the rounding matches; the
// scalar hyper-parameters arrive as f64 and are rounded to T once, as PyTorch does with
// Python floats. Contract: (p, g, state..., n, scalars); p and the state buffers are
// updated in place, g is read only, and no two pointers may alias.
import { lanes, ld, st, at } from './lanes';
import { cos_s, pow_s } from './scalar';

@inline const NESTEROV = 1;
@inline const FIRST = 2;

/** d = g + wd·p; b = first ? d : b·μ + (1 − τ)·d; d = nesterov ? d + μ·b : b; p = p − lr·d. */
@inline function sgd<T>(p: usize, g: usize, b: usize, n: i32, lr: f64, mu: f64, dampening: f64, wd: f64, flags: i32): void {
  const L = lanes<T>();
  const lrT = <T>lr, muT = <T>mu, keep = <T>(1.0 - dampening), wdT = <T>wd;
  const decay = wd != 0, momentum = mu != 0, nesterov = (flags & NESTEROV) != 0, first = (flags & FIRST) != 0;
  const vlr = v128.splat<T>(lrT), vmu = v128.splat<T>(muT), vkeep = v128.splat<T>(keep), vwd = v128.splat<T>(wdT);
  let i = 0;
  for (; i + L <= n; i += L) {
    const vp = v128.load(at<T>(p, i));
    let d = v128.load(at<T>(g, i));
    if (decay) d = v128.add<T>(d, v128.mul<T>(vwd, vp));
    if (momentum) {
      const vb = first ? d : v128.add<T>(v128.mul<T>(v128.load(at<T>(b, i)), vmu), v128.mul<T>(vkeep, d));
      v128.store(at<T>(b, i), vb);
      d = nesterov ? v128.add<T>(d, v128.mul<T>(vmu, vb)) : vb;
    }
    v128.store(at<T>(p, i), v128.sub<T>(vp, v128.mul<T>(vlr, d)));
  }
  for (; i < n; i++) {
    const vp = ld<T>(p, i);
    let d = ld<T>(g, i);
    if (decay) d = d + wdT * vp;
    if (momentum) {
      const vb: T = first ? d : ld<T>(b, i) * muT + keep * d;
      st<T>(b, i, vb);
      d = nesterov ? d + muT * vb : vb;
    }
    st<T>(p, i, vp - lrT * d);
  }
}

/** SGD with momentum, dampening, L2 weight decay and Nesterov; flags: 1 nesterov, 2 first step (b = d). b unused when momentum = 0. */
export function sgd_f32(p: usize, g: usize, b: usize, n: i32, lr: f64, momentum: f64, dampening: f64, wd: f64, flags: i32): void { sgd<f32>(p, g, b, n, lr, momentum, dampening, wd, flags); }
export function sgd_f64(p: usize, g: usize, b: usize, n: i32, lr: f64, momentum: f64, dampening: f64, wd: f64, flags: i32): void { sgd<f64>(p, g, b, n, lr, momentum, dampening, wd, flags); }

/**
 * Adam (Kingma and Ba 2015) at step t ≥ 1, as torch.optim.Adam: m ← lerp(m, g, 1 − β1),
 * v ← v·β2 + (1 − β2)·g·g, p ← p − (lr/(1 − β1ᵗ))·m / (√v/√(1 − β2ᵗ) + ε). The bias corrections
 * are computed here in f64. decoupled = 1 is AdamW (Loshchilov and Hutter 2019): p ← p·(1 − lr·wd)
 * first; otherwise wd is L2 (g ← g + wd·p).
 */
@inline function adam<T>(p: usize, g: usize, m: usize, v: usize, n: i32, lr: f64, beta1: f64, beta2: f64, eps: f64, wd: f64, t: f64, decoupled: i32): void {
  const L = lanes<T>();
  const bc2sqrt = <T>Math.sqrt(1.0 - pow_s<f64>(beta2, t));
  const negStep = <T>(-(lr / (1.0 - pow_s<f64>(beta1, t))));
  const w = <T>(1.0 - beta1), wc = <T>1 - w, b2 = <T>beta2, w2 = <T>(1.0 - beta2), epsT = <T>eps;
  const shrink = <T>(1.0 - lr * wd), wdT = <T>wd;
  // torch.lerp: a + w·(b − a) for w < 0.5, else b − (b − a)·(1 − w).
  const low = w < <T>0.5, l2 = decoupled == 0 && wd != 0, dec = decoupled != 0 && wd != 0;
  const vw = v128.splat<T>(w), vwc = v128.splat<T>(wc), vb2 = v128.splat<T>(b2), vw2 = v128.splat<T>(w2);
  const veps = v128.splat<T>(epsT), vbc = v128.splat<T>(bc2sqrt), vstep = v128.splat<T>(negStep);
  const vshrink = v128.splat<T>(shrink), vwd = v128.splat<T>(wdT);
  let i = 0;
  for (; i + L <= n; i += L) {
    let vp = v128.load(at<T>(p, i)), vg = v128.load(at<T>(g, i));
    if (dec) vp = v128.mul<T>(vp, vshrink);
    if (l2) vg = v128.add<T>(vg, v128.mul<T>(vwd, vp));
    const vm0 = v128.load(at<T>(m, i));
    const vm = low ? v128.add<T>(vm0, v128.mul<T>(vw, v128.sub<T>(vg, vm0))) : v128.sub<T>(vg, v128.mul<T>(v128.sub<T>(vg, vm0), vwc));
    const vv = v128.add<T>(v128.mul<T>(v128.load(at<T>(v, i)), vb2), v128.mul<T>(v128.mul<T>(vw2, vg), vg));
    const denom = v128.add<T>(v128.div<T>(v128.sqrt<T>(vv), vbc), veps);
    v128.store(at<T>(m, i), vm);
    v128.store(at<T>(v, i), vv);
    v128.store(at<T>(p, i), v128.add<T>(vp, v128.div<T>(v128.mul<T>(vstep, vm), denom)));
  }
  for (; i < n; i++) {
    let sp = ld<T>(p, i), sg = ld<T>(g, i);
    if (dec) sp = sp * shrink;
    if (l2) sg = sg + wdT * sp;
    const sm0 = ld<T>(m, i);
    const sm: T = low ? sm0 + w * (sg - sm0) : sg - (sg - sm0) * wc;
    const sv: T = ld<T>(v, i) * b2 + (w2 * sg) * sg;
    const denom: T = sqrt<T>(sv) / bc2sqrt + epsT;
    st<T>(m, i, sm);
    st<T>(v, i, sv);
    st<T>(p, i, sp + (negStep * sm) / denom);
  }
}

/** Adam / AdamW step t (t counts from 1); m, v: first and second moments, updated in place. */
export function adam_f32(p: usize, g: usize, m: usize, v: usize, n: i32, lr: f64, beta1: f64, beta2: f64, eps: f64, wd: f64, t: f64, decoupled: i32): void { adam<f32>(p, g, m, v, n, lr, beta1, beta2, eps, wd, t, decoupled); }
export function adam_f64(p: usize, g: usize, m: usize, v: usize, n: i32, lr: f64, beta1: f64, beta2: f64, eps: f64, wd: f64, t: f64, decoupled: i32): void { adam<f64>(p, g, m, v, n, lr, beta1, beta2, eps, wd, t, decoupled); }

/** The low (hi = false) or high two lanes of v as f64x2 (f32 lanes are widened exactly). */
@inline function wide<T>(v: v128, hi: bool): v128 {
  if (sizeof<T>() == 8) return v;
  return f64x2.promote_low_f32x4(hi ? v128.shuffle<f32>(v, v, 2, 3, 0, 1) : v);
}

/** acc + Σ x[i]², accumulated in f64 (two lanes, folded lane 0 first) so the order is fixed by n alone. */
@inline function sumSquares<T>(x: usize, n: i32, acc: f64): f64 {
  const L = lanes<T>();
  let s = f64x2.splat(0);
  let i = 0;
  for (; i + L <= n; i += L) {
    const vx = v128.load(at<T>(x, i));
    const lo = wide<T>(vx, false);
    s = f64x2.add(s, f64x2.mul(lo, lo));
    if (sizeof<T>() == 4) {
      const hi = wide<T>(vx, true);
      s = f64x2.add(s, f64x2.mul(hi, hi));
    }
  }
  let r = f64x2.extract_lane(s, 0) + f64x2.extract_lane(s, 1);
  for (; i < n; i++) {
    const e = <f64>ld<T>(x, i);
    r += e * e;
  }
  return acc + r;
}
/** acc + Σ x², in f64 (the gradient norm of clipGradNorm, one tensor at a time). */
export function sum_squares_f32(x: usize, n: i32, acc: f64): f64 { return sumSquares<f32>(x, n, acc); }
export function sum_squares_f64(x: usize, n: i32, acc: f64): f64 { return sumSquares<f64>(x, n, acc); }

/** x ← x·s in place (s rounded to T once). */
@inline function scale<T>(x: usize, n: i32, s: f64): void {
  const L = lanes<T>();
  const sT = <T>s, vs = v128.splat<T>(sT);
  let i = 0;
  for (; i + L <= n; i += L) v128.store(at<T>(x, i), v128.mul<T>(v128.load(at<T>(x, i)), vs));
  for (; i < n; i++) st<T>(x, i, ld<T>(x, i) * sT);
}
export function scale_f32(x: usize, n: i32, s: f64): void { scale<f32>(x, n, s); }
export function scale_f64(x: usize, n: i32, s: f64): void { scale<f64>(x, n, s); }

/** √x in f64 (norms and initialisation bounds, so no JS Math touches data). */
export function sqrt_scalar(x: f64): f64 { return Math.sqrt(x); }

/** cos(x) in f64 (musl's, within 1 ulp) for learning-rate schedules, so no engine's Math.cos decides them. */
export function cos_scalar(x: f64): f64 { return cos_s<f64>(x); }

/** x^y in f64 (C99 pow) for learning-rate schedules (StepLR's closed form). */
export function pow_scalar(x: f64, y: f64): f64 { return pow_s<f64>(x, y); }

/** min(1, maxNorm / (norm + 1e-6)), PyTorch's clip_grad_norm_ coefficient. */
export function clip_coef(norm: f64, maxNorm: f64): f64 { return min<f64>(1.0, maxNorm / (norm + 1e-6)); }

// clipGradNorm inside compile(): the same arithmetic with the running sum in memory (acc: one
// f64), so no value returns to JS and the schedule replays.
/** acc[0] ← acc[0] + Σ x², in f64 (sum_squares with its accumulator in memory). */
export function sum_squares_into_f32(x: usize, n: i32, acc: usize): void { store<f64>(acc, sumSquares<f32>(x, n, load<f64>(acc))); }
export function sum_squares_into_f64(x: usize, n: i32, acc: usize): void { store<f64>(acc, sumSquares<f64>(x, n, load<f64>(acc))); }
/** x ← x·clip_coef(√acc[0], maxNorm) in place, skipped when the coefficient is 1 (as clipGradNorm). */
@inline function clipScale<T>(x: usize, n: i32, acc: usize, maxNorm: f64): void {
  const coef = clip_coef(Math.sqrt(load<f64>(acc)), maxNorm);
  if (coef != 1.0) scale<T>(x, n, coef);
}
export function clip_scale_f32(x: usize, n: i32, acc: usize, maxNorm: f64): void { clipScale<f32>(x, n, acc, maxNorm); }
export function clip_scale_f64(x: usize, n: i32, acc: usize, maxNorm: f64): void { clipScale<f64>(x, n, acc, maxNorm); }
