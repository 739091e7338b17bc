// How much of a second core this process gets right now, for the benches that compare one and
// two threads (threads.ts, threads-step.ts, moonshot.ts). A round on a host whose second core
// has gone away, or runs at a fraction of the first one's speed, measures the host, not the library.
import { Worker } from 'node:worker_threads';
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './paths.js';

/** The same loop as the probe thread's below. */
function spin(n: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0;
  return x;
}
const PROBE = `const p = require('node:worker_threads').parentPort;
p.on('message', (n) => { let x = 0; for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0; p.postMessage(x); });`;
let probe: Worker | null = null;

/**
 * The work two threads of plain JS get done per unit of one thread's: a loop of n steps on this
 * thread alone, then on this thread and a worker at once (2.00: two idle cores; about 1: the
 * second vCPU is busy or not there). With the default n it takes ≈ 3 × 15 ms.
 */
export async function secondCore(n = 1e7): Promise<number> {
  probe ??= new Worker(PROBE, { eval: true });
  const p = probe;
  p.ref();
  const once = () => new Promise((r) => p.once('message', r));
  let t = performance.now();
  spin(n);
  const solo = performance.now() - t;
  t = performance.now();
  const done = once();
  p.postMessage(n);
  spin(n);
  await done;
  const work = (2 * solo) / (performance.now() - t);
  p.unref(); // between probes the idle thread does not keep the process alive
  return work;
}

let taskset: boolean | undefined;
/** Whether processes can be started on chosen cores (Linux with `taskset`). */
export function canPin(): boolean {
  taskset ??= process.platform === 'linux' && spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0;
  return taskset;
}

/** All cores, as `taskset -c` takes them: a child of a pinned thread inherits its one core otherwise. */
export const everyCore = (): string => `0-${os.cpus().length - 1}`;

/**
 * spawnSync(cmd, args) on the given cores (`taskset -c cores`), or as it is where that cannot be
 * done (canPin() false) or `cores` is null; output as UTF-8 text.
 */
export function spawnOn(cores: string | null, cmd: string, args: readonly string[], options: Omit<SpawnSyncOptions, 'encoding'> = {}) {
  const o = { ...options, encoding: 'utf8' as const };
  return cores !== null && canPin() ? spawnSync('taskset', ['-c', cores, cmd, ...args], o) : spawnSync(cmd, args, o);
}

/**
 * GEMM 512³ f32 GFLOP/s of one thread pinned to each core in turn (bench/gemm.mjs --probe under
 * `taskset`, ≈ 0.6 s a core), or null where that cannot run (not Linux, no taskset, no kernels
 * built). The integer loop of secondCore() does not see a core whose vector units are shared with
 * another tenant's: the development VM's two vCPUs ran this probe at 34 and 52 GFLOP/s for
 * minutes at a time while secondCore() reported 1.9, and an equal split of a training step
 * then runs at the slower core's pace (docs/threads.md).
 */
export function coreSpeeds(): number[] | null {
  if (!canPin()) return null;
  const script = path.join(repoRoot(), 'bench/gemm.mjs');
  const out = os.cpus().map((_, c) => {
    const r = spawnOn(String(c), process.execPath, [script, '--probe']);
    return r.status === 0 ? Number(r.stdout.trim()) : Number.NaN;
  });
  return out.every(Number.isFinite) ? out : null;
}

/** coreSpeeds() as text: `core speeds (GEMM 512³ on one thread): 52.3 / 33.9 GFLOP/s`. */
export const coreSpeedsText = (s: number[] | null): string =>
  s === null ? 'core speeds: not measured' : `core speeds (GEMM 512³ on one thread): ${s.map((v) => v.toFixed(1)).join(' / ')} GFLOP/s`;
