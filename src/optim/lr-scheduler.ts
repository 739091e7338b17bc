// The optim.lrScheduler namespace: PyTorch's learning-rate schedulers.
export { LRScheduler, type SchedulerState } from './scheduler-base.js';
export {
  StepLR,
  LinearLR,
  CosineAnnealingLR,
  LambdaLR,
  type StepLROptions,
  type LinearLROptions,
  type CosineAnnealingLROptions,
  type LambdaLROptions,
  type LrLambda,
} from './schedulers.js';
export { SequentialLR, type SequentialLROptions } from './scheduler-sequential.js';
export { OneCycleLR, type OneCycleLROptions } from './scheduler-one-cycle.js';
