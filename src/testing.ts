// Test-only entry: fault injection and the internals tests and benches steer or read. Not part
// of the package (src/index.ts never imports it, and nothing in src/ does); production modules
// keep only the state these act on.
import { currentPool } from './wasm/pool.js';
import { dieOnNextJob } from './wasm/threads.js';
import { SLOT } from './wasm/worker-source.js';
import { pauseUntil } from './wasm/congestion.js';
import { observingInputs } from './ops/apply.js';
import type { Prim } from './ops/table.js';

export { threadStats, busy } from './wasm/congestion.js';
export { balance, cutKey, cutUnits, setCuts, proposeCuts } from './wasm/balance.js';
export { threadCount, runJobs } from './wasm/threads.js';
export { poolSize } from './wasm/pool.js';
export { checked as anomalyChecks } from './ops/anomaly.js';
export { rules } from './ops/table.js';

/** Worker w (0-based) exits abruptly when it receives its next job. */
export function killWorkerOnNextJob(w: number): void {
  dieOnNextJob.add(w);
}

/** The supervisor terminates worker w (0-based) `afterMs` from now, as an outside kill would. */
export function terminateWorkerLater(w: number, afterMs: number): void {
  currentPool()?.supervisor.send({ kill: w, afterMs });
}

/** Worker w (0-based) takes `percent` per cent longer for each job from now on, as a slower core would (0: full speed). */
export function slowWorker(w: number, percent: number): void {
  const c = currentPool()?.slots[w];
  if (c !== undefined) Atomics.store(c, SLOT.SLOW, Math.round(percent));
}

/** Pauses the pool for `ms` as a busy machine would; 0 ends a pause. */
export function pauseFor(ms: number): void {
  pauseUntil(ms > 0 ? performance.now() + ms : 0);
}

/** The primitives fn runs through apply() (VJP and JVP rules included: they run ops too). */
export function primitivesRun(fn: () => void): Set<Prim> {
  const seen = new Set<Prim>();
  observingInputs((_xs, prim) => seen.add(prim), fn);
  return seen;
}
