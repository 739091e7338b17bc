// 2-D max and average pooling over the planes of an NCHW tensor (no padding: every window lies
// inside the image), and their VJPs. Max pooling routes through the window's argmax, PyTorch's
// rule `v > best || isnan(v)` in row-major window order: the first maximum, or the last NaN
// (each NaN replaces the one before), so the forward value, the gradient scatter and its
// transpose (a gather) all agree on one position, the one PyTorch's indices name.
// SIMD runs across L adjacent windows of an output row (their corners are sw apart, so each
// window element is a strided lane load); the compare-and-select is branch-free, which matters:
// scalar code loses ~10× to mispredicted "is this the max" branches on real activations. A
// row's last group overlaps the previous one instead of a scalar tail (lanes already done are
// recomputed, or skipped where the kernel accumulates). Rows narrower than L run scalar.
// Geometry arrives as an i32[9] block `geo`: planes (N·C), H, W, kh, kw, sh, sw, Ho, Wo.
import { lanes, ld, st, at, ldi } from './lanes';

@inline const GP = 0;
@inline const GH = 1;
@inline const GW = 2;
@inline const GKH = 3;
@inline const GKW = 4;
@inline const GSH = 5;
@inline const GSW = 6;
@inline const GHO = 7;
@inline const GWO = 8;

/** Lane l = p[l·step] (step in bytes): one load when contiguous, else lane loads. */
@inline function strided<T>(p: usize, step: usize): v128 {
  if (step == sizeof<T>()) return v128.load(p);
  if (sizeof<T>() == 4) {
    let v = v128.load32_zero(p);
    v = v128.load32_lane(p + step, v, 1);
    v = v128.load32_lane(p + 2 * step, v, 2);
    return v128.load32_lane(p + 3 * step, v, 3);
  }
  return v128.load64_lane(p + step, v128.load64_zero(p), 1);
}

/** Window offsets live in integer lanes as wide as T, so one bitselect mask serves values and offsets. */
@inline function splatOffset<T>(k: i32): v128 {
  return sizeof<T>() == 4 ? i32x4.splat(k) : i64x2.splat(<i64>k);
}
@inline function laneOffset<T>(v: v128, l: i32): i32 {
  if (sizeof<T>() == 8) return l == 0 ? <i32>i64x2.extract_lane(v, 0) : <i32>i64x2.extract_lane(v, 1);
  if (l == 0) return i32x4.extract_lane(v, 0);
  if (l == 1) return i32x4.extract_lane(v, 1);
  return l == 2 ? i32x4.extract_lane(v, 2) : i32x4.extract_lane(v, 3);
}

@inline const MAX = 0;
@inline const ARG = 1;

/** The max (want = MAX) or the argmax offsets (ARG) of L windows with corners `step` bytes apart from x. */
@inline function windows<T>(want: i32, x: usize, W: i32, kh: i32, kw: i32, step: usize): v128 {
  let best = strided<T>(x, step), idx = splatOffset<T>(0);
  for (let i = 0; i < kh; i++) {
    for (let j = 0; j < kw; j++) {
      const v = strided<T>(at<T>(x, i * W + j), step);
      const m = v128.or(v128.gt<T>(v, best), v128.ne<T>(v, v));
      best = v128.bitselect(v, best, m);
      if (want == ARG) idx = v128.bitselect(splatOffset<T>(i * W + j), idx, m);
    }
  }
  return want == ARG ? idx : best;
}

/**
 * `windows` for 2-wide windows at stride 2 (the common 2×2 pool): per window row, the 2L
 * contiguous elements are loaded as two vectors and split into their even (j = 0) and odd
 * (j = 1) lanes, instead of 2L lane loads. Same candidates in the same order: same result.
 */
@inline function windows2<T>(want: i32, x: usize, W: i32, kh: i32): v128 {
  const L = lanes<T>();
  let best = v128.splat<T>(<T>0), idx = splatOffset<T>(0);
  for (let i = 0; i < kh; i++) {
    const a = v128.load(at<T>(x, i * W)), b = v128.load(at<T>(x, i * W + L));
    const even = sizeof<T>() == 4 ? v128.shuffle<f32>(a, b, 0, 2, 4, 6) : v128.shuffle<f64>(a, b, 0, 2);
    const odd = sizeof<T>() == 4 ? v128.shuffle<f32>(a, b, 1, 3, 5, 7) : v128.shuffle<f64>(a, b, 1, 3);
    if (i == 0) best = even;
    else {
      const m = v128.or(v128.gt<T>(even, best), v128.ne<T>(even, even));
      best = v128.bitselect(even, best, m);
      if (want == ARG) idx = v128.bitselect(splatOffset<T>(i * W), idx, m);
    }
    const m = v128.or(v128.gt<T>(odd, best), v128.ne<T>(odd, odd));
    best = v128.bitselect(odd, best, m);
    if (want == ARG) idx = v128.bitselect(splatOffset<T>(i * W + 1), idx, m);
  }
  return want == ARG ? idx : best;
}

/** Lanes of idx equal to k (offsets in integer lanes as wide as T): all ones, else zero. */
@inline function isOffset<T>(idx: v128, k: i32): v128 {
  return sizeof<T>() == 4 ? i32x4.eq(idx, splatOffset<T>(k)) : i64x2.eq(idx, splatOffset<T>(k));
}

/**
 * SCATTER for 2×2 windows at stride 2 (they tile the rows without overlap, dx zeroed): each
 * window's 4 elements of dx are 0 + g at the argmax (the scalar scatter's sum) and +0 elsewhere,
 * written as two rows of two vectors (masked, re-interleaved). Rewriting an overlapped group's
 * lanes stores the same values again.
 */
@inline function scatter22<T>(dx: usize, g: usize, idx: v128, W: i32): void {
  const L = lanes<T>(), gv = v128.add<T>(v128.splat<T>(<T>0), v128.load(g));
  for (let i = 0; i < 2; i++) {
    const e = v128.and(gv, isOffset<T>(idx, i * W)), o = v128.and(gv, isOffset<T>(idx, i * W + 1));
    const lo = sizeof<T>() == 4 ? v128.shuffle<f32>(e, o, 0, 4, 1, 5) : v128.shuffle<f64>(e, o, 0, 2);
    const hi = sizeof<T>() == 4 ? v128.shuffle<f32>(e, o, 2, 6, 3, 7) : v128.shuffle<f64>(e, o, 1, 3);
    v128.store(at<T>(dx, i * W), lo);
    v128.store(at<T>(dx, i * W + L), hi);
  }
}

/** Scalar argmax of one window (rows narrower than L); same rule as `windows`. */
@inline function argmax1<T>(x: usize, W: i32, kh: i32, kw: i32): i32 {
  let best = ld<T>(x, 0), bi = 0;
  for (let i = 0; i < kh; i++) {
    for (let j = 0; j < kw; j++) {
      const v = ld<T>(x, i * W + j);
      if (v > best || v != v) {
        best = v;
        bi = i * W + j;
      }
    }
  }
  return bi;
}

@inline const PICK = 0; // y = v at the argmax (v = x: the max itself)
@inline const SCATTER = 1; // dx[argmax] += g

/** One output row of max pooling: the windows with corners at x + ow·sw (ow < Wo), values or gradients at y (sh: the row stride, for the 2×2/2 scatter). */
@inline function maxRow<T>(mode: i32, x: usize, v: usize, y: usize, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, Wo: i32): void {
  const L = lanes<T>(), step = <usize>sw * sizeof<T>();
  if (Wo < L) {
    for (let ow = 0; ow < Wo; ow++) {
      const k = ow * sw + argmax1<T>(at<T>(x, ow * sw), W, kh, kw);
      if (mode == PICK) st<T>(y, ow, ld<T>(v, k));
      else st<T>(v, k, ld<T>(v, k) + ld<T>(y, ow));
    }
    return;
  }
  const pairs = kw == 2 && sw == 2; // 2-wide windows at stride 2: windows2
  for (let ow = 0; ow < Wo; ow += L) {
    const o0 = min(ow, Wo - L); // the last group overlaps the previous one
    if (mode == PICK && v == x) {
      const m = pairs ? windows2<T>(MAX, at<T>(x, o0 * 2), W, kh) : windows<T>(MAX, at<T>(x, o0 * sw), W, kh, kw, step);
      v128.store(at<T>(y, o0), m);
      continue;
    }
    const idx = pairs ? windows2<T>(ARG, at<T>(x, o0 * 2), W, kh) : windows<T>(ARG, at<T>(x, o0 * sw), W, kh, kw, step);
    if (mode == SCATTER && pairs && kh == 2 && sh == 2) {
      scatter22<T>(at<T>(v, o0 * 2), at<T>(y, o0), idx, W);
      continue;
    }
    for (let l = ow - o0; l < L; l++) {
      const k = (o0 + l) * sw + laneOffset<T>(idx, l);
      if (mode == PICK) st<T>(y, o0 + l, ld<T>(v, k));
      else st<T>(v, k, ld<T>(v, k) + ld<T>(y, o0 + l));
    }
  }
}

/** Runs maxRow over every (plane, output row); for SCATTER, v is dx (zeroed first) and y is g. */
@inline function maxPool<T>(mode: i32, x: usize, v: usize, y: usize, geo: usize): void {
  const planes = ldi(geo, GP), H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), Ho = ldi(geo, GHO), Wo = ldi(geo, GWO);
  // 2×2/2 windows that tile the plane write every element of dx (scatter22): no zeroing pass.
  const tiled = kh == 2 && kw == 2 && sh == 2 && sw == 2 && H == 2 * Ho && W == 2 * Wo && Wo >= lanes<T>();
  if (mode == SCATTER && !tiled) memory.fill(v, 0, <usize>(planes * H * W) << alignof<T>());
  for (let p = 0; p < planes; p++) {
    for (let oh = 0; oh < Ho; oh++) {
      const r = (p * H + oh * sh) * W;
      maxRow<T>(mode, at<T>(x, r), at<T>(v, r), at<T>(y, (p * Ho + oh) * Wo), W, kh, kw, sh, sw, Wo);
    }
  }
}

@inline function avgPool<T>(x: usize, y: usize, geo: usize): void {
  const planes = ldi(geo, GP), H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), Ho = ldi(geo, GHO), Wo = ldi(geo, GWO);
  const L = lanes<T>(), step = <usize>sw * sizeof<T>();
  const inv = <T>1 / <T>(kh * kw), vinv = v128.splat<T>(inv);
  for (let p = 0; p < planes; p++) {
    for (let oh = 0; oh < Ho; oh++) {
      const xr = at<T>(x, (p * H + oh * sh) * W), yr = at<T>(y, (p * Ho + oh) * Wo);
      let ow = 0;
      for (; ow + L <= Wo; ow += L) {
        let s = v128.splat<T>(<T>0);
        for (let i = 0; i < kh; i++) for (let j = 0; j < kw; j++) s = v128.add<T>(s, strided<T>(at<T>(xr, ow * sw + i * W + j), step));
        v128.store(at<T>(yr, ow), v128.mul<T>(s, vinv));
      }
      for (; ow < Wo; ow++) {
        let s = <T>0;
        for (let i = 0; i < kh; i++) for (let j = 0; j < kw; j++) s += ld<T>(xr, ow * sw + i * W + j);
        st<T>(yr, ow, s * inv);
      }
    }
  }
}

/** Scalar: windows may overlap (stride < kernel), so their adds into dx must run one at a time. */
@inline function avgPoolVjp<T>(g: usize, dx: usize, geo: usize): void {
  const planes = ldi(geo, GP), H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), Ho = ldi(geo, GHO), Wo = ldi(geo, GWO);
  const inv = <T>1 / <T>(kh * kw);
  memory.fill(dx, 0, <usize>(planes * H * W) << alignof<T>());
  let o = 0;
  for (let p = 0; p < planes; p++) {
    for (let oh = 0; oh < Ho; oh++) {
      for (let ow = 0; ow < Wo; ow++) {
        const w = at<T>(dx, (p * H + oh * sh) * W + ow * sw);
        const d = ld<T>(g, o++) * inv;
        for (let i = 0; i < kh; i++) for (let j = 0; j < kw; j++) st<T>(w, i * W + j, ld<T>(w, i * W + j) + d);
      }
    }
  }
}

/** y[p, oh, ow] = v at the argmax of x's window (v = x: max pooling; otherwise a gather, maxPool2dGrad's transpose); y must not alias x or v. */
export function max_pool2d_f32(x: usize, v: usize, y: usize, geo: usize): void { maxPool<f32>(PICK, x, v, y, geo); }
export function max_pool2d_f64(x: usize, v: usize, y: usize, geo: usize): void { maxPool<f64>(PICK, x, v, y, geo); }
/** dx = 0, then dx[argmax of each window of x] += g (windows in order); dx must not alias x or g. */
export function max_pool2d_vjp_f32(x: usize, g: usize, dx: usize, geo: usize): void { maxPool<f32>(SCATTER, x, dx, g, geo); }
export function max_pool2d_vjp_f64(x: usize, g: usize, dx: usize, geo: usize): void { maxPool<f64>(SCATTER, x, dx, g, geo); }
/** y[p, oh, ow] = window sum of x · 1/(kh·kw) (row-major summation); y must not alias x. */
export function avg_pool2d_f32(x: usize, y: usize, geo: usize): void { avgPool<f32>(x, y, geo); }
export function avg_pool2d_f64(x: usize, y: usize, geo: usize): void { avgPool<f64>(x, y, geo); }
/** dx = 0, then every window of dx += g · 1/(kh·kw) (windows in order); dx must not alias g. */
export function avg_pool2d_vjp_f32(g: usize, dx: usize, geo: usize): void { avgPoolVjp<f32>(g, dx, geo); }
export function avg_pool2d_vjp_f64(g: usize, dx: usize, geo: usize): void { avgPoolVjp<f64>(g, dx, geo); }
