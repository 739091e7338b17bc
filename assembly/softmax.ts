// Softmax over contiguous rows: y[r, :] = exp(x[r, :] − max) / Σ exp(x[r, :] − max).
// Subtracting the row max keeps exp from overflowing; the sum runs in a fixed order.
import { lanes, ld, st, at } from './lanes';
import { exp_s } from './scalar';

@inline function softmax<T>(x: usize, y: usize, rows: i32, cols: i32): void {
  const L = lanes<T>();
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols), yr = at<T>(y, r * cols);
    let m = <T>-Infinity;
    for (let j = 0; j < cols; j++) m = max<T>(m, ld<T>(xr, j));
    let s = <T>0;
    for (let j = 0; j < cols; j++) {
      const e = exp_s<T>(ld<T>(xr, j) - m);
      st<T>(yr, j, e);
      s += e;
    }
    const inv = v128.splat<T>(<T>1 / s);
    let j = 0;
    for (; j + L <= cols; j += L) v128.store(at<T>(yr, j), v128.mul<T>(v128.load(at<T>(yr, j)), inv));
    for (; j < cols; j++) st<T>(yr, j, ld<T>(yr, j) * (<T>1 / s));
  }
}
/** Row softmax of a [rows, cols] matrix; in-place allowed. */
export function softmax_f32(x: usize, y: usize, rows: i32, cols: i32): void { softmax<f32>(x, y, rows, cols); }
export function softmax_f64(x: usize, y: usize, rows: i32, cols: i32): void { softmax<f64>(x, y, rows, cols); }
