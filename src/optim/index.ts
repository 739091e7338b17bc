// The optim namespace: optimizers with PyTorch's update rules, and gradient clipping.
export { Optimizer, type Params } from './optimizer.js';
export { SGD, type SGDOptions } from './sgd.js';
export { Adam, AdamW, type AdamOptions } from './adam.js';
export { clipGradNorm, clipGradValue } from './clip.js';
export { dpGradients, type DpOptions } from './dp.js';
