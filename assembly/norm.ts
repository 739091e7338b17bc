// Layer normalisation over contiguous rows: y = (x − μ)/√(σ² + eps), μ and σ² the row's mean
// and biased variance. Each row is normalised whole in one call (a few sweeps over a row
// that sits in cache). Every step is the composite's (src/ops/composite.ts) in its order —
// sums in the reduce kernels' order, division by d, eps added inside the square root — so
// the kernel's y is bit-identical to the composition of ops it replaces.
// Contract: (x, …, rows, cols ≥ 1, eps); outputs must not alias inputs.
import { lanes, ld, st, at, hsum, lost2, lost1, compensated, foldPair, foldLost } from './lanes';

// float64 rows sum compensated, as reduce.ts's rowSumF64 (the same order, so the same bits):
// each helper's terms go through sumF64, which reads term k of the row with termF64.
@inline const PLAIN = 0; // x[j]
@inline const SQUARES = 1; // (x[j] − m)²
@inline const DOT = 2; // g[j]·((x[j] − m)/den)

@inline function termsF64(kind: i32, x: v128, g: v128, m: v128, den: v128): v128 {
  if (kind == PLAIN) return x;
  const c = f64x2.sub(x, m);
  return kind == SQUARES ? f64x2.mul(c, c) : f64x2.mul(g, f64x2.div(c, den));
}
@inline function termF64(kind: i32, x: f64, g: f64, m: f64, den: f64): f64 {
  if (kind == PLAIN) return x;
  const c = x - m;
  return kind == SQUARES ? c * c : g * (c / den);
}

/** Σ_j term(j) over a row in float64, compensated: lane-wise sums with their losses, the lanes, the tail. */
@inline function sumF64(kind: i32, x: usize, g: usize, n: i32, m: f64, den: f64): f64 {
  const mv = f64x2.splat(m), dv = f64x2.splat(den);
  let s = f64x2.splat(0), c = s;
  let j = 0;
  for (; j + 2 <= n; j += 2) {
    const v = termsF64(kind, v128.load(at<f64>(x, j)), kind == DOT ? v128.load(at<f64>(g, j)) : s, mv, dv);
    const t = f64x2.add(s, v);
    c = f64x2.add(c, lost2(s, v, t));
    s = t;
  }
  let t = foldPair(s, c);
  let lost = foldLost;
  for (; j < n; j++) {
    const v = termF64(kind, ld<f64>(x, j), kind == DOT ? ld<f64>(g, j) : 0, m, den), u = t + v;
    lost += lost1(t, v, u);
    t = u;
  }
  return compensated(t, lost);
}

/** Σ_j x[j] over a row, in the reduce kernels' order (lane partials, fixed fold, tail). */
@inline function rowSum<T>(x: usize, n: i32): T {
  if (sizeof<T>() == 8) return <T>sumF64(PLAIN, x, 0, n, 0, 1);
  const L = lanes<T>();
  let v = v128.splat<T>(<T>0);
  let j = 0;
  for (; j + L <= n; j += L) v = v128.add<T>(v, v128.load(at<T>(x, j)));
  let s = hsum<T>(v);
  for (; j < n; j++) s += ld<T>(x, j);
  return s;
}

/** Σ_j (x[j] − m)², same order. */
@inline function rowSquares<T>(x: usize, n: i32, m: T): T {
  if (sizeof<T>() == 8) return <T>sumF64(SQUARES, x, 0, n, <f64>m, 1);
  const L = lanes<T>();
  const mv = v128.splat<T>(m);
  let v = v128.splat<T>(<T>0);
  let j = 0;
  for (; j + L <= n; j += L) {
    const c = v128.sub<T>(v128.load(at<T>(x, j)), mv);
    v = v128.add<T>(v, v128.mul<T>(c, c));
  }
  let s = hsum<T>(v);
  for (; j < n; j++) {
    const c = ld<T>(x, j) - m;
    s += c * c;
  }
  return s;
}

/** Σ_j g[j]·((x[j] − m)/den), same order: d·mean(g ⊙ ŷ). */
@inline function rowDotNormed<T>(x: usize, g: usize, n: i32, m: T, den: T): T {
  if (sizeof<T>() == 8) return <T>sumF64(DOT, x, g, n, <f64>m, <f64>den);
  const L = lanes<T>();
  const mv = v128.splat<T>(m), dv = v128.splat<T>(den);
  let v = v128.splat<T>(<T>0);
  let j = 0;
  for (; j + L <= n; j += L) {
    const yh = v128.div<T>(v128.sub<T>(v128.load(at<T>(x, j)), mv), dv);
    v = v128.add<T>(v, v128.mul<T>(v128.load(at<T>(g, j)), yh));
  }
  let s = hsum<T>(v);
  for (; j < n; j++) s += ld<T>(g, j) * ((ld<T>(x, j) - m) / den);
  return s;
}

// Two rows at once (r and r + 1), each with the single-row helpers' operations in their order:
// two independent accumulator chains instead of one (a row's sums are bound by the add's
// latency), the same bits. The second row's result goes out through `second`. f32 only, and
// called rather than inlined (one call per pair of rows): the code stays small.
let second: f64 = 0;

/** rowSum of x0 (returned) and x1 (in `second`). */
function rowSum2<T>(x0: usize, x1: usize, n: i32): T {
  const L = lanes<T>();
  let v0 = v128.splat<T>(<T>0), v1 = v0;
  let j = 0;
  for (; j + L <= n; j += L) {
    v0 = v128.add<T>(v0, v128.load(at<T>(x0, j)));
    v1 = v128.add<T>(v1, v128.load(at<T>(x1, j)));
  }
  let s0 = hsum<T>(v0), s1 = hsum<T>(v1);
  for (; j < n; j++) (s0 += ld<T>(x0, j)), (s1 += ld<T>(x1, j));
  second = <f64>s1;
  return s0;
}

/** rowSquares of x0 around m0 (returned) and x1 around m1 (in `second`). */
function rowSquares2<T>(x0: usize, x1: usize, n: i32, m0: T, m1: T): T {
  const L = lanes<T>();
  const mv0 = v128.splat<T>(m0), mv1 = v128.splat<T>(m1);
  let v0 = v128.splat<T>(<T>0), v1 = v0;
  let j = 0;
  for (; j + L <= n; j += L) {
    const c0 = v128.sub<T>(v128.load(at<T>(x0, j)), mv0), c1 = v128.sub<T>(v128.load(at<T>(x1, j)), mv1);
    v0 = v128.add<T>(v0, v128.mul<T>(c0, c0));
    v1 = v128.add<T>(v1, v128.mul<T>(c1, c1));
  }
  let s0 = hsum<T>(v0), s1 = hsum<T>(v1);
  for (; j < n; j++) {
    const c0 = ld<T>(x0, j) - m0, c1 = ld<T>(x1, j) - m1;
    s0 += c0 * c0;
    s1 += c1 * c1;
  }
  second = <f64>s1;
  return s0;
}

/** rowDotNormed of (x0, g0) (returned) and (x1, g1) (in `second`). */
function rowDotNormed2<T>(x0: usize, g0: usize, x1: usize, g1: usize, n: i32, m0: T, den0: T, m1: T, den1: T): T {
  const L = lanes<T>();
  const mv0 = v128.splat<T>(m0), dv0 = v128.splat<T>(den0), mv1 = v128.splat<T>(m1), dv1 = v128.splat<T>(den1);
  let v0 = v128.splat<T>(<T>0), v1 = v0;
  let j = 0;
  for (; j + L <= n; j += L) {
    const yh0 = v128.div<T>(v128.sub<T>(v128.load(at<T>(x0, j)), mv0), dv0);
    const yh1 = v128.div<T>(v128.sub<T>(v128.load(at<T>(x1, j)), mv1), dv1);
    v0 = v128.add<T>(v0, v128.mul<T>(v128.load(at<T>(g0, j)), yh0));
    v1 = v128.add<T>(v1, v128.mul<T>(v128.load(at<T>(g1, j)), yh1));
  }
  let s0 = hsum<T>(v0), s1 = hsum<T>(v1);
  for (; j < n; j++) {
    s0 += ld<T>(g0, j) * ((ld<T>(x0, j) - m0) / den0);
    s1 += ld<T>(g1, j) * ((ld<T>(x1, j) - m1) / den1);
  }
  second = <f64>s1;
  return s0;
}

/** y's row r from its mean m and den = √(var + eps). */
@inline function normRow<T>(xr: usize, yr: usize, cols: i32, m: T, den: T): void {
  const L = lanes<T>();
  const mv = v128.splat<T>(m), dv = v128.splat<T>(den);
  let j = 0;
  for (; j + L <= cols; j += L) v128.store(at<T>(yr, j), v128.div<T>(v128.sub<T>(v128.load(at<T>(xr, j)), mv), dv));
  for (; j < cols; j++) st<T>(yr, j, (ld<T>(xr, j) - m) / den);
}

@inline function layerNorm<T>(x: usize, y: usize, rows: i32, cols: i32, epsd: f64): void {
  const d = <T>cols, eps = <T>epsd;
  let r = 0;
  for (; sizeof<T>() == 4 && r + 2 <= rows; r += 2) {
    const x0 = at<T>(x, r * cols), x1 = at<T>(x, (r + 1) * cols);
    const m0 = rowSum2<T>(x0, x1, cols) / d, m1 = <T>second / d;
    const q0 = rowSquares2<T>(x0, x1, cols, m0, m1), q1 = <T>second;
    const den0 = sqrt<T>(q0 / d + eps), den1 = sqrt<T>(q1 / d + eps);
    normRow<T>(x0, at<T>(y, r * cols), cols, m0, den0);
    normRow<T>(x1, at<T>(y, (r + 1) * cols), cols, m1, den1);
  }
  for (; r < rows; r++) {
    const xr = at<T>(x, r * cols);
    const m = rowSum<T>(xr, cols) / d;
    const den = sqrt<T>(rowSquares<T>(xr, cols, m) / d + eps);
    normRow<T>(xr, at<T>(y, r * cols), cols, m, den);
  }
}
/** y = (x − mean)/√(var + eps) per row of a [rows, cols] matrix (biased variance). */
export function layer_norm_f32(x: usize, y: usize, rows: i32, cols: i32, eps: f64): void { layerNorm<f32>(x, y, rows, cols, eps); }
export function layer_norm_f64(x: usize, y: usize, rows: i32, cols: i32, eps: f64): void { layerNorm<f64>(x, y, rows, cols, eps); }

/** dx's row from the row's statistics: ((g − gm) − ŷ·a)/den, ŷ = (x − m)/den. */
@inline function vjpRow<T>(xr: usize, gr: usize, dr: usize, cols: i32, m: T, den: T, gm: T, a: T): void {
  const L = lanes<T>();
  const mv = v128.splat<T>(m), dv = v128.splat<T>(den), gmv = v128.splat<T>(gm), av = v128.splat<T>(a);
  let j = 0;
  for (; j + L <= cols; j += L) {
    const yh = v128.div<T>(v128.sub<T>(v128.load(at<T>(xr, j)), mv), dv);
    const t = v128.sub<T>(v128.sub<T>(v128.load(at<T>(gr, j)), gmv), v128.mul<T>(yh, av));
    v128.store(at<T>(dr, j), v128.div<T>(t, dv));
  }
  for (; j < cols; j++) {
    const yh = (ld<T>(xr, j) - m) / den;
    st<T>(dr, j, ((ld<T>(gr, j) - gm) - yh * a) / den);
  }
}

@inline function layerNormVjp<T>(x: usize, g: usize, dx: usize, rows: i32, cols: i32, epsd: f64): void {
  const d = <T>cols, eps = <T>epsd;
  let r = 0;
  for (; sizeof<T>() == 4 && r + 2 <= rows; r += 2) {
    const x0 = at<T>(x, r * cols), x1 = at<T>(x, (r + 1) * cols), g0 = at<T>(g, r * cols), g1 = at<T>(g, (r + 1) * cols);
    const m0 = rowSum2<T>(x0, x1, cols) / d, m1 = <T>second / d;
    const q0 = rowSquares2<T>(x0, x1, cols, m0, m1), q1 = <T>second;
    const den0 = sqrt<T>(q0 / d + eps), den1 = sqrt<T>(q1 / d + eps); // as the forward pass
    const gm0 = rowSum2<T>(g0, g1, cols) / d, gm1 = <T>second / d;
    const a0 = rowDotNormed2<T>(x0, g0, x1, g1, cols, m0, den0, m1, den1) / d, a1 = <T>second / d;
    vjpRow<T>(x0, g0, at<T>(dx, r * cols), cols, m0, den0, gm0, a0);
    vjpRow<T>(x1, g1, at<T>(dx, (r + 1) * cols), cols, m1, den1, gm1, a1);
  }
  for (; r < rows; r++) {
    const xr = at<T>(x, r * cols), gr = at<T>(g, r * cols);
    const m = rowSum<T>(xr, cols) / d;
    const den = sqrt<T>(rowSquares<T>(xr, cols, m) / d + eps);
    const gm = rowSum<T>(gr, cols) / d;
    const a = rowDotNormed<T>(xr, gr, cols, m, den) / d;
    vjpRow<T>(xr, gr, at<T>(dx, r * cols), cols, m, den, gm, a);
  }
}
/** dx = (g − mean(g) − ŷ·mean(g·ŷ))/√(var + eps) per row, ŷ the normalised x: layer_norm's VJP. */
export function layer_norm_vjp_f32(x: usize, g: usize, dx: usize, rows: i32, cols: i32, eps: f64): void { layerNormVjp<f32>(x, g, dx, rows, cols, eps); }
export function layer_norm_vjp_f64(x: usize, g: usize, dx: usize, rows: i32, cols: i32, eps: f64): void { layerNormVjp<f64>(x, g, dx, rows, cols, eps); }
