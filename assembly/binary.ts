// Elementwise binary kernels y = a ∘ b with NumPy broadcasting, over a 2-D view that JS
// collapses any broadcast down to: y[r, c] = a[r·sar + c·sac] ∘ b[r·sbr + c·sbc], y contiguous.
// Column strides are 0 (broadcast) or 1 (contiguous). Contract for every kernel:
// (a, b, y, rows, cols, sar, sac, sbr, sbc); y may alias a or b when their strides are y's own.
import { lanes, ld, st, at } from './lanes';
import { pow_s } from './scalar';

@inline const ADD = 0;
@inline const SUB = 1;
@inline const MUL = 2;
@inline const DIV = 3;
@inline const POW = 4;
@inline const MAX = 5;
@inline const MIN = 6;
@inline const GT = 7;
@inline const GE = 8;
@inline const EQ = 9;

@inline function g<T>(op: i32, a: T, b: T): T {
  switch (op) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case DIV: return a / b;
    case POW: return pow_s<T>(a, b);
    case MAX: return max<T>(a, b);
    case MIN: return min<T>(a, b);
    case GT: return a > b ? <T>1 : <T>0;
    case GE: return a >= b ? <T>1 : <T>0;
    case EQ: return a == b ? <T>1 : <T>0;
  }
  return a;
}

@inline function simd(op: i32): bool { return op != POW; }

@inline function gv<T>(op: i32, a: v128, b: v128): v128 {
  const one = v128.splat<T>(<T>1);
  switch (op) {
    case ADD: return v128.add<T>(a, b);
    case SUB: return v128.sub<T>(a, b);
    case MUL: return v128.mul<T>(a, b);
    case DIV: return v128.div<T>(a, b);
    case MAX: return v128.max<T>(a, b);
    case MIN: return v128.min<T>(a, b);
    case GT: return v128.and(v128.gt<T>(a, b), one);
    case GE: return v128.and(v128.ge<T>(a, b), one);
    case EQ: return v128.and(v128.eq<T>(a, b), one);
  }
  return a;
}

/** One row: the three stride cases get their own SIMD loop so the splat is hoisted. */
@inline function row<T>(op: i32, a: usize, b: usize, y: usize, n: i32, sac: i32, sbc: i32): void {
  const L = lanes<T>();
  let i = 0;
  if (simd(op)) {
    if (sac == 1 && sbc == 1) {
      for (; i + L <= n; i += L) v128.store(at<T>(y, i), gv<T>(op, v128.load(at<T>(a, i)), v128.load(at<T>(b, i))));
    } else if (sac == 1) {
      const vb = v128.splat<T>(load<T>(b));
      for (; i + L <= n; i += L) v128.store(at<T>(y, i), gv<T>(op, v128.load(at<T>(a, i)), vb));
    } else if (sbc == 1) {
      const va = v128.splat<T>(load<T>(a));
      for (; i + L <= n; i += L) v128.store(at<T>(y, i), gv<T>(op, va, v128.load(at<T>(b, i))));
    }
  }
  for (; i < n; i++) st<T>(y, i, g<T>(op, ld<T>(a, i * sac), ld<T>(b, i * sbc)));
}

@inline function zip<T>(op: i32, a: usize, b: usize, y: usize, rows: i32, cols: i32,
  sar: i32, sac: i32, sbr: i32, sbc: i32): void {
  for (let r = 0; r < rows; r++) {
    row<T>(op, at<T>(a, r * sar), at<T>(b, r * sbr), at<T>(y, r * cols), cols, sac, sbc);
  }
}

/** y = a + b */
export function add_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(ADD, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function add_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(ADD, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a - b */
export function sub_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(SUB, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function sub_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(SUB, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a · b */
export function mul_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(MUL, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function mul_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(MUL, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a / b */
export function div_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(DIV, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function div_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(DIV, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a^b (C99 pow) */
export function pow_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(POW, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function pow_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(POW, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = max(a, b), NaN-propagating */
export function maximum_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(MAX, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function maximum_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(MAX, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = min(a, b), NaN-propagating */
export function minimum_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(MIN, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function minimum_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(MIN, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a > b ? 1 : 0 */
export function gt_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(GT, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function gt_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(GT, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a >= b ? 1 : 0 */
export function ge_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(GE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function ge_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(GE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** y = a == b ? 1 : 0 */
export function eq_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f32>(EQ, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function eq_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { zip<f64>(EQ, a, b, y, rows, cols, sar, sac, sbr, sbc); }
