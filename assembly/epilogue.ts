// The bias + activation epilogue that matmul.ts's gemm_bias_act runs on each finished block of
// C (the forward of a dense layer; its backward is in dense.ts). Activation codes ACT_* are
// shared with dense.ts and src/ops/dense.ts. y = act(z + b), z the GEMM's finished sum: the
// same single rounding as add(z, b), then unary.ts's activation (f32 tanh/sigmoid: the vmath.ts
// lane code, tail included; f64: the scalar code), so y equals tanh(add(matmul, b)) bit for bit.
// gemm_sgd's epilogue (sgdStep) is optim.ts's sgd without momentum on the finished gradient block:
// the same operations in the same order, so the parameter gets the same bits as gemm then sgd.
import { lanes, ld, st, at } from './lanes';
import { tanh_s, sigmoid_s } from './scalar';
import { tanh4, sigmoid4, loadTail, storeTail } from './vmath';

@inline export const ACT_NONE = 0;
@inline export const ACT_RELU = 1;
@inline export const ACT_TANH = 2;
@inline export const ACT_SIGMOID = 3;

/** act(v) for one element; act is a constant after inlining. */
@inline function actS<T>(act: i32, v: T): T {
  switch (act) {
    case ACT_RELU: return v > <T>0 || v != v ? v : <T>0; // NaN stays NaN, as relu_f32
    case ACT_TANH: return tanh_s<T>(v);
    case ACT_SIGMOID: return sigmoid_s<T>(v);
  }
  return v;
}

/** Whether act has a v128 form for T: relu and none always, tanh and sigmoid for f32 (vmath). */
@inline function actSimd<T>(act: i32): bool {
  return act == ACT_NONE || act == ACT_RELU || sizeof<T>() == 4;
}

/** act(v) per lane; only called when actSimd<T>(act). */
@inline function actV<T>(act: i32, v: v128): v128 {
  switch (act) {
    case ACT_RELU: return v128.and(v, v128.or(v128.gt<T>(v, v128.splat<T>(<T>0)), v128.ne<T>(v, v))); // NaN stays NaN
    case ACT_TANH: return tanh4(v);
    case ACT_SIGMOID: return sigmoid4(v);
  }
  return v;
}

/** One row: c[0:n] = act(c[0:n] + bias[0:n]). */
@inline function biasActRow<T>(act: i32, c: usize, bias: usize, n: i32): void {
  const L = lanes<T>();
  let j = 0;
  if (actSimd<T>(act)) {
    for (; j + L <= n; j += L) v128.store(at<T>(c, j), actV<T>(act, v128.add<T>(v128.load(at<T>(c, j)), v128.load(at<T>(bias, j)))));
    if (sizeof<T>() == 4 && act >= ACT_TANH && j < n) {
      // vmath tail: the same lane code on a partly filled vector, as unary.ts's tanh_f32 does.
      storeTail(at<T>(c, j), actV<T>(act, v128.add<T>(loadTail(at<T>(c, j), n - j), loadTail(at<T>(bias, j), n - j))), n - j);
      return;
    }
  }
  for (; j < n; j++) st<T>(c, j, actS<T>(act, ld<T>(c, j) + ld<T>(bias, j)));
}

@inline function biasActRows<T>(act: i32, c: usize, ldc: i32, bias: usize, m: i32, n: i32): void {
  for (let i = 0; i < m; i++) biasActRow<T>(act, c + <usize>i * <usize>ldc * sizeof<T>(), bias, n);
}

/** Epilogue on an m×n block of C (row stride ldc elements): C = act(C + bias[0:n]) per row; act ∈ ACT_*. */
export function biasAct<T>(c: usize, ldc: i32, bias: usize, m: i32, n: i32, act: i32): void {
  switch (act) {
    case ACT_RELU: biasActRows<T>(ACT_RELU, c, ldc, bias, m, n); break;
    case ACT_TANH: biasActRows<T>(ACT_TANH, c, ldc, bias, m, n); break;
    case ACT_SIGMOID: biasActRows<T>(ACT_SIGMOID, c, ldc, bias, m, n); break;
    default: biasActRows<T>(ACT_NONE, c, ldc, bias, m, n);
  }
}


/** Epilogue code of gemm_sgd (beyond the ACT_* codes): the block is a gradient and updates p. */
@inline export const EPI_SGD = 4;

/** One row: p[0:n] = p − lr·(g + wd·p), the decay term only when wd ≠ 0 (optim.ts's sgd, momentum 0). */
@inline function sgdRow<T>(g: usize, p: usize, n: i32, lrT: T, wdT: T, decay: bool): void {
  const L = lanes<T>();
  const vlr = v128.splat<T>(lrT), vwd = v128.splat<T>(wdT);
  let j = 0;
  for (; j + L <= n; j += L) {
    const vp = v128.load(at<T>(p, j));
    let d = v128.load(at<T>(g, j));
    if (decay) d = v128.add<T>(d, v128.mul<T>(vwd, vp));
    v128.store(at<T>(p, j), v128.sub<T>(vp, v128.mul<T>(vlr, d)));
  }
  for (; j < n; j++) {
    const vp = ld<T>(p, j);
    let d = ld<T>(g, j);
    if (decay) d = d + wdT * vp;
    st<T>(p, j, vp - lrT * d);
  }
}

/** Epilogue on an m×n block of the gradient C and the same block of p (both row stride ldc): p = p − lr·(C + wd·p), lr and wd rounded to T once as sgd does. */
export function sgdStep<T>(c: usize, p: usize, ldc: i32, m: i32, n: i32, lr: f64, wd: f64): void {
  const lrT = <T>lr, wdT = <T>wd, stride = <usize>ldc * sizeof<T>();
  if (wd != 0) for (let i = 0; i < m; i++) sgdRow<T>(c + <usize>i * stride, p + <usize>i * stride, n, lrT, wdT, true);
  else for (let i = 0; i < m; i++) sgdRow<T>(c + <usize>i * stride, p + <usize>i * stride, n, lrT, wdT, false);
}
