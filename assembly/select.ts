// Selection: where (pick a or b by a condition, with broadcasting) and tril/triu (keep one
// side of a diagonal of each matrix, zero the rest). Any element type: f32, f64, i32.
import { lanes, ld, st, at, ldi } from './lanes';

/** One row of where: y[i] = c[i·sc] != 0 ? a[i·sa] : b[i·sb]; strides 0 (broadcast) or 1 take the SIMD loop. */
@inline function whereRow<T>(c: usize, a: usize, b: usize, y: usize, n: i32, sc: i32, sa: i32, sb: i32): void {
  const L = lanes<T>();
  let i = 0;
  if (sc <= 1 && sa <= 1 && sb <= 1 && sc >= 0 && sa >= 0 && sb >= 0) {
    const zero = v128.splat<T>(<T>0);
    const c0 = v128.splat<T>(load<T>(c)), a0 = v128.splat<T>(load<T>(a)), b0 = v128.splat<T>(load<T>(b));
    for (; i + L <= n; i += L) {
      const vc = sc == 0 ? c0 : v128.load(at<T>(c, i));
      const va = sa == 0 ? a0 : v128.load(at<T>(a, i));
      const vb = sb == 0 ? b0 : v128.load(at<T>(b, i));
      v128.store(at<T>(y, i), v128.bitselect(va, vb, v128.ne<T>(vc, zero)));
    }
  }
  for (; i < n; i++) st<T>(y, i, ld<T>(c, i * sc) != <T>0 ? ld<T>(a, i * sa) : ld<T>(b, i * sb));
}

/** y = where(c, a, b) over `shape` (ndim ≥ 1, y contiguous; cs/as/bs: i32[ndim] element strides, 0 = broadcast). NaN counts as true. */
@inline function where<T>(c: usize, a: usize, b: usize, y: usize, ndim: i32, shape: usize, cs: usize, as: usize, bs: usize): void {
  const last = ndim - 1;
  const n = ldi(shape, last);
  let rows = 1;
  for (let k = 0; k < last; k++) rows *= ldi(shape, k);
  if (n == 0) return;
  for (let r = 0; r < rows; r++) {
    let rem = r, co = 0, ao = 0, bo = 0;
    for (let k = last - 1; k >= 0; k--) {
      const d = ldi(shape, k), ix = rem % d;
      rem /= d;
      co += ix * ldi(cs, k);
      ao += ix * ldi(as, k);
      bo += ix * ldi(bs, k);
    }
    whereRow<T>(at<T>(c, co), at<T>(a, ao), at<T>(b, bo), at<T>(y, r * n), n, ldi(cs, last), ldi(as, last), ldi(bs, last));
  }
}
export function where_f32(c: usize, a: usize, b: usize, y: usize, ndim: i32, shape: usize, cs: usize, as: usize, bs: usize): void { where<f32>(c, a, b, y, ndim, shape, cs, as, bs); }
export function where_f64(c: usize, a: usize, b: usize, y: usize, ndim: i32, shape: usize, cs: usize, as: usize, bs: usize): void { where<f64>(c, a, b, y, ndim, shape, cs, as, bs); }
export function where_i32(c: usize, a: usize, b: usize, y: usize, ndim: i32, shape: usize, cs: usize, as: usize, bs: usize): void { where<i32>(c, a, b, y, ndim, shape, cs, as, bs); }

/**
 * y[m, i, j] = x[m, i, j] where j − i ≤ k (tril; triu when `upper`: j − i ≥ k), else 0, over
 * `batch` row-major [rows, cols] matrices. Each row is one bulk copy and one or two bulk fills.
 */
@inline function tri<T>(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32, upper: bool): void {
  for (let m = 0; m < batch; m++) {
    for (let i = 0; i < rows; i++) {
      const o = (m * rows + i) * cols;
      // Kept columns [lo, hi): j ≤ i + k (lower) or j ≥ i + k (upper), clipped to the row.
      const lo = upper ? min(max(i + k, 0), cols) : 0;
      const hi = upper ? cols : min(max(i + k + 1, 0), cols);
      const src = at<T>(x, o), dst = at<T>(y, o);
      memory.fill(dst, 0, <usize>lo << alignof<T>());
      memory.copy(dst + (<usize>lo << alignof<T>()), src + (<usize>lo << alignof<T>()), <usize>(hi - lo) << alignof<T>());
      memory.fill(dst + (<usize>hi << alignof<T>()), 0, <usize>(cols - hi) << alignof<T>());
    }
  }
}
/** Lower triangle (tril), `batch` matrices [rows, cols], diagonal offset k. */
export function tril_f32(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<f32>(x, y, batch, rows, cols, k, false); }
export function tril_f64(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<f64>(x, y, batch, rows, cols, k, false); }
export function tril_i32(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<i32>(x, y, batch, rows, cols, k, false); }
/** Upper triangle (triu), `batch` matrices [rows, cols], diagonal offset k. */
export function triu_f32(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<f32>(x, y, batch, rows, cols, k, true); }
export function triu_f64(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<f64>(x, y, batch, rows, cols, k, true); }
export function triu_i32(x: usize, y: usize, batch: i32, rows: i32, cols: i32, k: i32): void { tri<i32>(x, y, batch, rows, cols, k, true); }
