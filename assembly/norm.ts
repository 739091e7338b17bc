// Layer normalisation over contiguous rows: y = (x − μ)/√(σ² + eps), μ and σ² the row's mean
// and biased variance. Each row is normalised whole in one call (a few sweeps over a row
// that sits in cache). Every step is the composite's (src/ops/composite.ts) in its order —
// sums in the reduce kernels' order, division by d, eps added inside the square root — so
// the kernel's y is bit-identical to the composition of ops it replaces.
// Contract: (x, …, rows, cols ≥ 1, eps); outputs must not alias inputs.
import { lanes, ld, st, at, hsum } from './lanes';

/** Σ_j x[j] over a row, in the reduce kernels' order (lane partials, fixed fold, tail). */
@inline function rowSum<T>(x: usize, n: i32): T {
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

@inline function layerNorm<T>(x: usize, y: usize, rows: i32, cols: i32, epsd: f64): void {
  const L = lanes<T>();
  const d = <T>cols, eps = <T>epsd;
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols), yr = at<T>(y, r * cols);
    const m = rowSum<T>(xr, cols) / d;
    const den = sqrt<T>(rowSquares<T>(xr, cols, m) / d + eps);
    const mv = v128.splat<T>(m), dv = v128.splat<T>(den);
    let j = 0;
    for (; j + L <= cols; j += L) v128.store(at<T>(yr, j), v128.div<T>(v128.sub<T>(v128.load(at<T>(xr, j)), mv), dv));
    for (; j < cols; j++) st<T>(yr, j, (ld<T>(xr, j) - m) / den);
  }
}
/** y = (x − mean)/√(var + eps) per row of a [rows, cols] matrix (biased variance). */
export function layer_norm_f32(x: usize, y: usize, rows: i32, cols: i32, eps: f64): void { layerNorm<f32>(x, y, rows, cols, eps); }
export function layer_norm_f64(x: usize, y: usize, rows: i32, cols: i32, eps: f64): void { layerNorm<f64>(x, y, rows, cols, eps); }

@inline function layerNormVjp<T>(x: usize, g: usize, dx: usize, rows: i32, cols: i32, epsd: f64): void {
  const L = lanes<T>();
  const d = <T>cols, eps = <T>epsd;
  for (let r = 0; r < rows; r++) {
    const xr = at<T>(x, r * cols), gr = at<T>(g, r * cols), dr = at<T>(dx, r * cols);
    const m = rowSum<T>(xr, cols) / d;
    const den = sqrt<T>(rowSquares<T>(xr, cols, m) / d + eps); // as the forward pass
    const gm = rowSum<T>(gr, cols) / d;
    const a = rowDotNormed<T>(xr, gr, cols, m, den) / d;
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
}
/** dx = (g − mean(g) − ŷ·mean(g·ŷ))/√(var + eps) per row, ŷ the normalised x: layer_norm's VJP. */
export function layer_norm_vjp_f32(x: usize, g: usize, dx: usize, rows: i32, cols: i32, eps: f64): void { layerNormVjp<f32>(x, g, dx, rows, cols, eps); }
export function layer_norm_vjp_f64(x: usize, g: usize, dx: usize, rows: i32, cols: i32, eps: f64): void { layerNormVjp<f64>(x, g, dx, rows, cols, eps); }
