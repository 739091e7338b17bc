// 2-D convolution, NCHW input x[N, C, H, W], filters w[O, C, kh, kw], output y[N, O, Ho, Wo],
// by im2col + GEMM (Chellapilla, Puri & Simard 2006): one image's receptive fields are unrolled
// into a caller-provided column matrix col[C·kh·kw, Ho·Wo], so the forward pass and both VJPs
// are one GEMM per image on the gemm kernels of matmul.ts (which use their registered scratch):
//   forward      y[n] = W · col(x[n])                        M = O,       N = Ho·Wo,   K = C·kh·kw
//   input grad   dx[n] = col2im(Wᵀ · g[n])                   M = C·kh·kw, N = Ho·Wo,   K = O
//   filter grad  dW = Σ_n g[n] · col(x[n])ᵀ, n ascending     M = O,       N = C·kh·kw, K = Ho·Wo
// A 1×1, stride-1, unpadded conv is already a GEMM on x[n] itself: col is skipped.
// Geometry arrives as an i32[13] block `geo` (JS writes it into its argument block):
//   N, C, H, W, O, kh, kw, sh, sw, ph, pw, Ho, Wo   (strides sh, sw ≥ 1; paddings ≥ 0).
import { lanes, ld, st, at, ldi } from './lanes';
import { gemm_f32, gemm_f64 } from './matmul';

@inline const GN = 0;
@inline const GC = 1;
@inline const GH = 2;
@inline const GW = 3;
@inline const GO = 4;
@inline const GKH = 5;
@inline const GKW = 6;
@inline const GSH = 7;
@inline const GSW = 8;
@inline const GPH = 9;
@inline const GPW = 10;
@inline const GHO = 11;
@inline const GWO = 12;

@inline function gemm<T>(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, ta: i32, tb: i32, acc: i32): void {
  if (sizeof<T>() == 4) gemm_f32(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
  else gemm_f64(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
}

/** Byte size of n elements of T. */
@inline function bytes<T>(n: i32): usize { return <usize>n << alignof<T>(); }

/** Whether the conv is 1×1, stride 1, unpadded: then col(x[n]) is x[n] as a [C, H·W] matrix. */
@inline function pointwise(geo: usize): bool {
  return ldi(geo, GKH) == 1 && ldi(geo, GKW) == 1 && ldi(geo, GSH) == 1 && ldi(geo, GSW) == 1 &&
    ldi(geo, GPH) == 0 && ldi(geo, GPW) == 0;
}

/** The first output column ow ≥ 0 with ow·s ≥ a (clamped to [0, n]): where reads enter the image. */
@inline function firstAtLeast(a: i32, s: i32, n: i32): i32 {
  if (a <= 0) return 0;
  const q = (a + s - 1) / s;
  return q < n ? q : n;
}

/** dst[0..n) = src[0..n); the last vector overlaps the one before it instead of a scalar tail. */
@inline function copyRun<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  if (n < L) {
    for (let k = 0; k < n; k++) st<T>(dst, k, ld<T>(src, k));
    return;
  }
  for (let k = 0; k < n - L; k += L) v128.store(at<T>(dst, k), v128.load(at<T>(src, k)));
  v128.store(at<T>(dst, n - L), v128.load(at<T>(src, n - L)));
}

@inline function zeroRun<T>(dst: usize, n: i32): void {
  const L = lanes<T>();
  const z = v128.splat<T>(<T>0);
  let k = 0;
  for (; k + L <= n; k += L) v128.store(at<T>(dst, k), z);
  for (; k < n; k++) st<T>(dst, k, <T>0);
}

@inline function addRun<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  let k = 0;
  for (; k + L <= n; k += L) v128.store(at<T>(dst, k), v128.add<T>(v128.load(at<T>(dst, k)), v128.load(at<T>(src, k))));
  for (; k < n; k++) st<T>(dst, k, ld<T>(dst, k) + ld<T>(src, k));
}

/**
 * col[(c·kh + i)·kw + j, oh·Wo + ow] = x[c, oh·sh − ph + i, ow·sw − pw + j] (one image x[C, H, W])
 * for the entries inside the image. The entries that read padding are the same for every image:
 * the caller zeroes col once and they are never written here. Per (c, i, j) the in-image output
 * columns [lo, hi) are found once, so each output row is one copy (SIMD when sw = 1).
 */
function im2col<T>(x: usize, col: usize, geo: usize): void {
  const C = ldi(geo, GC), H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), ph = ldi(geo, GPH), pw = ldi(geo, GPW);
  const Ho = ldi(geo, GHO), Wo = ldi(geo, GWO);
  let row = col;
  for (let c = 0; c < C; c++) {
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const lo = firstAtLeast(pw - j, sw, Wo), hi = max(lo, firstAtLeast(W + pw - j, sw, Wo));
        for (let oh = 0; oh < Ho; oh++) {
          const ih = oh * sh - ph + i;
          if (ih < 0 || ih >= H) continue;
          const dst = at<T>(row, oh * Wo + lo), src = at<T>(x, (c * H + ih) * W + lo * sw - pw + j);
          if (sw == 1) copyRun<T>(dst, src, hi - lo);
          else for (let ow = 0; ow < hi - lo; ow++) st<T>(dst, ow, ld<T>(src, ow * sw));
        }
        row = at<T>(row, Ho * Wo);
      }
    }
  }
}

/** The transpose of im2col: dx[C, H, W] = Σ of the col entries that read each pixel (dx is overwritten; fixed (c, i, j, oh) order). */
function col2im<T>(col: usize, dx: usize, geo: usize): void {
  const C = ldi(geo, GC), H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), ph = ldi(geo, GPH), pw = ldi(geo, GPW);
  const Ho = ldi(geo, GHO), Wo = ldi(geo, GWO);
  zeroRun<T>(dx, C * H * W);
  let row = col;
  for (let c = 0; c < C; c++) {
    for (let i = 0; i < kh; i++) {
      for (let j = 0; j < kw; j++) {
        const lo = firstAtLeast(pw - j, sw, Wo), hi = max(lo, firstAtLeast(W + pw - j, sw, Wo));
        for (let oh = 0; oh < Ho; oh++) {
          const ih = oh * sh - ph + i;
          if (ih < 0 || ih >= H) continue;
          const dst = at<T>(dx, (c * H + ih) * W + lo * sw - pw + j), src = at<T>(row, oh * Wo + lo);
          if (sw == 1) addRun<T>(dst, src, hi - lo);
          else for (let ow = 0; ow < hi - lo; ow++) st<T>(dst, ow * sw, ld<T>(dst, ow * sw) + ld<T>(src, ow));
        }
        row = at<T>(row, Ho * Wo);
      }
    }
  }
}

@inline function conv2d<T>(x: usize, w: usize, y: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO);
  const K = C * ldi(geo, GKH) * ldi(geo, GKW), P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo);
  if (!direct) zeroRun<T>(col, K * P);
  for (let n = 0; n < N; n++) {
    const xn = x + bytes<T>(n) * <usize>(C * HW);
    if (!direct) im2col<T>(xn, col, geo);
    gemm<T>(w, direct ? xn : col, y + bytes<T>(n) * <usize>(O * P), O, P, K, K, P, P, 0, 0, 0);
  }
}

@inline function conv2dInputGrad<T>(g: usize, w: usize, dx: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO);
  const K = C * ldi(geo, GKH) * ldi(geo, GKW), P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo);
  for (let n = 0; n < N; n++) {
    const dxn = dx + bytes<T>(n) * <usize>(C * HW);
    gemm<T>(w, g + bytes<T>(n) * <usize>(O * P), direct ? dxn : col, K, P, O, K, P, P, 1, 0, 0);
    if (!direct) col2im<T>(col, dxn, geo);
  }
}

@inline function conv2dFilterGrad<T>(x: usize, g: usize, dw: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO);
  const K = C * ldi(geo, GKH) * ldi(geo, GKW), P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo);
  if (N == 0) zeroRun<T>(dw, O * K);
  if (!direct) zeroRun<T>(col, K * P);
  for (let n = 0; n < N; n++) {
    const xn = x + bytes<T>(n) * <usize>(C * HW);
    if (!direct) im2col<T>(xn, col, geo);
    gemm<T>(g + bytes<T>(n) * <usize>(O * P), direct ? xn : col, dw, O, K, P, P, P, K, 0, 1, n > 0 ? 1 : 0);
  }
}

/** y[N, O, Ho, Wo] = conv(x, w); col: scratch of C·kh·kw·Ho·Wo elements (unused when pointwise); y must not alias x, w or col. */
export function conv2d_f32(x: usize, w: usize, y: usize, col: usize, geo: usize): void { conv2d<f32>(x, w, y, col, geo); }
export function conv2d_f64(x: usize, w: usize, y: usize, col: usize, geo: usize): void { conv2d<f64>(x, w, y, col, geo); }
/** dx[N, C, H, W] = VJP of conv2d w.r.t. x at cotangent g[N, O, Ho, Wo] (overwritten); col as for conv2d; no aliasing. */
export function conv2d_input_grad_f32(g: usize, w: usize, dx: usize, col: usize, geo: usize): void { conv2dInputGrad<f32>(g, w, dx, col, geo); }
export function conv2d_input_grad_f64(g: usize, w: usize, dx: usize, col: usize, geo: usize): void { conv2dInputGrad<f64>(g, w, dx, col, geo); }
/** dw[O, C, kh, kw] = VJP of conv2d w.r.t. w at cotangent g (overwritten; images summed in order); col as for conv2d; no aliasing. */
export function conv2d_filter_grad_f32(x: usize, g: usize, dw: usize, col: usize, geo: usize): void { conv2dFilterGrad<f32>(x, g, dw, col, geo); }
export function conv2d_filter_grad_f64(x: usize, g: usize, dw: usize, col: usize, geo: usize): void { conv2dFilterGrad<f64>(x, g, dw, col, geo); }
