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
export * from './convfilter';
export * from './pool';
export * from './optim';

/** First byte past the module's static data; JS places its arena above it. */
export function heap_base(): usize { return __heap_base; }
export * from './cast';
export * from './compare';
export * from './select';
export * from './argmax';

/** 1 in the relaxed-SIMD build (asconfig target `relaxed`, see madd.ts), 0 in the default: lets JS tell which kernels it loaded. */
export function kernels_relaxed(): i32 { return ASC_FEATURE_RELAXED_SIMD ? 1 : 0; }
export * from './attention';
export * from './rnn';
