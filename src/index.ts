// adjoint: reverse-mode automatic differentiation and neural-network training on WebAssembly SIMD.
export { init } from './wasm/init.js';
export type { InitOptions } from './wasm/module.js';
export { backend, type BackendInfo } from './wasm/backend.js';
export { Tensor, type TensorLike } from './ops/tensor.js';
export type { DType } from './tensor/dtype.js';
export { tensor, zeros, ones, full, arange, randn, rand, type TensorOptions, type RandomOptions, type Nested } from './ops/create.js';
export { tidy, keep, memory, resetPeak, type MemoryInfo } from './tensor/memory.js';
export {
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  neg,
  exp,
  log,
  sqrt,
  abs,
  square,
  sin,
  cos,
  tanh,
  sigmoid,
  relu,
  softplus,
  leakyRelu,
  gelu,
  clamp,
  erf,
  type GeluOptions,
  sum,
  mean,
  max,
  logsumexp,
  reshape,
  transpose,
  broadcastTo,
  concat,
  slice,
  gather,
  matmul,
  softmax,
  logSoftmax,
  crossEntropy,
  mseLoss,
  layerNorm,
  conv2d,
  maxPool2d,
  avgPool2d,
  dropout,
  type Conv2dOptions,
  type DropoutOptions,
  astype,
  detach,
  stopGradient,
  type Axis,
  type Reduction,
  permute,
  unsqueeze,
  squeeze,
  flatten,
  split,
  chunk,
  tril,
  triu,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  where,
  maskedFill,
  argmax,
  type CrossEntropyOptions,
  type CrossEntropyLabels,
} from './ops/api.js';
export { scaledDotProductAttention, type AttentionOptions } from './ops/attention-api.js';
export { grad, valueAndGrad, vjp, noGrad, customVjp, type VjpFn, type VjpOptions, type GradOptions } from './autodiff/transforms.js';
export { jvp, jacfwd, jacrev, hvp, hessian, type JacobianFn } from './autodiff/forward.js';
export { vmap, type VmapOptions, type AxisSpec } from './autodiff/vmap.js';
export * as autograd from './autodiff/autograd.js';
export type { AutogradOptions } from './autodiff/autograd.js';
export type { BackwardOptions } from './ops/backward.js';
export type { Pytree } from './autodiff/pytree.js';
export { functionalCall } from './nn/functional.js';
export { gradcheck, type GradcheckResult } from './autodiff/gradcheck.js';
export { checkpoint } from './autodiff/checkpoint.js';
export type { CheckpointPlan } from './autodiff/segments.js';
export { detectAnomaly, withAnomalyDetection } from './ops/anomaly.js';
export { compile, type Compiled, type CompileOptions, type CompileStats } from './compile/compile.js';
export * as nn from './nn/index.js';
export { setFeedback } from './nn/linear.js';
export { withBackprop } from './nn/feedback.js';
export {
  gradientStats,
  gradientWarnings,
  alignmentAngles,
  type GradientStat,
  type AlignmentAngle,
  type WarningOptions,
} from './nn/diagnostics.js';
export * as optim from './optim/index.js';
export { clipGradNorm, clipGradValue } from './optim/clip.js';
export * as io from './io/index.js';
export * as data from './data/index.js';
export {
  AdjointError,
  ShapeError,
  DtypeError,
  DisposedError,
  GradError,
  OutOfMemoryError,
  FormatError,
  ArgumentError,
  AnomalyError,
} from './errors.js';
