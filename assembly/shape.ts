// Data movement: strided copies (transpose, broadcast, slice, concat, pad), fill, casts,
// gather and its VJP scatter-add. Shapes and strides arrive as i32 arrays in memory that JS
// writes into its argument block; strides are in elements and may be 0 (broadcast).
import { lanes, ld, st, at, ldi } from './lanes';

/** y[Σ idx_k·ys_k] = x[Σ idx_k·xs_k] for every index of `shape` (ndim ≥ 1; shape/xs/ys: i32[ndim]). */
@inline function stridedCopy<T>(x: usize, y: usize, ndim: i32, shape: usize, xs: usize, ys: usize): void {
  const last = ndim - 1;
  const n = ldi(shape, last), sx = ldi(xs, last), sy = ldi(ys, last);
  let rows = 1;
  for (let k = 0; k < last; k++) rows *= ldi(shape, k);
  if (n == 0 || rows == 0) return;
  if (last <= 3) {
    // Up to three leading axes (the head split/merge copies of attention are [B, T, H, D]) as
    // nested loops: no per-row index decomposition (three integer divisions per row of 32).
    const a = last - 3, b = last - 2, c = last - 1;
    const na = dim(shape, a), nb = dim(shape, b), nc = dim(shape, c);
    const xa = step(xs, a), xb = step(xs, b), xc = step(xs, c), ya = step(ys, a), yb = step(ys, b), yc = step(ys, c);
    for (let i = 0; i < na; i++)
      for (let j = 0; j < nb; j++)
        for (let k = 0; k < nc; k++) copyRow<T>(at<T>(x, i * xa + j * xb + k * xc), at<T>(y, i * ya + j * yb + k * yc), n, sx, sy);
    return;
  }
  for (let r = 0; r < rows; r++) {
    // Decompose the row number into the leading indices (last axis runs inside).
    let rem = r, xo = 0, yo = 0;
    for (let k = last - 1; k >= 0; k--) {
      const d = ldi(shape, k), ix = rem % d;
      rem /= d;
      xo += ix * ldi(xs, k);
      yo += ix * ldi(ys, k);
    }
    copyRow<T>(at<T>(x, xo), at<T>(y, yo), n, sx, sy);
  }
}

/** Extent of axis k, 1 for the axes a shape of fewer than four is padded with (k < 0). */
@inline function dim(shape: usize, k: i32): i32 { return k >= 0 ? ldi(shape, k) : 1; }
/** Stride of axis k, 0 for a padding axis. */
@inline function step(strides: usize, k: i32): i32 { return k >= 0 ? ldi(strides, k) : 0; }

/** Rows below this many bytes are moved with v128 loads and stores: memory.copy is a call into the engine, which costs more than a short row. */
@inline const SHORT_ROW: usize = 512;

@inline function copyRow<T>(x: usize, y: usize, n: i32, sx: i32, sy: i32): void {
  if (sx == 1 && sy == 1) {
    const bytes = <usize>n << alignof<T>();
    // memory.copy is memmove: overlapping rows keep it.
    if (bytes >= SHORT_ROW || (y < x + bytes && x < y + bytes)) {
      memory.copy(y, x, bytes);
      return;
    }
    let o: usize = 0;
    for (; o + 16 <= bytes; o += 16) v128.store(y + o, v128.load(x + o));
    for (; o < bytes; o += 4) store<u32>(y + o, load<u32>(x + o)); // raw bits, as memory.copy (every T is 4 or 8 bytes)
  } else {
    for (let i = 0; i < n; i++) st<T>(y, i * sy, ld<T>(x, i * sx));
  }
}

/** Strided copy of one element type (see stridedCopy). */
export function strided_copy_f32(x: usize, y: usize, ndim: i32, shape: usize, xs: usize, ys: usize): void { stridedCopy<f32>(x, y, ndim, shape, xs, ys); }
export function strided_copy_f64(x: usize, y: usize, ndim: i32, shape: usize, xs: usize, ys: usize): void { stridedCopy<f64>(x, y, ndim, shape, xs, ys); }
export function strided_copy_i32(x: usize, y: usize, ndim: i32, shape: usize, xs: usize, ys: usize): void { stridedCopy<i32>(x, y, ndim, shape, xs, ys); }

@inline function fill<T>(y: usize, n: i32, v: f64): void {
  const L = lanes<T>();
  const vv = v128.splat<T>(<T>v);
  let i = 0;
  for (; i + L <= n; i += L) v128.store(at<T>(y, i), vv);
  for (; i < n; i++) st<T>(y, i, <T>v);
}
/** y[0..n) = v */
export function fill_f32(y: usize, n: i32, v: f64): void { fill<f32>(y, n, v); }
export function fill_f64(y: usize, n: i32, v: f64): void { fill<f64>(y, n, v); }
export function fill_i32(y: usize, n: i32, v: f64): void { fill<i32>(y, n, v); }

/** y[i] = i, from an i32 counter converted per lane (so float32 rounds each i exactly as a JS Float32Array store does). */
@inline function arange<T>(y: usize, n: i32): void {
  const L = lanes<T>();
  let iv = i32x4(0, 1, 2, 3);
  const step = i32x4.splat(L);
  let i = 0;
  for (; i + L <= n; i += L) {
    if (isInteger<T>()) v128.store(at<T>(y, i), iv);
    else if (sizeof<T>() == 4) v128.store(at<T>(y, i), f32x4.convert_i32x4_s(iv));
    else v128.store(at<T>(y, i), f64x2.convert_low_i32x4_s(iv));
    iv = i32x4.add(iv, step);
  }
  for (; i < n; i++) st<T>(y, i, <T>i);
}
/** y[0..n) = 0, 1, …, n − 1 */
export function arange_f32(y: usize, n: i32): void { arange<f32>(y, n); }
export function arange_f64(y: usize, n: i32): void { arange<f64>(y, n); }
export function arange_i32(y: usize, n: i32): void { arange<i32>(y, n); }

/** y[i] = f64(x[i]) */
export function cast_f32_f64(x: usize, y: usize, n: i32): void {
  for (let i = 0; i < n; i++) st<f64>(y, i, <f64>ld<f32>(x, i));
}
/** y[i] = f32(x[i]) (round to nearest even) */
export function cast_f64_f32(x: usize, y: usize, n: i32): void {
  for (let i = 0; i < n; i++) st<f32>(y, i, <f32>ld<f64>(x, i));
}

/** y[o, k, i] = x[o, idx[k], i]; idx: i32[nidx], already range-checked by JS. */
@inline function gather<T>(x: usize, idx: usize, y: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void {
  const bytes = <usize>inner << alignof<T>();
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < nidx; k++) {
      memory.copy(at<T>(y, (o * nidx + k) * inner), at<T>(x, (o * axis + ldi(idx, k)) * inner), bytes);
    }
  }
}
/** dx[o, idx[k], i] += g[o, k, i] in increasing k (deterministic); dx must be zeroed first. */
@inline function scatterAdd<T>(g: usize, idx: usize, dx: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void {
  const L = lanes<T>();
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < nidx; k++) {
      const src = at<T>(g, (o * nidx + k) * inner), dst = at<T>(dx, (o * axis + ldi(idx, k)) * inner);
      let i = 0;
      for (; i + L <= inner; i += L) {
        v128.store(at<T>(dst, i), v128.add<T>(v128.load(at<T>(dst, i)), v128.load(at<T>(src, i))));
      }
      for (; i < inner; i++) st<T>(dst, i, ld<T>(dst, i) + ld<T>(src, i));
    }
  }
}
/** Gather rows along an axis of a [outer, axis, inner] view. */
export function gather_f32(x: usize, idx: usize, y: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void { gather<f32>(x, idx, y, outer, nidx, axis, inner); }
export function gather_f64(x: usize, idx: usize, y: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void { gather<f64>(x, idx, y, outer, nidx, axis, inner); }
export function gather_i32(x: usize, idx: usize, y: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void { gather<i32>(x, idx, y, outer, nidx, axis, inner); }
/** VJP of gather: scatter-add g into a zeroed dx. */
export function scatter_add_f32(g: usize, idx: usize, dx: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void { scatterAdd<f32>(g, idx, dx, outer, nidx, axis, inner); }
export function scatter_add_f64(g: usize, idx: usize, dx: usize, outer: i32, nidx: i32, axis: i32, inner: i32): void { scatterAdd<f64>(g, idx, dx, outer, nidx, axis, inner); }
