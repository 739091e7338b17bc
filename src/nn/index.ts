/**
 * The nn namespace: PyTorch-style modules with PyTorch's parameter names, layouts and inits.
 *
 * @module
 */
export { Module } from './module.js';
export { Linear, type LinearOptions, type Feedback } from './linear.js';
export { Sequential, type SequentialOptions } from './sequential.js';
export { ReLU, Tanh, GELU, Flatten, Unflatten, Dropout, LayerNorm, Embedding, Residual } from './layers.js';
export { Conv2d, MaxPool2d, AvgPool2d, type Conv2dOptions, type Size } from './conv.js';
export {
  MultiheadAttention,
  TransformerEncoderLayer,
  type MultiheadAttentionOptions,
  type AttentionForwardOptions,
  type TransformerEncoderLayerOptions,
  type EncoderForwardOptions,
} from './attention.js';
export { LSTM, GRU, LSTMCell, GRUCell, type RNNOptions } from './rnn.js';
export { ModuleList } from './containers.js';
/** Also top-level; API.md lists it with the nn modules. */
export { gradientStats } from './diagnostics.js';
export { GPT, type GPTBlock, type GPTCache, type GPTConfig, type TokenIds } from './gpt.js';
export type { SampleOptions } from './gpt-sample.js';
