// Shared layout helpers of the convolution kernels (conv.ts, convfilter.ts): the geometry
// block's fields, runs of elements, and the direct kernels' zero-padded, phase-split image copy.
// Not re-exported by index.ts: nothing here is a kernel.
import { lanes, ld, st, at, ldi } from './lanes';

// Geometry block fields (conv.ts's header): N, C, H, W, O, kh, kw, sh, sw, ph, pw, Ho, Wo, lo, hi, tile.
@inline export const GN = 0;
@inline export const GC = 1;
@inline export const GH = 2;
@inline export const GW = 3;
@inline export const GO = 4;
@inline export const GKH = 5;
@inline export const GKW = 6;
@inline export const GSH = 7;
@inline export const GSW = 8;
@inline export const GPH = 9;
@inline export const GPW = 10;
@inline export const GHO = 11;
@inline export const GWO = 12;
@inline export const GLO = 13;
@inline export const GHI = 14;
@inline export const GTILE = 15;

/** Byte size of n elements of T. */
@inline export function bytes<T>(n: i32): usize { return <usize>n << alignof<T>(); }

/** dst[0..n) = src[0..n); the last vector overlaps the one before it instead of a scalar tail. */
@inline export function copyRun<T>(dst: usize, src: usize, n: i32): void {
  const L = lanes<T>();
  if (n < L) {
    for (let k = 0; k < n; k++) st<T>(dst, k, ld<T>(src, k));
    return;
  }
  for (let k = 0; k < n - L; k += L) v128.store(at<T>(dst, k), v128.load(at<T>(src, k)));
  v128.store(at<T>(dst, n - L), v128.load(at<T>(src, n - L)));
}

/** dst[0..n) = 0. */
@inline export function zeroRun<T>(dst: usize, n: i32): void {
  const L = lanes<T>();
  const z = v128.splat<T>(<T>0);
  let k = 0;
  for (; k + L <= n; k += L) v128.store(at<T>(dst, k), z);
  for (; k < n; k++) st<T>(dst, k, <T>0);
}

/** Elements per phase row of the padded copy: every run a micro-tile reads (8 f32 / 4 f64 past the last output block) stays inside it. */
@inline export function phaseWidth<T>(geo: usize): i32 {
  const Wo = ldi(geo, GWO), sw = ldi(geo, GSW), kw = ldi(geo, GKW), nb = 2 * lanes<T>();
  return (Wo + nb - 1) / nb * nb + (kw - 1) / sw + 1;
}

/** Copies x[n] (C·H·W) into the zeroed, phase-split padded layout img (see above). */
export function padImage<T>(xn: usize, img: usize, geo: usize): void {
  const C = ldi(geo, GC), H = ldi(geo, GH), W = ldi(geo, GW), ph = ldi(geo, GPH), pw = ldi(geo, GPW), sw = ldi(geo, GSW);
  const Hp = H + 2 * ph, Wq = phaseWidth<T>(geo);
  zeroRun<T>(img, C * Hp * sw * Wq);
  for (let c = 0; c < C; c++) {
    for (let h = 0; h < H; h++) {
      const src = at<T>(xn, (c * H + h) * W), row = at<T>(img, (c * Hp + h + ph) * sw * Wq);
      if (sw == 1) copyRun<T>(at<T>(row, pw), src, W);
      else {
        // Phase q holds padded columns u = t·sw + q, i.e. image columns iw = t·sw + q − pw (no
        // division per element); columns past the phase row (never read) are not stored.
        for (let q = 0; q < sw; q++) {
          let t = q >= pw ? 0 : (pw - q + sw - 1) / sw, iw = t * sw + q - pw;
          const dst = at<T>(row, q * Wq);
          for (; iw < W && t < Wq; t++, iw += sw) st<T>(dst, t, ld<T>(src, iw));
        }
      }
    }
  }
}
