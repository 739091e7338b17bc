// The worker pool behind init({ threads }). Every thread (the caller and n − 1 workers) has its
// own instance of the kernels on one shared WebAssembly.Memory, so a kernel call can be cut into
// pieces that write disjoint parts of its output (split.ts decides the cut). The API is
// synchronous, so dispatch is too: the caller writes a job into each worker's control slot in
// the shared memory (Atomics.store + notify), runs its own piece, then waits for every worker
// (Atomics.wait where the thread may block, a spin on Atomics.load on a browser main thread).
//
// Where threads cannot run (no SharedArrayBuffer: workerd, a page that is not cross-origin
// isolated; a precompiled module; no Worker) init falls back to one thread with a console
// notice. A worker that dies mid-kernel fails that call with an AdjointError naming it; later
// calls run on the calling thread (same bits, by construction) until init() restarts the pool.
// The workers are started by a supervisor thread whose only job is to see them die: a caller
// blocked in Atomics.wait runs no events, so it learns of a death through the slot (GONE).
import { AdjointError, ArgumentError } from '../errors.js';
import { compileKernels, decodeBase64, runtime, type InitOptions } from './module.js';
import { WASM_BASE64 } from './bytes.generated.js';
import { sharedMemoryVariant } from './shared-module.js';
import { SLOT, OK, FAILED, DEAD, QUIT, DIE } from './worker-source.js';
import { supervisorStarter, type Supervisor } from './supervisor.js';
import { hooks } from './hooks.js';

/** Upper bound for `threads` (and for 'auto'). */
const MAX_THREADS = 64;
/** Atomics.load polls before the caller, waiting for a worker, goes to sleep (a few tens of µs). */
const SPIN = 20000;
/** How long workers may take to start before init gives up on them (and runs on one thread). */
const START_MS = 60_000;
/** Longest single Atomics.wait of a caller (it re-checks the worker's GONE word in between). */
const WAIT_SLICE_MS = 100;

interface Pool {
  count: number;
  supervisor: Supervisor;
  slots: Int32Array[];
  args: Float64Array[];
  msgs: Uint16Array[];
  index: Map<string, number>;
  /** Atomics.wait is allowed on the calling thread (not on a browser main thread). */
  canBlock: boolean;
}
export interface ThreadSetup {
  count: number;
  memory: WebAssembly.Memory;
  module: WebAssembly.Module;
}

let pool: Pool | null = null;
/** The shared-memory kernels of this runtime (kept for restarts). */
let threadModule: WebAssembly.Module | null = null;
/** The thread count to restore when init() is called again after a worker died. */
let lost: number | null = null;
const noticed = new Set<string>();
/** Test hooks and counters (internal; not part of the public API). */
export const threadStats = { dispatches: 0, stolen: 0, pauses: 0, ownMs: 0, waitMs: 0 };

/** One console line per distinct reason, the first time it applies. */
function notice(reason: string): void {
  if (noticed.has(reason)) return;
  noticed.add(reason);
  console.warn(`adjoint: ${reason}; running on one thread`);
}

async function cores(): Promise<number> {
  const hc = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency;
  if (typeof hc === 'number' && hc > 0) return hc;
  try {
    const os = await import('node:os');
    return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  } catch {
    return 1;
  }
}

async function requestedCount(t: InitOptions['threads']): Promise<number> {
  if (t === undefined) return 1;
  if (t === 'auto') return Math.min(MAX_THREADS, Math.max(1, await cores()));
  if (typeof t !== 'number' || !Number.isSafeInteger(t) || t < 1) {
    throw new ArgumentError(`init: threads must be a positive integer or 'auto', got ${typeof t === 'string' ? `'${t}'` : String(t)}`);
  }
  return Math.min(t, MAX_THREADS);
}

const nodeLike = (): boolean => typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';

/** Why this runtime cannot run the pool, or null when it can. */
function unsupported(source: InitOptions['module']): string | null {
  const g = globalThis as { crossOriginIsolated?: boolean; Worker?: unknown };
  if (typeof SharedArrayBuffer !== 'function' || typeof Atomics !== 'object') {
    return 'threads need SharedArrayBuffer, which this runtime does not provide';
  }
  if (g.crossOriginIsolated === false) {
    return 'threads need a cross-origin isolated page (serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)';
  }
  if (source instanceof WebAssembly.Module) return 'threads need the kernels as bytes or a URL, not a compiled WebAssembly.Module';
  if (!nodeLike() && typeof g.Worker !== 'function') return 'threads need Web Workers, which this runtime does not provide';
  return null;
}

async function sourceBytes(source: InitOptions['module']): Promise<Uint8Array> {
  if (source === undefined) return decodeBase64(WASM_BASE64);
  if (typeof source === 'string' || source instanceof URL) {
    const res = await fetch(source);
    if (!res.ok) throw new ArgumentError(`init: fetching ${String(source)} gave HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }
  const s = source as ArrayBuffer | ArrayBufferView;
  return ArrayBuffer.isView(s) ? new Uint8Array(s.buffer, s.byteOffset, s.byteLength) : new Uint8Array(s);
}

/**
 * Called by init() before it creates the memory: the shared memory and the shared-memory
 * kernels when `threads` asks for more than one thread and the runtime can run them; null
 * (after a notice, when threads were asked for) otherwise.
 */
export async function prepareThreads(options: InitOptions, initial: number, maximum: number): Promise<ThreadSetup | null> {
  const count = await requestedCount(options.threads);
  if (count <= 1) return null;
  const why = unsupported(options.module);
  if (why !== null) return notice(why), null;
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial, maximum, shared: true } as WebAssembly.MemoryDescriptor);
  } catch (e) {
    return notice(`this runtime cannot create a shared WebAssembly.Memory (${(e as Error).message})`), null;
  }
  const bytes = sharedMemoryVariant(await sourceBytes(options.module));
  if (bytes === null) return notice('the kernels passed to init({ module }) import no memory that could be shared'), null;
  return { count, memory, module: await compileKernels(bytes as Uint8Array<ArrayBuffer>) };
}

const isShared = (m: WebAssembly.Memory): boolean => typeof SharedArrayBuffer === 'function' && m.buffer instanceof SharedArrayBuffer;

/**
 * Called by init() on an engine that is already initialised: starts, resizes or restarts the
 * pool when `threads` is given, or after a worker died; otherwise does nothing.
 */
export async function reinitThreads(options: InitOptions): Promise<void> {
  if (options.threads === undefined && lost === null) return;
  const count = options.threads === undefined ? lost! : await requestedCount(options.threads);
  if (pool !== null && pool.count === count) return;
  if (count > 1 && (threadModule === null || !isShared(runtime().memory))) {
    // After a fallback notice this is the same situation, already explained.
    if (noticed.size === 0) notice('threads must be asked for by the first init() call, which creates the (shared) memory');
    return;
  }
  stopPool();
  lost = null;
  if (count > 1) await startPool(count);
}

/** Called by init() once the runtime exists on the shared memory: starts the workers. */
export async function startThreads(setup: ThreadSetup): Promise<void> {
  threadModule = setup.module;
  await startPool(setup.count);
}

/** GEMM scratch regions reserved per runtime, one per thread (kept across pool restarts). */
const regions = new WeakMap<object, { scratch: number[]; scratchBytes: number }>();

/** The packing scratch of thread t (0 = the calling thread), reserved on first use. */
export function scratchOf(t: number): { ptr: number; bytes: number } {
  const r = runtime();
  let reg = regions.get(r);
  if (reg === undefined) {
    const bytes = r.exports.gemm_scratch_bytes?.(1 << 30, 1 << 30, 1 << 30, 8) ?? 0;
    regions.set(r, (reg = { scratch: [], scratchBytes: bytes }));
  }
  while (reg.scratch.length <= t) {
    // Without room for it (a small memory.maximumBytes) the calling thread packs nothing: the
    // GEMM's unpacked path gives the same bits, only slower. Workers need theirs (startPool).
    try {
      reg.scratch.push(reg.scratchBytes > 0 ? r.arena.reserve(reg.scratchBytes) : 0);
    } catch (e) {
      if (t > 0) throw e;
      reg.scratch.push(0);
    }
  }
  return { ptr: reg.scratch[t], bytes: reg.scratch[t] === 0 ? 0 : reg.scratchBytes };
}

async function startPool(count: number): Promise<void> {
  const r = runtime(), module = threadModule!;
  const names = Object.keys(r.exports).filter((n) => typeof r.exports[n] === 'function');
  const start = await supervisorStarter(nodeLike());
  const p: Pool = { count, supervisor: null!, slots: [], args: [], msgs: [], index: new Map(names.map((n, i) => [n, i])), canBlock: canBlock() };
  const workers: Record<string, unknown>[] = [];
  for (let w = 0; w < count - 1; w++) {
    // Fresh control slots for every pool: a stopped worker may still be exiting on its old one.
    const slot = r.arena.reserve(SLOT.BYTES), s = scratchOf(w + 1), buf = r.memory.buffer;
    p.slots.push(new Int32Array(buf, slot, SLOT.ARGS_AT >> 2).fill(0));
    p.args.push(new Float64Array(buf, slot + SLOT.ARGS_AT, SLOT.MAX_ARGS));
    p.msgs.push(new Uint16Array(buf, slot + SLOT.MSG_AT, SLOT.MSG_CHARS));
    workers.push({ module, memory: r.memory, slot, scratch: s.ptr, scratchBytes: s.bytes, names, spinMs: busy.spinMs, calmMs: busy.calmMs, calmAfter: busy.calmAfter });
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    p.supervisor = start({ memory: r.memory, workers }, (why) => p.slots.forEach((_, w) => markGone(p, w, why)));
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not ready after ${START_MS / 1000} s`)), START_MS);
    });
    await Promise.race([p.supervisor.ready, late]);
  } catch (e) {
    p.supervisor?.stop();
    notice(`worker threads could not start (${(e as Error).message})`);
    return;
  } finally {
    clearTimeout(timer);
  }
  pool = p;
  strikes = judged = pausedUntil = 0;
}

/** The supervisor's gone() (worker-source.ts) for the slots of a supervisor that itself ended. */
function markGone(p: Pool, w: number, why: string): void {
  const c = p.slots[w];
  if (Atomics.load(c, SLOT.GONE) !== 0) return;
  const msg = why.slice(0, SLOT.MSG_CHARS);
  for (let i = 0; i < msg.length; i++) p.msgs[w][i] = msg.charCodeAt(i);
  c[SLOT.MSGLEN] = msg.length;
  c[SLOT.STATUS] = DEAD;
  Atomics.store(c, SLOT.GONE, 1);
  Atomics.add(c, SLOT.DONE, 1);
  Atomics.notify(c, SLOT.DONE);
}

/** Whether Atomics.wait may block this thread (it throws on a browser's main thread). */
function canBlock(): boolean {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

function stopPool(): void {
  const p = pool;
  pool = null;
  if (p === null) return;
  p.slots.forEach((c, w) => {
    if (Atomics.load(c, SLOT.GONE) === 0) post(c, p.args[w], QUIT, []);
  });
  p.supervisor.stop();
}

/** Threads in the pool, paused or not (1 without a pool). */
export function poolSize(): number {
  return pool === null ? 1 : pool.count;
}

/** Threads a kernel call may be split over (1 without a pool, or while it is paused). */
export function threadCount(): number {
  return pool === null || paused() ? 1 : pool.count;
}

/**
 * Fork-join on cores that are busy with other work: a worker that has claimed its piece gets
 * descheduled, and the caller waits a scheduler slice (milliseconds) for a piece worth
 * microseconds. Or workers too starved to claim their pieces in time: the caller runs those
 * pieces itself, and the workers' polling and wake-ups take CPU from it (measured: 2 threads
 * 0.55–0.75× the speed of 1 with one core taken by another process). A call is a strike when
 * the caller waited, after its own piece, longer than both `ratio` times that piece and
 * `minWaitMs`, or when it had to run a worker's piece itself after an own piece of over
 * `claimMs` (time enough for a sleeping worker to wake); after `strikes` in a row the pool pauses
 * for `pauseMs` (kernels run on the calling thread, same bits), then tries again. `pauseMs = 0`
 * turns this off. The first `grace` calls of a new pool (workers warming up) are not judged.
 */
export const busy = {
  strikes: 3, pauseMs: 1000, minWaitMs: 0.25, ratio: 2, claimMs: 0.25, grace: 32,
  /** Workers (read when a pool starts): how long an idle one polls before it sleeps; after losing `calmAfter` jobs in a row while polling, it sleeps between jobs for `calmMs`. */
  spinMs: 1, calmAfter: 3, calmMs: 100,
};
let strikes = 0, pausedUntil = 0, judged = 0;
/** Paused, unless compile() is tracing: a pause starting or ending between its two traces would make them differ. */
const paused = (): boolean => pausedUntil > 0 && hooks.recorder === null && performance.now() < pausedUntil;

/** Pauses the pool for `ms` as a busy machine would (tests); 0 ends a pause. */
export function pauseFor(ms: number): void {
  pausedUntil = ms > 0 ? performance.now() + ms : 0;
}

function congestion(ownMs: number, waitMs: number, stole: boolean): void {
  if (busy.pauseMs <= 0 || ++judged <= busy.grace) return;
  const waitedLong = waitMs > Math.max(busy.minWaitMs, busy.ratio * ownMs);
  if (!waitedLong && stole && ownMs <= busy.claimMs) return; // too short to tell a sleeping worker from a starved one
  if (!waitedLong && !stole) {
    strikes = 0;
  } else if (++strikes >= busy.strikes) {
    strikes = 0;
    pausedUntil = performance.now() + busy.pauseMs;
    threadStats.pauses++;
  }
}

function post(c: Int32Array, a: Float64Array, op: number, args: readonly number[]): number {
  if (args.length > SLOT.MAX_ARGS) throw new AdjointError(`internal: a threaded kernel takes at most ${SLOT.MAX_ARGS} arguments`);
  for (let i = 0; i < args.length; i++) a[i] = args[i];
  c[SLOT.OP] = op;
  c[SLOT.NARGS] = args.length;
  c[SLOT.STATUS] = OK;
  const seq = Atomics.add(c, SLOT.SEQ, 1) + 1;
  Atomics.notify(c, SLOT.SEQ);
  return seq;
}

/**
 * Waits until the worker publishes DONE = seq or is marked gone. A death changes DONE too (see
 * gone() in worker-source.ts), so the wait is on the value read before checking GONE; the
 * bounded slices are a second line of defence, not the mechanism.
 */
function awaitDone(c: Int32Array, seq: number, canBlock: boolean): void {
  for (let spin = 0; ; spin++) {
    const done = Atomics.load(c, SLOT.DONE);
    if (done === seq || Atomics.load(c, SLOT.GONE) !== 0) return;
    if (canBlock && spin > SPIN) Atomics.wait(c, SLOT.DONE, done, WAIT_SLICE_MS);
  }
}

/**
 * Runs kernel `name` once per argument list, concurrently: jobs[0] on the calling thread,
 * jobs[i] on worker i. Returns when every job has finished; the jobs must write disjoint memory.
 * A job not yet claimed by its worker when the caller is done with its own (the worker is
 * asleep or descheduled, as on a loaded machine) is run by the caller instead: any thread
 * computes a piece to the same bits, so who runs it does not matter.
 */
export function runJobs(name: string, jobs: readonly (readonly number[])[], kernel: (...args: number[]) => number): void {
  const p = pool;
  if (p === null || jobs.length === 1 || paused()) {
    for (const j of jobs) kernel(...j);
    return;
  }
  // compile()'s tracer records the pieces as one launch and hands back the unrecorded kernel.
  if (hooks.recorder !== null) kernel = hooks.recorder.jobs(name, jobs);
  const dead = p.slots.findIndex((c, w) => w < jobs.length - 1 && Atomics.load(c, SLOT.GONE) !== 0);
  if (dead >= 0) fail(p, [`worker ${dead + 1} of ${p.count - 1} had stopped (${message(p, dead)})`], name);
  const op = p.index.get(name);
  if (op === undefined || jobs.length > p.count) throw new AdjointError(`internal: cannot split ${name} over ${jobs.length} threads`);
  threadStats.dispatches++;
  const dying = jobs.slice(1).map((_, w) => die.delete(w));
  const seqs = jobs.slice(1).map((j, w) => post(p.slots[w], p.args[w], dying[w] ? DIE : op, j));
  let own: unknown = null;
  const run = (j: readonly number[]) => {
    try {
      kernel(...j);
    } catch (e) {
      own ??= e;
    }
  };
  const t0 = performance.now();
  run(jobs[0]);
  const t1 = performance.now();
  // Take over jobs no worker has claimed yet (a claim moves TAKEN from seq − 1 to seq, once).
  const stolen = seqs.map((seq, w) => {
    const c = p.slots[w];
    if (dying[w] || Atomics.compareExchange(c, SLOT.TAKEN, seq - 1, seq) !== seq - 1) return false;
    run(jobs[w + 1]);
    Atomics.store(c, SLOT.DONE, seq);
    threadStats.stolen++;
    return true;
  });
  const t2 = performance.now();
  const problems: string[] = [];
  seqs.forEach((seq, w) => {
    if (stolen[w]) return;
    const c = p.slots[w];
    awaitDone(c, seq, p.canBlock);
    const status = Atomics.load(c, SLOT.GONE) !== 0 ? DEAD : c[SLOT.STATUS];
    if (status === DEAD) problems.push(`worker ${w + 1} of ${p.count - 1} died while running ${name} (${message(p, w)})`);
    else if (status === FAILED) problems.push(`worker ${w + 1} of ${p.count - 1} failed in ${name}: ${message(p, w)}`);
  });
  const t3 = performance.now();
  threadStats.ownMs += t1 - t0;
  threadStats.waitMs += t3 - t2;
  congestion(t1 - t0, t3 - t2, stolen.some(Boolean));
  if (own !== null) throw own;
  if (problems.length > 0) {
    if (problems.some((s) => s.includes(' died '))) fail(p, problems, name);
    throw new AdjointError(`threads: ${problems.join('; ')}`);
  }
}

const message = (p: Pool, w: number): string => String.fromCharCode(...p.msgs[w].subarray(0, p.slots[w][SLOT.MSGLEN]));

/** Stops the pool after a worker died and throws; init() restarts it. */
function fail(p: Pool, problems: string[], name: string): never {
  stopPool();
  lost = p.count;
  throw new AdjointError(
    `threads: ${problems.join('; ')}. The thread pool is stopped: ${name} did not complete, later ops run on one thread ` +
      'until `await init()` restarts the pool',
  );
}

/** Test hook: worker w (0-based) exits abruptly when it receives its next job. */
const die = new Set<number>();
export function killWorkerOnNextJob(w: number): void {
  die.add(w);
}
/** Test hook: the supervisor terminates worker w (0-based) `afterMs` from now, as an outside kill would. */
export function terminateWorkerLater(w: number, afterMs: number): void {
  pool?.supervisor.send({ kill: w, afterMs });
}
