// Comparisons giving 0/1 in the operands' type, over binary.ts's 2-D broadcast view:
// y[r, c] = a[r·sar + c·sac] ∘ b[r·sbr + c·sbc], column strides 0 or 1, y contiguous.
// binary.ts holds gt/ge/eq for the float types; this family adds ne and the int32 versions
// (binary.ts's generic also instantiates pow and div, which int32 has no business with).
// Contract: (a, b, y, rows, cols, sar, sac, sbr, sbc); y may alias a or b when strides match.
import { lanes, ld, st, at } from './lanes';

@inline const GT = 0;
@inline const GE = 1;
@inline const EQ = 2;
@inline const NE = 3;

@inline function c<T>(op: i32, a: T, b: T): T {
  switch (op) {
    case GT: return a > b ? <T>1 : <T>0;
    case GE: return a >= b ? <T>1 : <T>0;
    case EQ: return a == b ? <T>1 : <T>0;
  }
  return a != b ? <T>1 : <T>0;
}

/** Lane masks (all ones where true) ANDed with 1. */
@inline function cv<T>(op: i32, a: v128, b: v128): v128 {
  const one = v128.splat<T>(<T>1);
  switch (op) {
    case GT: return v128.and(v128.gt<T>(a, b), one);
    case GE: return v128.and(v128.ge<T>(a, b), one);
    case EQ: return v128.and(v128.eq<T>(a, b), one);
  }
  return v128.and(v128.ne<T>(a, b), one);
}

@inline function row<T>(op: i32, a: usize, b: usize, y: usize, n: i32, sac: i32, sbc: i32): void {
  const L = lanes<T>();
  let i = 0;
  if (sac == 1 && sbc == 1) {
    for (; i + L <= n; i += L) v128.store(at<T>(y, i), cv<T>(op, v128.load(at<T>(a, i)), v128.load(at<T>(b, i))));
  } else if (sac == 1) {
    const vb = v128.splat<T>(load<T>(b));
    for (; i + L <= n; i += L) v128.store(at<T>(y, i), cv<T>(op, v128.load(at<T>(a, i)), vb));
  } else if (sbc == 1) {
    const va = v128.splat<T>(load<T>(a));
    for (; i + L <= n; i += L) v128.store(at<T>(y, i), cv<T>(op, va, v128.load(at<T>(b, i))));
  }
  for (; i < n; i++) st<T>(y, i, c<T>(op, ld<T>(a, i * sac), ld<T>(b, i * sbc)));
}

@inline function cmp<T>(op: i32, a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void {
  for (let r = 0; r < rows; r++) row<T>(op, at<T>(a, r * sar), at<T>(b, r * sbr), at<T>(y, r * cols), cols, sac, sbc);
}

/** y = a != b ? 1 : 0 (NaN != anything) */
export function ne_f32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<f32>(NE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
export function ne_f64(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<f64>(NE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** int32 y = a > b ? 1 : 0 */
export function gt_i32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<i32>(GT, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** int32 y = a >= b ? 1 : 0 */
export function ge_i32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<i32>(GE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** int32 y = a == b ? 1 : 0 */
export function eq_i32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<i32>(EQ, a, b, y, rows, cols, sar, sac, sbr, sbc); }
/** int32 y = a != b ? 1 : 0 */
export function ne_i32(a: usize, b: usize, y: usize, rows: i32, cols: i32, sar: i32, sac: i32, sbr: i32, sbc: i32): void { cmp<i32>(NE, a, b, y, rows, cols, sar, sac, sbr, sbc); }
