/**
 * The optim namespace: optimizers with PyTorch's update rules, parameter groups and state dicts,
 * learning-rate schedulers, and gradient clipping.
 *
 * @module
 */
export { Optimizer, type Params, type ParamGroup, type ParamGroupInput } from './optimizer.js';
export { SGD, type SGDOptions, type SGDGroup } from './sgd.js';
export { Adam, AdamW, type AdamOptions, type AdamGroup } from './adam.js';
export { clipGradNorm, clipGradValue } from './clip.js';
export { dpGradients, perExampleGradNorms, type DpOptions, type DpMethod } from './dp.js';
export * as lrScheduler from './lr-scheduler.js';
