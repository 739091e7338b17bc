// adjoint: reverse-mode automatic differentiation and neural-network training on WebAssembly SIMD.
export { init, type InitOptions } from './wasm/module.js';
export { Tensor, type TensorLike } from './tensor/tensor.js';
export type { DType } from './tensor/dtype.js';
export { tensor, zeros, ones, full, arange, randn, rand, type TensorOptions, type RandomOptions } from './tensor/create.js';
export { tidy, keep, memory, resetPeak, type MemoryInfo } from './memory.js';
export {
  add, sub, mul, div, pow, maximum, minimum,
  neg, exp, log, sqrt, abs, square, sin, cos, tanh, sigmoid, relu, softplus, leakyRelu, gelu, clamp,
  sum, mean, max, logsumexp,
  reshape, transpose, broadcastTo, concat, slice, gather,
  matmul, softmax, logSoftmax, crossEntropy, mseLoss, layerNorm,
  astype, detach, stopGradient,
} from './ops/api.js';
export { grad, valueAndGrad, vjp, noGrad, customVjp, type VjpFn, type GradOptions } from './autodiff/transforms.js';
export { gradcheck, type GradcheckResult } from './autodiff/gradcheck.js';
export { detectAnomaly } from './graph/anomaly.js';
export {
  AdjointError, ShapeError, DtypeError, DisposedError, GradError, OutOfMemoryError, FormatError, ArgumentError,
} from './errors.js';
