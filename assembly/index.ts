// Entry point of the kernel module: every kernel family re-exported, plus the heap base.
export * from './unary';
export * from './binary';
export * from './reduce';
export * from './shape';
export * from './softmax';
export * from './norm';
export * from './random';
export * from './matmul';
export * from './dense';
export * from './conv';
export * from './pool';
export * from './optim';

/** First byte past the module's static data; JS places its arena above it. */
export function heap_base(): usize { return __heap_base; }
export * from './cast';
export * from './compare';
export * from './select';
export * from './argmax';
