// Backward of a dense layer y = act(x·Wᵀ + b) up to its two GEMMs (the forward is matmul.ts's
// gemm_bias_act with epilogue.ts). gz = g·act'(y) is computed exactly as unary.ts's tanh_vjp /
// sigmoid_vjp / relu_vjp, so it is bit-identical to them; the bias gradient comes in the same pass.
import { lanes, ld, st, at } from './lanes';
import { ACT_NONE, ACT_RELU, ACT_TANH, ACT_SIGMOID } from './epilogue';

/**
 * bias_act_vjp's code (beyond ACT_* and EPI_SGD) for a y that holds act'(z) itself, saved by the
 * forward pass: gz = g·y. A compiled step uses it for GELU (gelu_erf_with_grad's d), so
 * gelu_erf_vjp's product g·gelu'(z) and the bias gradient come in one pass, with its bits.
 */
@inline const ACT_GIVEN = 5;

/** g·act'(y) from the saved output y, as unary.ts's fused VJPs (g itself for ACT_NONE). */
@inline function dS<T>(act: i32, y: T, g: T): T {
  switch (act) {
    case ACT_TANH: return g * (<T>1 - y * y);
    case ACT_SIGMOID: return g * (y * (<T>1 - y));
    case ACT_RELU: return y > <T>0 ? g : <T>0; // a select, as relu_vjp: an infinite or NaN g stops where y ≤ 0
    case ACT_GIVEN: return g * y;
  }
  return g;
}

@inline function dV<T>(act: i32, y: v128, g: v128): v128 {
  const one = v128.splat<T>(<T>1);
  switch (act) {
    case ACT_TANH: return v128.mul<T>(g, v128.sub<T>(one, v128.mul<T>(y, y)));
    case ACT_SIGMOID: return v128.mul<T>(g, v128.mul<T>(y, v128.sub<T>(one, y)));
    case ACT_RELU: return v128.and(g, v128.gt<T>(y, v128.splat<T>(<T>0)));
    case ACT_GIVEN: return v128.mul<T>(g, y);
  }
  return g;
}

/** Rows of the backward step: gz = g·act'(y) (not stored for ACT_NONE), db[j] += gz[i, j] row by row. */
@inline function biasActVjpRows<T>(act: i32, y: usize, g: usize, gz: usize, db: usize, M: i32, N: i32, rs: i32): void {
  const L = lanes<T>();
  for (let i = 0; i < M; i++) {
    const o = <usize>i * <usize>rs * sizeof<T>();
    const yr = y + o, gr = g + o, zr = gz + o;
    let j = 0;
    for (; j + L <= N; j += L) {
      const d = dV<T>(act, v128.load(at<T>(yr, j)), v128.load(at<T>(gr, j)));
      if (act != ACT_NONE) v128.store(at<T>(zr, j), d);
      v128.store(at<T>(db, j), v128.add<T>(v128.load(at<T>(db, j)), d));
    }
    for (; j < N; j++) {
      const d = dS<T>(act, ld<T>(yr, j), ld<T>(gr, j));
      if (act != ACT_NONE) st<T>(zr, j, d);
      st<T>(db, j, ld<T>(db, j) + d);
    }
  }
}

/**
 * Backward of y = act(x·Wᵀ + b) up to the two GEMMs, in one pass over y and g: gz = g·act'(y)
 * and the bias gradient db[j] = Σ_i gz[i, j], summed over i ascending from 0 (a fixed order, so
 * cutting the columns across threads changes nothing). y, g, gz: M rows of N columns at row
 * stride rs elements; db: N elements. gz may alias g or y; for ACT_NONE gz is not written.
 */
function biasActVjp<T>(y: usize, g: usize, gz: usize, db: usize, M: i32, N: i32, rs: i32, act: i32): void {
  for (let j = 0; j < N; j++) st<T>(db, j, <T>0);
  switch (act) {
    case ACT_RELU: biasActVjpRows<T>(ACT_RELU, y, g, gz, db, M, N, rs); break;
    case ACT_TANH: biasActVjpRows<T>(ACT_TANH, y, g, gz, db, M, N, rs); break;
    case ACT_SIGMOID: biasActVjpRows<T>(ACT_SIGMOID, y, g, gz, db, M, N, rs); break;
    case ACT_GIVEN: biasActVjpRows<T>(ACT_GIVEN, y, g, gz, db, M, N, rs); break;
    default: biasActVjpRows<T>(ACT_NONE, y, g, gz, db, M, N, rs);
  }
}

/** gz = g·act'(y), db = column sums of gz (see biasActVjp); act: 0 none, 1 relu, 2 tanh, 3 sigmoid, 5 y is act'(z) (gz = g·y) */
export function bias_act_vjp_f32(y: usize, g: usize, gz: usize, db: usize, M: i32, N: i32, rs: i32, act: i32): void { biasActVjp<f32>(y, g, gz, db, M, N, rs, act); }
export function bias_act_vjp_f64(y: usize, g: usize, gz: usize, db: usize, M: i32, N: i32, rs: i32, act: i32): void { biasActVjp<f64>(y, g, gz, db, M, N, rs, act); }
