// argmax along one axis of a [outer, len, inner] view, written as int32 indices y[outer, inner].
// As PyTorch: the first maximum wins ties, and NaN counts as larger than any number (the first
// NaN wins). len ≥ 1 (JS rejects empty axes).
import { lanes, ld, st, at, hmax } from './lanes';

/** Largest lane of an i32x4 (lanes.ts's hmax reads 4-byte lanes as f32). */
@inline function hmaxI32(v: v128): i32 {
  return max(max(i32x4.extract_lane(v, 0), i32x4.extract_lane(v, 1)), max(i32x4.extract_lane(v, 2), i32x4.extract_lane(v, 3)));
}

/** Index of the largest of n ≥ 1 contiguous elements: a SIMD max pass, then a scan for its first place. */
@inline function argmaxRow<T>(x: usize, n: i32): i32 {
  const L = lanes<T>();
  let i = 0, m: T;
  if (n >= L) {
    let vm = v128.load(x);
    for (i = L; i + L <= n; i += L) vm = v128.max<T>(vm, v128.load(at<T>(x, i))); // max propagates NaN
    m = isInteger<T>() ? hmaxI32(vm) as T : hmax<T>(vm);
  } else {
    m = ld<T>(x, 0);
    i = 1;
  }
  for (; i < n; i++) m = max<T>(m, ld<T>(x, i));
  if (m != m) {
    for (let j = 0; j < n; j++) if (ld<T>(x, j) != ld<T>(x, j)) return j;
  }
  for (let j = 0; j < n; j++) if (ld<T>(x, j) == m) return j;
  return 0;
}

/** First index of the maximum of column c of a [len, inner] block (scalar tail of the strided case). */
@inline function argmaxCol<T>(x: usize, len: i32, inner: i32): i32 {
  let best = ld<T>(x, 0), bi = 0;
  for (let k = 1; k < len; k++) {
    const v = ld<T>(x, k * inner);
    if (v > best || (v != v && best == best)) {
      best = v;
      bi = k;
    }
  }
  return bi;
}

/** One [len, inner] block, L columns at a time: running best values and their indices per lane. */
@inline function argmaxBlock<T>(x: usize, y: usize, len: i32, inner: i32): void {
  const L = lanes<T>();
  let c = 0;
  for (; c + L <= inner; c += L) {
    let best = v128.load(at<T>(x, c));
    // Indices ride in lanes of T's width: i32x4 beside f32x4; f64x2 (exact integers) beside f64x2.
    let bi = v128.splat<T>(<T>0);
    if (sizeof<T>() == 4) bi = i32x4.splat(0);
    for (let k = 1; k < len; k++) {
      const v = v128.load(at<T>(x, k * inner + c));
      const take = v128.or(v128.gt<T>(v, best), v128.and(v128.ne<T>(v, v), v128.eq<T>(best, best)));
      best = v128.bitselect(v, best, take);
      const kv = sizeof<T>() == 4 ? i32x4.splat(k) : f64x2.splat(<f64>k);
      bi = v128.bitselect(kv, bi, take);
    }
    if (sizeof<T>() == 4) v128.store(at<i32>(y, c), bi);
    else v128.store64_lane(at<i32>(y, c), i32x4.trunc_sat_f64x2_s_zero(bi), 0);
  }
  for (; c < inner; c++) st<i32>(y, c, argmaxCol<T>(at<T>(x, c), len, inner));
}

@inline function argmax<T>(x: usize, y: usize, outer: i32, len: i32, inner: i32): void {
  for (let o = 0; o < outer; o++) {
    const xo = at<T>(x, o * len * inner);
    if (inner == 1) st<i32>(y, o, argmaxRow<T>(xo, len));
    else argmaxBlock<T>(xo, at<i32>(y, o * inner), len, inner);
  }
}
/** y[o, i] = argmax_k x[o, k, i] (y: i32[outer·inner]) */
export function argmax_f32(x: usize, y: usize, outer: i32, len: i32, inner: i32): void { argmax<f32>(x, y, outer, len, inner); }
export function argmax_f64(x: usize, y: usize, outer: i32, len: i32, inner: i32): void { argmax<f64>(x, y, outer, len, inner); }
export function argmax_i32(x: usize, y: usize, outer: i32, len: i32, inner: i32): void { argmax<i32>(x, y, outer, len, inner); }
