// Dispatch over the worker pool (src/wasm/pool.ts): runJobs() cuts nothing itself (split.ts
// decides the pieces); it hands piece i to worker i through its control slot, runs piece 0 on the
// calling thread, takes over pieces no worker has claimed yet, and waits for the rest
// (Atomics.wait where the thread may block, a spin on Atomics.load on a browser main thread).
// A worker that dies mid-kernel fails that call with an AdjointError naming it; later calls run
// on the calling thread (same bits, by construction) until init() restarts the pool.
import { AdjointError } from '../errors.js';
import { SLOT, FAILED, DEAD, DIE, LIST } from './worker-source.js';
import { hooks } from './hooks.js';
import { currentPool, post, stopAfterDeath, type Pool } from './pool.js';
import { congestion, paused, threadStats, waking } from './congestion.js';
import { observeFork } from './balance.js';

/** Atomics.load polls before the caller, waiting for a worker, goes to sleep (a few tens of µs). */
const SPIN = 20000;
/** Longest single Atomics.wait of a caller (it re-checks the worker's GONE word in between). */
const WAIT_SLICE_MS = 100;

/** Workers (0-based) that exit abruptly on their next job: a fault injected by src/testing.ts. */
export const dieOnNextJob = new Set<number>();

/** Threads a kernel call may be split over (1 without a pool, or while it is paused). */
export function threadCount(): number {
  const pool = currentPool();
  return pool === null || paused() ? 1 : pool.count;
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
  const p = currentPool();
  if (p === null || jobs.length === 1 || paused()) {
    for (const j of jobs) kernel(...j);
    return;
  }
  // compile()'s tracer records the pieces as one launch and hands back the unrecorded kernel.
  if (hooks.recorder !== null) kernel = hooks.recorder.jobs(name, jobs);
  const op = p.index.get(name);
  if (op === undefined || jobs.length > p.count) throw new AdjointError(`internal: cannot split ${name} over ${jobs.length} threads`);
  fork(
    p,
    name,
    jobs.length,
    (w, die) => post(p.slots[w], p.args[w], die ? DIE : op, jobs[w + 1]),
    (i) => kernel(...jobs[i]),
  );
}

/** One kernel call of a job list: the export, its index in the pool's table, its arguments. */
export interface Call {
  readonly f: (...args: number[]) => unknown;
  readonly name: string;
  readonly args: readonly number[];
}

/**
 * Runs lists of kernel calls concurrently, each in order on one thread: lists[0] on the calling
 * thread, lists[i] on worker i (a LIST job; the caller runs it itself if the worker has not
 * claimed it, as runJobs does). The calls of different lists must touch disjoint memory where
 * one writes (compile()'s parallel schedule, src/compile/parallel.ts, makes them so).
 */
export function runLists(lists: readonly (readonly Call[])[]): void {
  const p = currentPool();
  const local = (i: number) => {
    for (const c of lists[i]) c.f.apply(null, c.args as number[]);
  };
  // A list longer than a worker's list area (a very deep network's chain) runs on the caller
  // with the others: the lists are independent of each other, so one after another is correct.
  const fits = (l: readonly Call[]) => l.reduce((n, c) => n + 2 + c.args.length, 0) <= SLOT.LIST_F64;
  if (p === null || paused() || lists.length > p.count || !lists.every(fits)) {
    for (let i = 0; i < lists.length; i++) local(i);
    return;
  }
  const postList = (w: number, die: boolean): number => {
    const l = p.lists[w],
      calls = lists[w + 1];
    let at = 0;
    for (const c of calls) {
      const op = p.index.get(c.name);
      if (op === undefined || at + 2 + c.args.length > l.length)
        throw new AdjointError(`internal: cannot list ${c.name} for worker ${w + 1}`);
      l[at] = op;
      l[at + 1] = c.args.length;
      for (let i = 0; i < c.args.length; i++) l[at + 2 + i] = c.args[i];
      at += 2 + c.args.length;
    }
    return post(p.slots[w], p.args[w], die ? DIE : LIST, [calls.length]);
  };
  threadStats.lists++;
  fork(p, lists[0][0]?.name ?? 'a job list', lists.length, postList, local);
}

/** Milliseconds the workers have spent running pieces (jobs and lists), summed over workers, since the pool started (benches read differences). */
export function workerBusyMs(): number {
  const p = currentPool();
  return p === null ? 0 : p.slots.reduce((t, c) => t + (Atomics.load(c, SLOT.BUSY_US) >>> 0) / 1000, 0);
}

/** A compiled program runs (holdPool), and whether the workers' HOLD words are set for it. */
let held = false,
  holding = false;

/** Keeps the workers polling (awake) while `on` (a compiled program runs), and wakes sleeping ones at its start. */
export function holdPool(on: boolean): void {
  held = on;
  const p = currentPool();
  // Not while the busy-machine pause is on: polling workers would only take CPU from the caller.
  // A pause that ends mid-program sets HOLD at the next dispatch (fork), or the workers would
  // sleep through the rest of the step and strike the pool into its next pause.
  if (p === null) holding = false;
  else if (!on || !paused()) setHold(p, on);
}

function setHold(p: Pool, on: boolean): void {
  holding = on;
  for (const c of p.slots) {
    Atomics.store(c, SLOT.HOLD, on ? 1 : 0);
    if (on) Atomics.notify(c, SLOT.SEQ); // a sleeping worker wakes, sees no new job, and polls
  }
}

/**
 * The fork-join behind runJobs and runLists: posts piece w + 1 to worker w (post returns its
 * sequence number), runs piece 0 on the calling thread, takes over pieces no worker has claimed
 * yet, waits for the rest, and reports failures and deaths.
 */
function fork(p: Pool, name: string, pieces: number, postPiece: (w: number, die: boolean) => number, run0: (i: number) => unknown): void {
  const dead = p.slots.findIndex((c, w) => w < pieces - 1 && Atomics.load(c, SLOT.GONE) !== 0);
  if (dead >= 0) fail(p, [`worker ${dead + 1} of ${p.count - 1} had stopped (${message(p, dead)})`], name);
  threadStats.dispatches++;
  if (held && !holding) setHold(p, true);
  const dying = Array.from({ length: pieces - 1 }, (_, w) => dieOnNextJob.delete(w));
  const tp = performance.now();
  // Read before posting: a worker asleep now had gone to sleep before this job came. Only inside a
  // compiled program, which holds the workers awake: there a worker sleeps only across a long
  // gap (at most a few times a step). In eager code a worker on a busy core sleeps between most
  // calls, and excusing each of them would keep it waking and polling instead of pausing.
  const napping = dying.map((_, w) => held && waking(w, Atomics.load(p.slots[w], SLOT.NAP), tp));
  const busy0 = dying.map((_, w) => Atomics.load(p.slots[w], SLOT.BUSY_US));
  const seqs = dying.map((die, w) => postPiece(w, die));
  let own: unknown = null;
  const run = (i: number) => {
    try {
      run0(i);
    } catch (e) {
      own ??= e;
    }
  };
  const t0 = performance.now();
  run(0);
  const t1 = performance.now();
  // Take over jobs no worker has claimed yet (a claim moves TAKEN from seq − 1 to seq, once).
  const stolen = seqs.map((seq, w) => {
    const c = p.slots[w];
    if (dying[w] || Atomics.compareExchange(c, SLOT.TAKEN, seq - 1, seq) !== seq - 1) return false;
    run(w + 1);
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
  const stole = stolen.some(Boolean),
    excused = stole && stolen.every((s, w) => !s || napping[w]);
  if (excused) threadStats.excused++;
  congestion(t1 - t0, t3 - t2, stole, excused);
  // Every thread ran its own piece: their times measure their speeds (balance.ts).
  if (!stole && problems.length === 0 && own === null && pieces === p.count)
    observeFork([t1 - t0, ...busy0.map((b, w) => (((Atomics.load(p.slots[w], SLOT.BUSY_US) - b) | 0) >>> 0) / 1000)]);
  if (own !== null) throw own;
  if (problems.length > 0) {
    if (problems.some((s) => s.includes(' died '))) fail(p, problems, name);
    throw new AdjointError(`threads: ${problems.join('; ')}`);
  }
}

const message = (p: Pool, w: number): string => String.fromCharCode(...p.msgs[w].subarray(0, p.slots[w][SLOT.MSGLEN]));

/** Stops the pool after a worker died and throws; init() restarts it. */
function fail(p: Pool, problems: string[], name: string): never {
  stopAfterDeath(p);
  throw new AdjointError(
    `threads: ${problems.join('; ')}. The thread pool is stopped: ${name} did not complete, later ops run on one thread ` +
      'until `await init()` restarts the pool',
  );
}
