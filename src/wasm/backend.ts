// What the engine runs on: which kernel build init() loaded, how many threads kernels use and
// how the pool shares work between them.
import { runtime } from './module.js';
import { hasRelaxedSimd } from './relaxed.js';
import { poolSize } from './pool.js';
import { threadShares } from './balance.js';
import { tooMany } from '../args.js';

/** What {@link backend} reports: the kernel build in use, whether relaxed SIMD is available, the thread count and the threads' shares. */
export interface BackendInfo {
  /** 'relaxed': the relaxed-SIMD kernels (init({ relaxedSimd: true }) on an engine that has relaxed SIMD); 'default': the bit-identical ones. */
  kernels: 'default' | 'relaxed';
  /** Whether this engine has relaxed SIMD, i.e. whether init({ relaxedSimd: true }) loads the relaxed kernels here. */
  relaxedSimdAvailable: boolean;
  /** Threads in the worker pool, the calling one included (1 without a pool). */
  threads: number;
  /**
   * Each thread's share of a kernel cut across the pool, the calling thread first: equal unless
   * the pool found its threads running at unequal speeds (docs/threads.md). Results do not depend on it.
   */
  shares: number[];
}

/** Which kernels and how many threads the initialised engine uses; throws before init(). */
export function backend(): BackendInfo {
  if (arguments.length > 0) throw tooMany('backend', 0, arguments.length);
  const r = runtime();
  return {
    kernels: r.relaxed ? 'relaxed' : 'default',
    relaxedSimdAvailable: hasRelaxedSimd(),
    threads: poolSize(),
    shares: threadShares(poolSize()),
  };
}
