// 2-D convolution, NCHW input x[N, C, H, W], filters w[O, C, kh, kw], output y[N, O, Ho, Wo],
// by im2col + GEMM (Chellapilla, Puri & Simard 2006): one image's receptive fields are unrolled
// into a caller-provided column matrix col[C·kh·kw, Ho·Wo], so the forward pass and both VJPs
// are one GEMM per image on the gemm kernels of matmul.ts (which use their registered scratch):
//   forward      y[n] = W · col(x[n])                        M = O,       N = Ho·Wo,   K = C·kh·kw
//   input grad   dx[n] = col2im(Wᵀ · g[n])                   M = C·kh·kw, N = Ho·Wo,   K = O
//   filter grad  dW = Σ_n g[n] · col(x[n])ᵀ, n ascending     M = O,       N = C·kh·kw, K = Ho·Wo
// A 1×1, stride-1, unpadded conv is already a GEMM on x[n] itself: col is skipped.
// Geometry arrives as an i32[16] block `geo` (JS writes it into its argument block):
//   N, C, H, W, O, kh, kw, sh, sw, ph, pw, Ho, Wo, lo, hi, tile   (strides sh, sw ≥ 1; paddings
//   ≥ 0; [lo, hi) the part of the output computed, for the thread pool: see the note above
//   conv2d; tile ≥ 1 bounds the col scratch: output rows per band of the forward, channels per
//   chunk of the input gradient, col rows per chunk of the filter gradient).
import { lanes, ld, st, at, ldi } from './lanes';
import { gemm_f32, gemm_f64 } from './matmul';
import { madd } from './madd';
import { GN, GC, GH, GW, GO, GKH, GKW, GSH, GSW, GPH, GPW, GHO, GWO, GLO, GHI, GTILE, bytes, copyRun, zeroRun, phaseWidth, padImage } from './conv-layout';

@inline function gemm<T>(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, ta: i32, tb: i32, acc: i32): void {
  if (sizeof<T>() == 4) gemm_f32(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
  else gemm_f64(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
}

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

/** dst[k] = src[2k] for k in [0, n): the stride-2 gather, two loads and one even-lane shuffle per vector (reads stop at src[2n − 2], as the scalar loop's do). */
@inline function copyRunStride2<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  let k = 0;
  for (; k + L + 1 <= n; k += L) {
    const a = v128.load(at<T>(src, 2 * k)), b = v128.load(at<T>(src, 2 * k + L));
    const even = sizeof<T>() == 4 ? v128.shuffle<f32>(a, b, 0, 2, 4, 6) : v128.shuffle<f64>(a, b, 0, 2);
    v128.store(at<T>(dst, k), even);
  }
  for (; k < n; k++) st<T>(dst, k, ld<T>(src, 2 * k));
}

/**
 * dst[2k] += src[k] for k in [0, n): the stride-2 scatter of col2im. Per vector, src's lanes are
 * spread to the even lanes of two vectors of dst, added, and bitselect keeps the odd lanes' bits
 * as they were (x + 0 would turn −0 into +0); dst is touched only below dst[2n − 2], inside the
 * pixel row this thread owns, and each element gets the one add the scalar loop gives it.
 */
@inline function addRunStride2<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  const z = v128.splat<T>(<T>0);
  const even = sizeof<T>() == 4 ? i32x4(-1, 0, -1, 0) : i64x2(-1, 0);
  let k = 0;
  for (; k + L + 1 <= n; k += L) {
    const a = v128.load(at<T>(dst, 2 * k)), b = v128.load(at<T>(dst, 2 * k + L)), r = v128.load(at<T>(src, k));
    const lo = sizeof<T>() == 4 ? v128.shuffle<f32>(r, z, 0, 4, 1, 4) : v128.shuffle<f64>(r, z, 0, 2);
    const hi = sizeof<T>() == 4 ? v128.shuffle<f32>(r, z, 2, 4, 3, 4) : v128.shuffle<f64>(r, z, 1, 2);
    v128.store(at<T>(dst, 2 * k), v128.bitselect(v128.add<T>(a, lo), a, even));
    v128.store(at<T>(dst, 2 * k + L), v128.bitselect(v128.add<T>(b, hi), b, even));
  }
  for (; k < n; k++) st<T>(dst, 2 * k, ld<T>(dst, 2 * k) + ld<T>(src, k));
}

@inline function addRun<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  let k = 0;
  for (; k + L <= n; k += L) v128.store(at<T>(dst, k), v128.add<T>(v128.load(at<T>(dst, k)), v128.load(at<T>(src, k))));
  for (; k < n; k++) st<T>(dst, k, ld<T>(dst, k) + ld<T>(src, k));
}

@inline const GATHER = 0; // im2col: col = the receptive fields of x
@inline const SCATTER = 1; // col2im: x += col at the pixels each entry read

/**
 * im2col (GATHER) and its transpose col2im (SCATTER) for rows [r0, r1) of one image's col matrix,
 *   col[(c·kh + i)·kw + j, oh·Wo + ow] = x[c, oh·sh − ph + i, ow·sw − pw + j]   (x = x[n]),
 * stored from `col` on, for the entries inside the image. The entries that read padding are the
 * same for every image: GATHER leaves them alone (the caller zeroes col once) and SCATTER skips
 * them. Per row the in-image output columns [lo, hi) are found once, so each output row is one run
 * (SIMD when sw is 1 or 2). SCATTER adds into x in row order, so each pixel's sum has one order.
 */
@inline function unroll<T>(mode: i32, x: usize, col: usize, geo: usize, r0: i32, r1: i32, oh0: i32, oh1: i32): void {
  const H = ldi(geo, GH), W = ldi(geo, GW), kh = ldi(geo, GKH), kw = ldi(geo, GKW);
  const sh = ldi(geo, GSH), sw = ldi(geo, GSW), ph = ldi(geo, GPH), pw = ldi(geo, GPW);
  const Wo = ldi(geo, GWO);
  let row = col;
  for (let r = r0; r < r1; r++) {
    const c = r / (kh * kw), i = r / kw % kh, j = r % kw;
    const lo = firstAtLeast(pw - j, sw, Wo), hi = max(lo, firstAtLeast(W + pw - j, sw, Wo));
    for (let oh = oh0; oh < oh1; oh++) {
      const ih = oh * sh - ph + i;
      if (ih < 0 || ih >= H) continue;
      const img = at<T>(x, (c * H + ih) * W + lo * sw - pw + j), run = at<T>(row, (oh - oh0) * Wo + lo);
      if (mode == GATHER) {
        if (sw == 1) copyRun<T>(run, img, hi - lo);
        else if (sw == 2) copyRunStride2<T>(run, img, hi - lo);
        else for (let ow = 0; ow < hi - lo; ow++) st<T>(run, ow, ld<T>(img, ow * sw));
      } else {
        if (sw == 1) addRun<T>(img, run, hi - lo);
        else if (sw == 2) addRunStride2<T>(img, run, hi - lo);
        else for (let ow = 0; ow < hi - lo; ow++) st<T>(img, ow * sw, ld<T>(img, ow * sw) + ld<T>(run, ow));
      }
    }
    row = at<T>(row, (oh1 - oh0) * Wo);
  }
}

// Each kernel computes the part [lo, hi) = (geo[13], geo[14]) of its output for all N images of
// its geometry: output channels of y (whole call: 0, O), input channels of dx (0, C), columns
// (c·kh + i)·kw + j of dw (0, C·kh·kw). Each is a block of GEMM rows or columns, which needs only
// its own rows of col, and a GEMM element's summation order does not depend on the block it
// falls in (matmul.ts): the thread pool may cut a call over images or these ranges and get the
// same bits (src/ops/conv.ts). Only the filter gradient's sum over images is never cut.

@inline function conv2d<T>(x: usize, w: usize, y: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO), lo = ldi(geo, GLO), m = ldi(geo, GHI) - lo;
  const K = C * ldi(geo, GKH) * ldi(geo, GKW), P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo), Ho = ldi(geo, GHO), Wo = ldi(geo, GWO), band = min(ldi(geo, GTILE), Ho);
  if (!direct && band == Ho) zeroRun<T>(col, K * P); // one band: its padding entries are the same for every image
  for (let n = 0; n < N; n++) {
    const xn = x + bytes<T>(n) * <usize>(C * HW), yn = y + bytes<T>(n * O + lo) * <usize>P;
    if (direct) {
      gemm<T>(w + bytes<T>(lo * K), xn, yn, m, P, K, K, P, P, 0, 0, 0);
      continue;
    }
    // Output rows in bands of `band`: each band's columns of the GEMM, same sums as in one piece.
    for (let oh0 = 0; oh0 < Ho; oh0 += band) {
      const oh1 = min(Ho, oh0 + band), Pb = (oh1 - oh0) * Wo;
      if (band < Ho) zeroRun<T>(col, K * Pb);
      unroll<T>(GATHER, xn, col, geo, 0, K, oh0, oh1);
      gemm<T>(w + bytes<T>(lo * K), col, yn + bytes<T>(oh0 * Wo), m, Pb, K, K, Pb, P, 0, 0, 0);
    }
  }
}

/** Rows [lo·kk, hi·kk) of Wᵀ·g[n] are the col rows of channels [lo, hi): col2im them into those channels of dx[n]. */
@inline function conv2dInputGrad<T>(g: usize, w: usize, dx: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO), lo = ldi(geo, GLO), hi = ldi(geo, GHI);
  const kk = ldi(geo, GKH) * ldi(geo, GKW), K = C * kk, P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo), chunk = direct ? hi - lo : ldi(geo, GTILE), Ho = ldi(geo, GHO);
  for (let n = 0; n < N; n++) {
    const dxn = dx + bytes<T>(n * C) * <usize>HW, gn = g + bytes<T>(n) * <usize>(O * P);
    // Channels in chunks of `chunk`: a pixel's terms all come from its own channel's col rows.
    for (let c0 = lo; c0 < hi; c0 += chunk) {
      const c1 = min(hi, c0 + chunk), part = dxn + bytes<T>(c0) * <usize>HW;
      gemm<T>(w + bytes<T>(c0 * kk), gn, direct ? part : col, (c1 - c0) * kk, P, O, K, P, P, 1, 0, 0);
      if (direct) continue;
      zeroRun<T>(part, (c1 - c0) * HW);
      unroll<T>(SCATTER, dxn, col, geo, c0 * kk, c1 * kk, 0, Ho);
    }
  }
}

/** Columns [lo, hi) of dw: Σ_n g[n] · (rows [lo, hi) of col(x[n]))ᵀ, accumulated image by image. */
@inline function conv2dFilterGrad<T>(x: usize, g: usize, dw: usize, col: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), O = ldi(geo, GO), lo = ldi(geo, GLO), hi = ldi(geo, GHI);
  const K = C * ldi(geo, GKH) * ldi(geo, GKW), P = ldi(geo, GHO) * ldi(geo, GWO), HW = ldi(geo, GH) * ldi(geo, GW);
  const direct = pointwise(geo), chunk = direct ? hi - lo : ldi(geo, GTILE), Ho = ldi(geo, GHO);
  if (N == 0) for (let o = 0; o < O; o++) zeroRun<T>(dw + bytes<T>(o * K + lo), hi - lo);
  // Columns of dw in chunks of `chunk` col rows: each column's sum over images is whole in one chunk.
  for (let r0 = lo; r0 < hi; r0 += chunk) {
    const r1 = min(hi, r0 + chunk), dwl = dw + bytes<T>(r0);
    if (!direct) zeroRun<T>(col, (r1 - r0) * P);
    for (let n = 0; n < N; n++) {
      const xn = x + bytes<T>(n) * <usize>(C * HW);
      if (!direct) unroll<T>(GATHER, xn, col, geo, r0, r1, 0, Ho);
      const b = direct ? xn + bytes<T>(r0) * <usize>HW : col;
      gemm<T>(g + bytes<T>(n) * <usize>(O * P), b, dwl, O, r1 - r0, P, P, P, K, 0, 1, n > 0 ? 1 : 0);
    }
  }
}

// Direct convolution (forward only), for layers whose im2col GEMM is small in K or M (first
// layers with C = 1, the bench CNN's 8-channel layers): no col matrix and no GEMM packing. Per
// image, x[n] is copied once into a zero-padded copy whose rows are split into sw phases,
//   img[((c·Hp + r)·sw + q)·Wq + u] = x[c, r − ph, (u·sw + q) − pw]   (0 outside the image),
// so output columns ow..ow+7 of tap (c, i, j) are one contiguous run, phase j % sw from u = ow +
// j / sw. The micro-kernel is the GEMM's 4 rows × 2 vectors with that run in place of packed B:
//   y[n, o, oh, ow] = Σ_k w[o, k] · img[tap(k) + oh·sh·sw·Wq + ow],   k = (c·kh + i)·kw + j ascending,
// in blocks of whole channels (tapBlock): per block acc from 0, c + a·b per step (madd), then
// y = acc (first block) or y = y + acc. Each output element's order depends only on K,
// never on the piece it falls in, so thread cuts over images or channels give the same bits.
// Scratch `pad`: pre-broadcast weights of channels [lo, hi) (4-row slivers, zero rows past hi:
// ⌈m/4⌉·4·K v128), K i32 tap offsets (rounded to 16 B), then the padded image (C·Hp·sw·Wq).

/** 4 output channels × 8 f32 (4 f64) output columns: acc = Σ_k wp[k] · run(k), stored as 4 rows of 2 vectors at y (row stride ldyB bytes). */
@inline function directTile<T>(wp: usize, taps: usize, K: i32, base: usize, y: usize, ldyB: usize, overwrite: bool): void {
  const z = v128.splat<T>(<T>0);
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  const tEnd = taps + (<usize>K << 2);
  while (taps < tEnd) {
    const p = base + <usize>load<i32>(taps);
    const b0 = v128.load(p), b1 = v128.load(p, 16);
    let a = v128.load(wp);
    c00 = madd<T>(a, b0, c00);
    c01 = madd<T>(a, b1, c01);
    a = v128.load(wp, 16);
    c10 = madd<T>(a, b0, c10);
    c11 = madd<T>(a, b1, c11);
    a = v128.load(wp, 32);
    c20 = madd<T>(a, b0, c20);
    c21 = madd<T>(a, b1, c21);
    a = v128.load(wp, 48);
    c30 = madd<T>(a, b0, c30);
    c31 = madd<T>(a, b1, c31);
    wp += 64;
    taps += 4;
  }
  store_row2<T>(y, c00, c01, overwrite);
  store_row2<T>(y + ldyB, c10, c11, overwrite);
  store_row2<T>(y + 2 * ldyB, c20, c21, overwrite);
  store_row2<T>(y + 3 * ldyB, c30, c31, overwrite);
}

/** Two accumulator vectors to a row of y: overwrite, or y + acc. */
@inline function store_row2<T>(y: usize, v0: v128, v1: v128, overwrite: bool): void {
  if (!overwrite) {
    v0 = v128.add<T>(v128.load(y), v0);
    v1 = v128.add<T>(v128.load(y, 16), v1);
  }
  v128.store(y, v0);
  v128.store(y, v1, 16);
}

/** Taps per accumulation block of the direct kernel: whole input channels, about 128 taps (≥ one channel), like the GEMM's K blocks: f32 sums of 800 taps in one chain lost accuracy. */
@inline function tapBlock(kk: i32): i32 { return max(1, 128 / kk) * kk; }

/**
 * geo[15] of conv2d_direct: FLIPPED reads w as the filters [C, O, kh, kw] of a stride-1 conv whose
 * input gradient this is, transposed and flipped: the input gradient of a stride-1 conv with
 * padding p is the conv of g with those filters and padding k − 1 − p ("full" correlation).
 */
@inline const FLIPPED = 1;

/** Index in the original filters w[C' = this conv's O, O' = this conv's C, kh, kw] of tap k of output channel o, flipped: w[c', o, kh−1−i, kw−1−j] with c' = k's channel. */
@inline function flippedTap(o: i32, k: i32, C: i32, O: i32, kh: i32, kw: i32): i32 {
  const c = k / (kh * kw), i = k / kw % kh, j = k % kw;
  return ((c * O + o) * kh + (kh - 1 - i)) * kw + (kw - 1 - j);
}

@inline function convDirect<T>(x: usize, w: usize, y: usize, pad: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), H = ldi(geo, GH), W = ldi(geo, GW), O = ldi(geo, GO);
  const kh = ldi(geo, GKH), kw = ldi(geo, GKW), sh = ldi(geo, GSH), sw = ldi(geo, GSW), ph = ldi(geo, GPH);
  const Ho = ldi(geo, GHO), Wo = ldi(geo, GWO), lo = ldi(geo, GLO), m = ldi(geo, GHI) - lo;
  const K = C * kh * kw, P = Ho * Wo, Hp = H + 2 * ph, Wq = phaseWidth<T>(geo), L = lanes<T>(), nb = 2 * L;
  const mp = (m + 3) / 4 * 4, S = <i32>sizeof<T>(), kb = tapBlock(kh * kw), flipped = ldi(geo, GTILE) == FLIPPED;
  const wp = pad, taps = wp + <usize>(mp * K * 16), img = taps + <usize>((K + 3) / 4 * 16);
  // Weights pre-broadcast in 4-row slivers, as the GEMM packs A (zero rows past m).
  for (let s = 0; s < mp; s += 4)
    for (let k = 0; k < K; k++)
      for (let r = 0; r < 4; r++) {
        const v = s + r < m ? ld<T>(w, flipped ? flippedTap(lo + s + r, k, C, O, kh, kw) : (lo + s + r) * K + k) : <T>0;
        v128.store(wp + <usize>(((s * K + k * 4) + r) * 16), v128.splat<T>(v));
      }
  for (let k = 0; k < K; k++) {
    const c = k / (kh * kw), i = k / kw % kh, j = k % kw;
    store<i32>(taps + (<usize>k << 2), (((c * Hp + i) * sw + j % sw) * Wq + j / sw) * S);
  }
  const tile = img + <usize>(C * Hp * sw * Wq * S); // edge tiles: 4 rows × 2 vectors (128 B)
  for (let n = 0; n < N; n++) {
    padImage<T>(x + bytes<T>(n) * <usize>(C * H * W), img, geo);
    const yn = y + bytes<T>(n * O + lo) * <usize>P;
    for (let s = 0; s < mp; s += 4) {
      const ws = wp + <usize>(s * K * 16), rows = min(4, m - s);
      for (let oh = 0; oh < Ho; oh++) {
        const rowBase = img + <usize>(oh * sh * sw * Wq * S);
        const yrow = at<T>(yn, s * P + oh * Wo);
        for (let ow = 0; ow < Wo; ow += nb) {
          const full = rows == 4 && ow + nb <= Wo, dst = full ? at<T>(yrow, ow) : tile, ldB = <usize>((full ? P : nb) * S);
          for (let k0 = 0; k0 < K; k0 += kb) {
            directTile<T>(ws + <usize>(k0 * 64), taps + (<usize>k0 << 2), min(kb, K - k0), at<T>(rowBase, ow), dst, ldB, k0 == 0);
          }
          if (!full) {
            const cols = min(nb, Wo - ow);
            for (let r = 0; r < rows; r++)
              for (let q = 0; q < cols; q++) st<T>(yrow, r * P + ow + q, ld<T>(tile, r * nb + q));
          }
        }
      }
    }
  }
}

/** y[N, lo:hi, Ho, Wo] = conv(x, w) by direct convolution (geo[15] = 1: w transposed and flipped, see FLIPPED); pad: scratch as laid out above plus 128 B (src/ops/conv.ts sizes it), 16-byte aligned; y must not alias x, w or pad. */
export function conv2d_direct_f32(x: usize, w: usize, y: usize, pad: usize, geo: usize): void { convDirect<f32>(x, w, y, pad, geo); }
export function conv2d_direct_f64(x: usize, w: usize, y: usize, pad: usize, geo: usize): void { convDirect<f64>(x, w, y, pad, geo); }

/** y[N, lo:hi, Ho, Wo] = conv(x, w); col: scratch of C·kh·kw·tile·Wo elements (unused when pointwise); y must not alias x, w or col. */
export function conv2d_f32(x: usize, w: usize, y: usize, col: usize, geo: usize): void { conv2d<f32>(x, w, y, col, geo); }
export function conv2d_f64(x: usize, w: usize, y: usize, col: usize, geo: usize): void { conv2d<f64>(x, w, y, col, geo); }
/** dx[N, lo:hi, H, W] = VJP of conv2d w.r.t. x at cotangent g[N, O, Ho, Wo] (overwritten); col: tile·kh·kw·Ho·Wo elements; no aliasing. */
export function conv2d_input_grad_f32(g: usize, w: usize, dx: usize, col: usize, geo: usize): void { conv2dInputGrad<f32>(g, w, dx, col, geo); }
export function conv2d_input_grad_f64(g: usize, w: usize, dx: usize, col: usize, geo: usize): void { conv2dInputGrad<f64>(g, w, dx, col, geo); }
/** dw[O, C·kh·kw][:, lo:hi] = VJP of conv2d w.r.t. w at cotangent g (overwritten; images summed in order); col: tile·Ho·Wo elements; no aliasing. */
export function conv2d_filter_grad_f32(x: usize, g: usize, dw: usize, col: usize, geo: usize): void { conv2dFilterGrad<f32>(x, g, dw, col, geo); }
export function conv2d_filter_grad_f64(x: usize, g: usize, dw: usize, col: usize, geo: usize): void { conv2dFilterGrad<f64>(x, g, dw, col, geo); }
