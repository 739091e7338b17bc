// Row-wise softmax and softmax cross-entropy over contiguous [rows, cols] matrices.
// Subtracting the row max keeps exp from overflowing. Row sums use the reduce kernels' order
// (lane-wise partials, a fixed horizontal fold, then the tail; pairwise past SUM_LEAF), so the cross-entropy here is
// bit-identical to the composite logsumexp − x[label] it replaces; f32 exp is vmath's exp4.
import { lanes, ld, st, at, hsum, hmax, SUM_LEAF, pairSplit, lost2, lost1, compensated, foldPair, foldLost } from './lanes';
import { exp_s, log_s } from './scalar';
import { exp4 } from './vmath';

/** e^v lane-wise: vmath's exp4 for f32, the musl scalar per lane for f64. */
@inline function expv<T>(v: v128): v128 {
  if (sizeof<T>() == 4) return exp4(v);
  return f64x2.replace_lane(f64x2.splat(exp_s<f64>(f64x2.extract_lane(v, 0))), 1, exp_s<f64>(f64x2.extract_lane(v, 1)));
}

/** max_j x[j] over a row of n ≥ 1 elements. */
@inline function rowMax<T>(x: usize, n: i32): T {
  const L = lanes<T>();
  let v = v128.splat<T>(<T>-Infinity);
  let j = 0;
  for (; j + L <= n; j += L) v = v128.max<T>(v, v128.load(at<T>(x, j)));
  let m = hmax<T>(v);
  for (; j < n; j++) m = max<T>(m, ld<T>(x, j));
  return m;
}

/** Σ_j e^{x[j] − m}, writing each term to e (when e ≠ 0); long rows pairwise, as reduce.ts's sums. */
function rowExpSum<T>(x: usize, e: usize, n: i32, m: T): T {
  if (n <= SUM_LEAF) return leafExpSum<T>(x, e, n, m);
  const half = pairSplit(n);
  return rowExpSum<T>(x, e, half, m) + rowExpSum<T>(at<T>(x, half), e == 0 ? 0 : at<T>(e, half), n - half, m);
}

/** leafExpSum in float64: compensated, in reduce.ts's rowSumF64 order (so cross-entropy equals −logSoftmax bit for bit). */
@inline function leafExpSumF64(x: usize, e: usize, n: i32, m: f64): f64 {
  const mv = f64x2.splat(m);
  let s = f64x2.splat(0), c = s;
  let j = 0;
  for (; j + 2 <= n; j += 2) {
    const ev = expv<f64>(f64x2.sub(v128.load(at<f64>(x, j)), mv));
    if (e != 0) v128.store(at<f64>(e, j), ev);
    const t = f64x2.add(s, ev);
    c = f64x2.add(c, lost2(s, ev, t));
    s = t;
  }
  let t = foldPair(s, c);
  let lost = foldLost;
  for (; j < n; j++) {
    const ej = exp_s<f64>(ld<f64>(x, j) - m);
    if (e != 0) st<f64>(e, j, ej);
    const u = t + ej;
    lost += lost1(t, ej, u);
    t = u;
  }
  return compensated(t, lost);
}

/** rowExpSum over at most SUM_LEAF elements: lane-wise partials, the horizontal fold, the tail. */
@inline function leafExpSum<T>(x: usize, e: usize, n: i32, m: T): T {
  if (sizeof<T>() == 8) return <T>leafExpSumF64(x, e, n, <f64>m);
  const L = lanes<T>();
  const mv = v128.splat<T>(m);
  let v = v128.splat<T>(<T>0);
  let j = 0;
  for (; j + L <= n; j += L) {
    const ev = expv<T>(v128.sub<T>(v128.load(at<T>(x, j)), mv));
    if (e != 0) v128.store(at<T>(e, j), ev);
    v = v128.add<T>(v, ev);
  }
  let s = hsum<T>(v);
  for (; j < n; j++) {
    const ej = exp_s<T>(ld<T>(x, j) - m);
    if (e != 0) st<T>(e, j, ej);
    s += ej;
  }
  return s;
}

/** y[j] = (y[j]·a)·b over a row (b = 1 skips the second multiply). */
@inline function rowScale<T>(y: usize, n: i32, a: T, b: T): void {
  const L = lanes<T>();
  const av = v128.splat<T>(a), bv = v128.splat<T>(b);
  let j = 0;
  for (; j + L <= n; j += L) {
    const v = v128.mul<T>(v128.load(at<T>(y, j)), av);
    v128.store(at<T>(y, j), b == <T>1 ? v : v128.mul<T>(v, bv));
  }
  for (; j < n; j++) st<T>(y, j, b == <T>1 ? ld<T>(y, j) * a : (ld<T>(y, j) * a) * b);
}

@inline function softmax<T>(x: usize, y: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols), yr = at<T>(y, r * cols);
    const s = rowExpSum<T>(xr, yr, cols, rowMax<T>(xr, cols));
    rowScale<T>(yr, cols, <T>1 / s, <T>1);
  }
}
/** Row softmax of a [rows, cols] matrix; in-place allowed. */
export function softmax_f32(x: usize, y: usize, rows: i32, cols: i32): void { softmax<f32>(x, y, rows, cols); }
export function softmax_f64(x: usize, y: usize, rows: i32, cols: i32): void { softmax<f64>(x, y, rows, cols); }

@inline function xent<T>(x: usize, labels: usize, loss: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols);
    const mx = rowMax<T>(xr, cols);
    // A −∞ or NaN max shifts by 0, as logSoftmax; a +∞ logit makes the row NaN, as PyTorch.
    const m = mx - mx == <T>0 ? mx : mx == <T>Infinity ? <T>NaN : <T>0;
    const ls = log_s<T>(rowExpSum<T>(xr, 0, cols, m));
    // −((x − m) − log Σ e^{x−m}), logSoftmax's order: x − lse would round at the size of x.
    st<T>(loss, r, -((ld<T>(xr, load<i32>(labels + (<usize>r << 2))) - m) - ls));
  }
}
/** loss[r] = log Σ_j e^{x[r, j]} − x[r, labels[r]] (labels: i32[rows] in [0, cols), cols ≥ 1). */
export function softmax_xent_f32(x: usize, labels: usize, loss: usize, rows: i32, cols: i32): void { xent<f32>(x, labels, loss, rows, cols); }
export function softmax_xent_f64(x: usize, labels: usize, loss: usize, rows: i32, cols: i32): void { xent<f64>(x, labels, loss, rows, cols); }

@inline function xentVjp<T>(x: usize, labels: usize, g: usize, dx: usize, rows: i32, cols: i32): void {
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols), dr = at<T>(dx, r * cols);
    const s = rowExpSum<T>(xr, dr, cols, rowMax<T>(xr, cols));
    const inv = <T>1 / s, gr = ld<T>(g, r);
    const l = load<i32>(labels + (<usize>r << 2));
    const pl = ld<T>(dr, l) * inv;
    rowScale<T>(dr, cols, inv, gr);
    st<T>(dr, l, (pl - <T>1) * gr);
  }
}
/** dx[r, :] = g[r]·(softmax(x[r, :]) − onehot(labels[r])): the VJP of softmax_xent in one kernel; dx must not alias x. */
export function softmax_xent_vjp_f32(x: usize, labels: usize, g: usize, dx: usize, rows: i32, cols: i32): void { xentVjp<f32>(x, labels, g, dx, rows, cols); }
export function softmax_xent_vjp_f64(x: usize, labels: usize, g: usize, dx: usize, rows: i32, cols: i32): void { xentVjp<f64>(x, labels, g, dx, rows, cols); }
