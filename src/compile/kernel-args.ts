// Which arguments of each kernel export are pointers (AssemblyScript `usize` parameters), so a
// traced launch can tell a buffer address from a count or a stride that happens to have the
// same value. compile() rebases the pointers and keeps everything else as recorded. A kernel
// missing here makes compile() run the function eagerly (with a warning naming it);
// test/compile.test.ts checks this table against the `export function` lines in assembly/.

/** Kernel families (each an _f32 and an _f64 export) by their number of leading pointer arguments. */
const LEADING: Record<number, string> = {
  1: 'count_nonfinite fill rand_uniform rand_normal dropout_mask sum_squares scale' +
    ' attention_dropout',
  2: 'neg exp log sqrt abs square sin cos tanh sigmoid relu softplus leaky_relu clamp step inside sign recip ' +
    'sum max sum_cols max_cols softmax layer_norm',
  3: 'add sub mul div pow maximum minimum gt ge eq gather scatter_add gemm sgd tanh_vjp sigmoid_vjp relu_vjp ' +
    'softmax_xent layer_norm_vjp avg_pool2d avg_pool2d_vjp',
  4: 'adam max_pool2d max_pool2d_vjp softmax_xent_vjp gemm_bias_act bias_act_vjp' +
    ' lstm_cell gru_cell',
  5: 'conv2d conv2d_input_grad conv2d_filter_grad' +
    ' lstm_cell_vjp gru_cell_vjp',
};

/** Exports outside the families, as bit masks (bit i set: argument i is a pointer). */
const OTHERS: Record<string, number> = {
  heap_base: 0, gemm_scratch_bytes: 0, sqrt_scalar: 0, clip_coef: 0, gemm_set_scratch: 0b1,
  cast_f32_f64: 0b11, cast_f64_f32: 0b11,
  strided_copy_f32: 0b111011, strided_copy_f64: 0b111011, // (x, y, ndim, shape, xstrides, ystrides)
  // (q, k, v, mask, y, n0, n1, geometry, scale, p, scratch, seedLo, seedHi)
  attention_f32: 0b100_1001_1111, attention_f64: 0b100_1001_1111,
  // (q, k, v, mask, y, gy, dq, dk, dv, n0, n1, geometry, scale, p, scratch, seedLo, seedHi)
  attention_vjp_f32: 0b100_1001_1111_1111, attention_vjp_f64: 0b100_1001_1111_1111,
};

/** Export name → pointer-argument mask. */
export const POINTER_ARGS: ReadonlyMap<string, number> = (() => {
  const m = new Map<string, number>(Object.entries(OTHERS));
  for (const [n, names] of Object.entries(LEADING)) {
    for (const name of names.split(' ')) for (const s of ['_f32', '_f64']) m.set(name + s, (1 << Number(n)) - 1);
  }
  return m;
})();
