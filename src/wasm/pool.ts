// The worker pool behind init({ threads }). Every thread (the caller and n − 1 workers) has its
// own instance of the kernels on one shared WebAssembly.Memory, so a kernel call can be cut into
// pieces that write disjoint parts of its output (split.ts decides the cut, threads.ts runs
// them). This file starts, resizes and stops the pool, and owns the control-slot protocol.
//
// Where threads cannot run (no SharedArrayBuffer: workerd, a page that is not cross-origin
// isolated; a precompiled module; no Worker) init falls back to one thread with a console
// notice. The workers are started by a supervisor thread whose only job is to see them die: a
// caller blocked in Atomics.wait runs no events, so it learns of a death through the slot (GONE).
import { ArgumentError, AdjointError } from '../errors.js';
import { describe } from '../args.js';
import { compileKernels, embeddedKernelBytes, runtime, type InitOptions } from './module.js';
import { sharedMemoryVariant } from './shared-module.js';
import { SLOT, OK, DEAD, QUIT } from './worker-source.js';
import { supervisorStarter, type Supervisor } from './supervisor.js';
import { scratchOf } from './scratch.js';
import { busy, resetCongestion } from './congestion.js';
import { resetBalance } from './balance.js';

/** Upper bound for `threads` (and for 'auto'). */
const MAX_THREADS = 64;
/** How long workers may take to start before init gives up on them (and runs on one thread). */
const START_MS = 60_000;

export interface Pool {
  count: number;
  supervisor: Supervisor;
  slots: Int32Array[];
  args: Float64Array[];
  msgs: Uint16Array[];
  /** Each worker's job-list area (LIST jobs). */
  lists: Float64Array[];
  index: Map<string, number>;
  /** Atomics.wait is allowed on the calling thread (not on a browser main thread). */
  canBlock: boolean;
  /** The workers' control slots (byte offsets), handed to a later pool once this one has ended. */
  slotAt: number[];
  /** stopPool() has told the workers to quit. */
  stopped: boolean;
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
/**
 * Control slots of pools that were stopped and whose supervisor then ended, having terminated
 * every worker first: no thread reads or writes them any more, so the next pool takes them
 * instead of reserving new ones (arena space is never freed: a resize took 65 KB per worker for
 * good, and a few hundred resizes used up a memory cap).
 */
const spareSlots: number[] = [];

/** The running pool, or null (one thread). */
export function currentPool(): Pool | null {
  return pool;
}

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
    throw new ArgumentError(`init: threads must be a positive integer or 'auto', got ${typeof t === 'string' ? `'${t}'` : describe(t)}`);
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
  if (source === undefined) return embeddedKernelBytes();
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
  if (why !== null) return (notice(why), null);
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial, maximum, shared: true } as WebAssembly.MemoryDescriptor);
  } catch (e) {
    return (notice(`this runtime cannot create a shared WebAssembly.Memory (${(e as Error).message})`), null);
  }
  const bytes = sharedMemoryVariant(await sourceBytes(options.module));
  if (bytes === null) return (notice('the kernels passed to init({ module }) import no memory that could be shared'), null);
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

async function startPool(count: number): Promise<void> {
  const r = runtime(),
    module = threadModule!;
  const names = Object.keys(r.exports).filter((n) => typeof r.exports[n] === 'function');
  const start = await supervisorStarter(nodeLike());
  const p: Pool = {
    count,
    supervisor: null!,
    slots: [],
    args: [],
    msgs: [],
    lists: [],
    index: new Map(names.map((n, i) => [n, i])),
    canBlock: canBlock(),
    slotAt: [],
    stopped: false,
  };
  const workers: Record<string, unknown>[] = [];
  for (let w = 0; w < count - 1; w++) {
    // Fresh control slots, or a stopped pool's once its workers have all exited (spareSlots): a
    // stopped worker may still be exiting on its old one until then.
    const slot = spareSlots.pop() ?? r.arena.reserve(SLOT.BYTES),
      s = scratchOf(w + 1),
      buf = r.memory.buffer;
    p.slotAt.push(slot);
    p.slots.push(new Int32Array(buf, slot, SLOT.ARGS_AT >> 2).fill(0));
    p.args.push(new Float64Array(buf, slot + SLOT.ARGS_AT, SLOT.MAX_ARGS));
    p.msgs.push(new Uint16Array(buf, slot + SLOT.MSG_AT, SLOT.MSG_CHARS));
    p.lists.push(new Float64Array(buf, slot + SLOT.LIST_AT, SLOT.LIST_F64));
    workers.push({
      module,
      memory: r.memory,
      slot,
      scratch: s.ptr,
      scratchBytes: s.bytes,
      names,
      spinMs: busy.spinMs,
      holdMs: busy.holdMs,
      calmMs: busy.calmMs,
      calmAfter: busy.calmAfter,
    });
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    p.supervisor = start({ memory: r.memory, workers }, (why) => {
      p.slots.forEach((_, w) => markGone(p, w, why));
      // Only after a stop: a supervisor that died by itself may leave workers running (Deno).
      if (p.stopped) spareSlots.push(...p.slotAt.splice(0));
    });
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not ready after ${START_MS / 1000} s`)), START_MS);
    });
    await Promise.race([p.supervisor.ready, late]);
  } catch (e) {
    p.stopped = true;
    p.supervisor?.stop();
    notice(`worker threads could not start (${(e as Error).message})`);
    return;
  } finally {
    clearTimeout(timer);
  }
  pool = p;
  resetCongestion();
  resetBalance();
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
  resetBalance();
  if (p === null) return;
  p.stopped = true;
  p.slots.forEach((c, w) => {
    if (Atomics.load(c, SLOT.GONE) === 0) post(c, p.args[w], QUIT, []);
  });
  p.supervisor.stop();
}

/** Threads in the pool, paused or not (1 without a pool). */
export function poolSize(): number {
  return pool === null ? 1 : pool.count;
}

/** Stops the pool after a worker died; the next init() restarts it with the same count. */
export function stopAfterDeath(p: Pool): void {
  stopPool();
  lost = p.count;
}

/** Writes a job (kernel `op`, its arguments) into a worker's control slot and wakes it; returns the job's sequence number. */
export function post(c: Int32Array, a: Float64Array, op: number, args: readonly number[]): number {
  if (args.length > SLOT.MAX_ARGS) throw new AdjointError(`internal: a threaded kernel takes at most ${SLOT.MAX_ARGS} arguments`);
  for (let i = 0; i < args.length; i++) a[i] = args[i];
  c[SLOT.OP] = op;
  c[SLOT.NARGS] = args.length;
  c[SLOT.STATUS] = OK;
  const seq = Atomics.add(c, SLOT.SEQ, 1) + 1;
  Atomics.notify(c, SLOT.SEQ);
  return seq;
}
