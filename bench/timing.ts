// Timing for the benchmark: warm up, then time batches of calls until a time budget is used,
// and report the median seconds per call. Sync and async (jax-js) workloads share the policy.
// A call is only "done" when the caller's function has forced the result (dataSync,
// blockUntilReady, reading wasm memory): that is each workload's job, not this file's.

export interface Timing {
  /** Median wall-clock seconds per call over the samples. */
  median: number;
  /** Fastest and slowest sample (wall seconds per call). */
  min: number;
  max: number;
  /**
   * Median process CPU seconds per call (user + system, process.cpuUsage). On a machine shared
   * with other jobs a descheduled process loses wall time but not CPU time, so this is the
   * steadier figure there; it also counts V8's background threads (GC, compiler).
   */
  cpuMedian: number;
  samples: number;
  /** Calls per sample. */
  reps: number;
}

export interface TimeOptions {
  /** Wall-clock budget for the timed samples (not counting warm-up), ms. */
  budgetMs?: number;
  /** Minimum length of one sample, ms: short calls are batched until a sample lasts this long. */
  sampleMs?: number;
  minSamples?: number;
  maxSamples?: number;
  /**
   * Warm-up runs batches of calls for at least warmMs and until two batches in a row fail to
   * beat the best so far by 5 % (V8 tiers JS and wasm up on background threads, which can take
   * hundreds of ms on a busy machine; load only ever makes batches slower, so "no longer getting
   * faster" is a load-proof test), but never longer than maxWarmMs.
   */
  warmMs?: number;
  maxWarmMs?: number;
  /** A call longer than this (ms) during warm-up is the only sample: nothing left to warm up, and it saves run time. */
  slowMs?: number;
}

const DEFAULTS: Required<TimeOptions> = {
  budgetMs: 250,
  sampleMs: 15,
  minSamples: 5,
  maxSamples: 25,
  warmMs: 60,
  maxWarmMs: 1500,
  slowMs: 1000,
};

/** The median (the mean of the middle two for an even count). */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * The timing policy as a generator, so one copy serves sync and async workloads: it yields how
 * many calls the next batch should run and receives [wall, cpu] seconds per call of that batch.
 */
function* policy(options: TimeOptions): Generator<number, Timing, [number, number]> {
  const o = { ...DEFAULTS, ...options };
  const single = (b: number, bc: number, reps: number): Timing => ({ median: b, min: b, max: b, cpuMedian: bc, samples: 1, reps });
  // Warm-up.
  const [first, firstCpu] = yield 1;
  if (first * 1000 > o.slowMs) return single(first, firstCpu, 1);
  let reps = Math.max(1, Math.ceil(o.sampleMs / 1000 / Math.max(first, 1e-6)));
  let best = first,
    stale = 0;
  const w0 = performance.now();
  for (;;) {
    const [b, bc] = yield reps;
    if (b * 1000 > o.slowMs) return single(b, bc, reps);
    if (b < best * 0.95) [best, stale] = [b, 0];
    else stale++;
    const elapsed = performance.now() - w0;
    if ((elapsed >= o.warmMs && stale >= 2) || elapsed >= o.maxWarmMs || b * 1000 > o.budgetMs) break;
  }
  // Samples, each ≥ sampleMs (timer resolution, loop overhead).
  reps = Math.max(1, Math.ceil(o.sampleMs / 1000 / Math.max(best, 1e-6)));
  const minSamples = best * 1000 > o.budgetMs ? 1 : o.minSamples;
  const wall: number[] = [],
    cpu: number[] = [];
  const t0 = performance.now();
  while (wall.length < minSamples || (wall.length < o.maxSamples && performance.now() - t0 < o.budgetMs)) {
    const [b, bc] = yield reps;
    wall.push(b);
    cpu.push(bc);
  }
  return { median: median(wall), min: Math.min(...wall), max: Math.max(...wall), cpuMedian: median(cpu), samples: wall.length, reps };
}

/** Median seconds per call of a synchronous fn. */
export function timeSync(fn: () => void, options: TimeOptions = {}): Timing {
  const p = policy(options);
  let step = p.next();
  while (!step.done) {
    const reps = step.value;
    const t = performance.now(),
      c = cpuNow();
    for (let i = 0; i < reps; i++) fn();
    step = p.next([(performance.now() - t) / 1000 / reps, (cpuNow() - c) / reps]);
  }
  return step.value;
}

/** Median seconds per call of a function that may return a promise (awaited, one call at a time). */
export async function time(fn: () => void | Promise<void>, options: TimeOptions = {}): Promise<Timing> {
  const p = policy(options);
  let step = p.next();
  while (!step.done) {
    const reps = step.value;
    const t = performance.now(),
      c = cpuNow();
    for (let i = 0; i < reps; i++) {
      const r = fn();
      if (r instanceof Promise) await r;
    }
    step = p.next([(performance.now() - t) / 1000 / reps, (cpuNow() - c) / reps]);
  }
  return step.value;
}

/** Median seconds per call of an async fn. */
export const timeAsync = (fn: () => Promise<void>, options: TimeOptions = {}): Promise<Timing> => time(fn, options);

/** Deterministic pseudo-random floats in [-1, 1) for peer inputs (same data for every library). */
export function randomValues(n: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

/** Labels in [0, classes) for the classification workloads. */
export function randomLabels(n: number, classes: number, seed: number): Int32Array {
  const u = randomValues(n, seed);
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.min(classes - 1, Math.floor(((u[i] + 1) / 2) * classes));
  return out;
}
