// compile()'s parallel schedule: with the thread pool up, a replayed program runs independent
// kernel launches of one step concurrently — the two gradient GEMMs of a layer (dX and dW) side
// by side, every parameter's optimizer update in one batch, an update next to the backward work
// of the layers below it — instead of only cutting each launch into halves with a fork-join of
// its own. Planned once, when the program is built (src/compile/program.ts):
//   1. Every piece (a traced cut of a pooled launch, or a whole call) of a kernel whose memory
//      roles are known (ROLES: which pointer arguments it writes, the rest it reads; for GEMMs and
//      flat kernels also how many bytes from the pointer) gets the byte ranges it touches, in
//      blocks of the memory plan (by block: the plan is made to fit the schedule afterwards,
//      src/compile/plan.ts), persistent tensors, or the call's own inputs and outputs. Any
//      other step (JS writes, fused runs, kernels not in ROLES) is a barrier that runs as before.
//   2. Between barriers, pieces are placed in trace order on (level, thread): after every earlier
//      piece they conflict with (one writes what the other reads or writes). When all the
//      conflicting pieces of the latest such level are on one thread, the piece joins that level
//      on that thread, after them: row pieces of a chain of GEMMs (a forward pass cut by rows of
//      the batch) run on without a barrier. Otherwise it starts the next level on its least
//      loaded thread. Pieces of one launch never conflict (their cuts write disjoint parts).
//   3. A level is one phase: each thread runs its pieces in trace order, one fork-join per phase
//      (runLists in src/wasm/threads.ts).
// Bits do not depend on any of this: every piece computes its outputs exactly as in the traced
// order (no two pieces of a phase touch the same bytes where one writes), whichever thread runs
// it, so a replay gives the same results for any thread count, paused pool or none.
import type { Kernel } from '../wasm/hooks.js';
import { runLists, threadCount, type Call } from '../wasm/threads.js';
import type { TiledOp } from './fuse.js';
import { scratchOf } from '../wasm/scratch.js';
import { thresholds } from '../wasm/split.js';
import { cutShares, threadShares } from '../wasm/balance.js';
import { runtime } from '../wasm/module.js';
import { copyCost, copySpan } from './copies.js';
import { byRows } from './rows.js';

/** Internal switch (the bench compares with and without the schedule): off, programs replay launch by launch as before. */
export const schedule = { enabled: true };

/**
 * The buffer a pointer argument points into, bytes [lo, hi), and the pointer `at`: in memory
 * (key ''), in a block of the memory plan (key `b` and its id: the schedule is planned before the
 * plan, src/compile/plan.ts) or in a per-call buffer (an input or output of the call, key `in` or
 * `out` and its position); offsets from the buffer's start except in memory.
 */
export interface Extent {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  readonly at: number;
}

/** What the planner needs of a replayed launch (program.ts's LaunchStep). */
export interface PlannedLaunch {
  readonly w: false;
  readonly tiled?: false;
  readonly name: string;
  readonly f: Kernel;
  readonly pooled: boolean;
  readonly argv: number[][];
  readonly dyn: number;
  readonly compute: (() => readonly number[]) | null;
  /** Extents of each pointer argument (by argument index, over all pieces); null: not a pointer or a null pointer. */
  readonly touches: readonly (readonly (Extent | null)[])[];
}

/** A piece in a phase's list, with the bytes it touches (the memory plan orders blocks by them, src/compile/plan.ts). */
interface PlacedCall extends Call {
  readonly acc: readonly Access[];
}

/** A phase: launches that run concurrently, their pieces assigned to threads. */
export interface PhaseStep {
  readonly w: false;
  readonly tiled?: false;
  readonly phase: true;
  /** Launches whose perCall values are computed first, in trace order (a run's first step carries all of the run's). */
  readonly pre: readonly PlannedLaunch[];
  /** Per thread, the calls it runs in order (empty: a step that only computes `pre`). */
  readonly lists: readonly (readonly PlacedCall[])[];
}

interface Role {
  /** The kernel's argument count: a launch with another (its signature changed) is not planned, only run in place. */
  readonly arity: number;
  /** Pointer arguments the kernel writes (the others it reads), or which ones for a call's arguments. */
  readonly writes: readonly number[] | ((a: readonly number[]) => readonly number[]);
  /** Work of a call (≈ multiply-adds or element visits), for balancing threads. */
  readonly cost: (a: readonly number[]) => number;
  /** Elements pointer argument i reaches from where it points (undefined: the whole buffer, conservatively). */
  readonly span?: (a: readonly number[], i: number) => number | undefined;
  /** Elements [from, to) pointer argument i reaches, counted from where it points (a kernel that starts at an offset of its own: attention's heads n0..n1). */
  readonly range?: (a: readonly number[], i: number) => readonly [number, number] | undefined;
  /** The argument that is each piece's own scratch: piece j's reaches up to where piece j + 1's begins. */
  readonly scratch?: number;
}
const f = (...names: string[]): RegExp => new RegExp(`^(${names.join('|')})_(f32|f64)$`);
/** Elements an (M × K) operand spans from its pointer with leading dimension ld, stored transposed or not. */
const matrix = (rows: number, cols: number, ld: number, t: number): number => (t ? (cols - 1) * ld + rows : (rows - 1) * ld + cols);
/** gemm (a, b, c, M, N, K, lda, ldb, ldc, ta, tb, …) with its size arguments from `o` (gemm_bias_act has bias at 3). */
const gemmSpan =
  (o: number) =>
  (a: readonly number[], i: number): number | undefined => {
    const [M, N, K, lda, ldb, ldc, ta, tb] = a.slice(o, o + 8);
    if (i === 0) return matrix(M, K, lda, ta);
    if (i === 1) return matrix(K, N, ldb, tb);
    if (i === 2) return (M - 1) * ldc + N;
    return N; // the bias
  };
/** Kernels the planner may reorder and run side by side, with their written arguments. */
const ROLES: readonly (readonly [RegExp, Role])[] = [
  [f('gemm'), { arity: 12, writes: [2], cost: (a) => a[3] * a[4] * a[5], span: gemmSpan(3) }],
  [f('gemm_bias_act'), { arity: 13, writes: [2], cost: (a) => a[4] * a[5] * a[6], span: gemmSpan(4) }],
  // (a, b, c, p, M, N, K, lda, ldb, ldc, ta, tb, lr, wd): writes the gradient C and the parameter p (laid out as C).
  [f('gemm_sgd'), { arity: 14, writes: [2, 3], cost: (a) => a[4] * a[5] * a[6], span: (a, i) => gemmSpan(4)(a, i === 3 ? 2 : i) }],
  [f('sgd'), { arity: 9, writes: [0, 2], cost: (a) => a[3], span: (a) => a[3] }],
  [f('adam'), { arity: 12, writes: [0, 2, 3], cost: (a) => 2 * a[4], span: (a) => a[4] }],
  // (y, g, gz, db, M, N, rs, act): gz is not written without an activation (act 0).
  [
    f('bias_act_vjp'),
    {
      arity: 8,
      writes: (a) => (a[7] === 0 ? [3] : [2, 3]),
      cost: (a) => a[4] * a[5],
      span: (a, i) => (i === 3 ? a[5] : (a[4] - 1) * a[6] + a[5]),
    },
  ],
  [f('tanh_vjp', 'sigmoid_vjp', 'relu_vjp', 'gelu_erf_vjp'), { arity: 4, writes: [2], cost: (a) => a[3], span: (a) => a[3] }],
  // (x, y, d, n): y = gelu(x) and d = gelu'(x), d in x's place (src/compile/gelu-grad.ts).
  [f('gelu_erf_with_grad'), { arity: 4, writes: [1, 2], cost: (a) => a[3], span: (a) => a[3] }],
  // Elementwise maps (x, y, n, p0, p1), cut at multiples of 16 elements.
  [
    f('neg', 'exp', 'log', 'sqrt', 'abs', 'square', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'softplus', 'leaky_relu', 'clamp', 'step'),
    { arity: 5, writes: [1], cost: (a) => a[2], span: (a) => a[2] },
  ],
  [
    f('inside', 'sign', 'recip', 'erf', 'gelu_erf', 'gelu_erf_grad', 'gelu_tanh', 'gelu_tanh_grad'),
    { arity: 5, writes: [1], cost: (a) => a[2], span: (a) => a[2] },
  ],
  // Rows: layer_norm (x, y, rows, cols, eps), layer_norm_vjp (x, g, dx, rows, cols, eps).
  [f('layer_norm'), { arity: 5, writes: [1], cost: (a) => 4 * a[2] * a[3], span: (a) => a[2] * a[3] }],
  [f('layer_norm_vjp'), { arity: 6, writes: [2], cost: (a) => 6 * a[3] * a[4], span: (a) => a[3] * a[4] }],
  // (a, b, y, rows, cols, sar, sac, sbr, sbc): y[r, c] = a[r·sar + c·sac] ∘ b[r·sbr + c·sbc], y contiguous.
  [
    f('add', 'sub', 'mul', 'div', 'maximum', 'minimum'),
    {
      arity: 9,
      writes: [2],
      cost: (a) => a[3] * a[4],
      span: (a, i) => (i === 2 ? a[3] * a[4] : (a[3] - 1) * a[i === 0 ? 5 : 7] + (a[4] - 1) * a[i === 0 ? 6 : 8] + 1),
    },
  ],
  [f('sum', 'max'), { arity: 5, writes: [1], cost: (a) => a[2] * a[3] * a[4] }],
  // Not sum_cols (a bias gradient's sum cut over columns): with it the GPT step's backward pass
  // is 3 phases (9 splits a step instead of 36, same bits), but its pieces read every row of the
  // gradient inside a phase, so fewer buffers may share bytes (plan 48.6 MB instead of 35.5 MB),
  // and the step was not measurably faster (bench/threads-step.ts, 2026-12-03).

  [f('fill'), { arity: 3, writes: [0], cost: (a) => a[1], span: (a) => a[1] }],
  // (x, y, ndim, shape, xs, ys) with its arrays in the program's constants (src/compile/copies.ts).
  [/^strided_copy_(f32|f64|i32)$/, { arity: 6, writes: [1], cost: copyCost, span: (a, i) => (i < 2 ? copySpan(a, i) : undefined) }],
  // Heads [n0, n1) of attention (q, k, v, mask, y, n0, n1, g, scale, p, scratch, seeds) and its
  // VJP (q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, …, scratch at 14), geometry g in constants.
  [
    /^attention_(f32|f64)$/,
    { arity: 13, writes: [4, 10], cost: (a) => heads(a, 5, 7), range: (a, i) => headRange(a, 5, 7, i), scratch: 10 },
  ],
  [
    /^attention_vjp_(f32|f64)$/,
    { arity: 17, writes: [6, 7, 8, 14], cost: (a) => 2 * heads(a, 9, 11), range: (a, i) => headRange(a, 9, 11, i), scratch: 14 },
  ],
  // A scalar in, a scalar out: no memory (the traced call used its value for arguments the replay has).
  [/^sqrt_scalar$/, { arity: 1, writes: [], cost: () => 0 }],
];
/** Attention's geometry (Tq, Tk, d, dv) from its constant block at argument g. */
const geometry = (a: readonly number[], g: number): Int32Array => new Int32Array(runtime().memory.buffer, a[g], 4);
/** Multiply-adds of attention's heads [a[n], a[n + 1]). */
function heads(a: readonly number[], n: number, g: number): number {
  const [Tq, Tk, d, dv] = geometry(a, g);
  return (a[n + 1] - a[n]) * Tq * Tk * (d + dv);
}
/**
 * Elements of pointer argument i that heads [n0, n1) reach: rows of q (and dq), k (dk), v (dv)
 * and y (gy: [N, Tq, dv + 1], output and log-sum-exp) of those heads; the mask whole.
 */
function headRange(a: readonly number[], n: number, g: number, i: number): [number, number] | undefined {
  const [Tq, Tk, d, dv] = geometry(a, g);
  const per =
    n === 5
      ? [Tq * d, Tk * d, Tk * dv, 0, Tq * (dv + 1)]
      : [Tq * d, Tk * d, Tk * dv, 0, Tq * (dv + 1), Tq * (dv + 1), Tq * d, Tk * d, Tk * dv];
  const e = per[i];
  return e === undefined || e === 0 ? undefined : [a[n] * e, a[n + 1] * e];
}
const roleCache = new Map<string, Role | null>();
function roleOf(name: string): Role | null {
  let r = roleCache.get(name);
  if (r === undefined) roleCache.set(name, (r = ROLES.find(([re]) => re.test(name))?.[1] ?? null));
  return r;
}

/** Whether a step of the program may join a phase. */
const plannable = (s: { w: boolean; tiled?: boolean; name?: string }): s is PlannedLaunch =>
  !s.w && s.tiled !== true && !('phase' in s) && roleOf((s as PlannedLaunch).name)?.arity === (s as PlannedLaunch).argv[0].length;

/** gemm_set_scratch to the calling thread's own region: only sets the caller's instance, so it may run before a phase. */
function ownScratch(s: { w: boolean; name?: string; argv?: number[][] }): boolean {
  if (s.w || s.name !== 'gemm_set_scratch') return false;
  const own = scratchOf(0);
  return s.argv![0][0] === own.ptr && s.argv![0][1] === own.bytes;
}

/** Bytes [lo, hi) of buffer `key` (as in Extent) a piece reads or writes. */
interface Access {
  readonly key: string;
  readonly lo: number;
  readonly hi: number;
  readonly write: boolean;
}
/** The bytes piece j of a launch touches: from each pointer as far as the kernel reaches, else its whole buffer. */
function accesses(s: PlannedLaunch, j: number): Access[] {
  const role = roleOf(s.name)!,
    bytes = s.name.endsWith('64') ? 8 : 4;
  const out: Access[] = [];
  const writes = typeof role.writes === 'function' ? role.writes(s.argv[j]) : role.writes;
  s.touches[j].forEach((x, i) => {
    if (x === null) return;
    const n = role.span?.(s.argv[j], i);
    let [from, to] = role.range?.(s.argv[j], i) ?? (n !== undefined ? [0, n] : [0, 0]);
    if (i === role.scratch) {
      const next = s.touches[j + 1]?.[i];
      [from, to] = [0, ((next != null && next.key === x.key && next.at > x.at ? next.at : x.hi) - x.at) / bytes];
    }
    const exact = to > from && x.at >= x.lo;
    const lo = exact ? Math.max(x.lo, x.at + from * bytes) : x.lo,
      hi = exact ? Math.min(x.hi, x.at + to * bytes) : x.hi;
    out.push({ key: x.key, lo, hi: Math.max(hi, lo + 1), write: writes.includes(i) });
  });
  return out;
}
const conflict = (a: readonly Access[], b: readonly Access[]): boolean =>
  a.some((p) => b.some((q) => (p.write || q.write) && p.key === q.key && p.lo < q.hi && q.lo < p.hi));

/** How the program places some of its steps (src/compile/program.ts). */
export interface Placing<S> {
  /** JS writes that no plannable launch reads: they may run after the phases of their run. */
  readonly defer: (s: S) => boolean;
  /** Launches that stay where they are (they read memory JS rewrites: the kernel argument block). */
  readonly stay: (s: S) => boolean;
}
const NO_PLACING: Placing<unknown> = { defer: () => false, stay: () => false };

/**
 * The program's steps with runs of plannable launches grouped into phases for `threads`
 * threads. Steps that are not plannable stay where they are and end a run, except deferred
 * writes, which run after the run's phases.
 */
export function parallelize<S extends { w: boolean; tiled?: boolean }>(
  steps: readonly S[],
  threads: number,
  placing: Placing<S> = NO_PLACING,
): (S | PhaseStep)[] {
  if (threads < 2 || !schedule.enabled) return steps.slice();
  const out: (S | PhaseStep)[] = [];
  let run: PlannedLaunch[] = [];
  let later: S[] = [];
  const flush = () => {
    out.push(...(phases(run, threads) as (S | PhaseStep)[]), ...later);
    run = [];
    later = [];
  };
  for (const s of steps) {
    if (plannable(s) && !placing.stay(s)) run.push(...byRows(s, threads));
    else if (ownScratch(s as never)) out.push(s);
    else if (placing.defer(s)) later.push(s);
    else {
      flush();
      out.push(s);
    }
  }
  flush();
  return out;
}

/**
 * Levels of a run of plannable launches, each a phase (or the launch itself when it is alone).
 * A later launch may land in an earlier phase than one before it, so the run's perCall values
 * (JS state such as step counts, independent of kernel results) are all computed first, in
 * trace order, as the traced call computed them.
 */
function phases(all: readonly PlannedLaunch[], threads: number): (PlannedLaunch | PhaseStep)[] {
  if (all.length === 0) return [];
  const pre = all.filter((s) => s.compute !== null);
  const run = all.map((s) => (s.compute === null ? s : { ...s, compute: null }));
  const placed: { m: number; j: number; acc: Access[]; level: number; thread: number }[] = [];
  const load: number[][] = [];
  // A thread's load counts against its share of the work (threads of unequal speed: src/wasm/balance.ts).
  const uneven = cutShares(threads) !== null,
    share = threadShares(threads);
  run.forEach((s, m) => {
    // Per piece: the latest level holding a piece it conflicts with, and the threads of those pieces there.
    const pieces = s.argv.map((args, j) => {
      const acc = accesses(s, j);
      let last = -1;
      const on = new Set<number>();
      for (const q of placed) {
        if (q.level < last || !conflict(acc, q.acc)) continue;
        if (q.level > last) on.clear();
        last = q.level;
        on.add(q.thread);
      }
      return { j, acc, last, on, cost: roleOf(s.name)!.cost(args) };
    });
    // Pinned: each piece that meets the launch's latest conflict level runs there after the
    // pieces it conflicts with, on their one thread — and no two pieces of the launch share a
    // thread (that would serialise its cut). Otherwise the launch starts the next level.
    const top = Math.max(...pieces.map((p) => p.last));
    const pins = pieces.filter((p) => p.last === top).map((p) => (p.on.size === 1 ? [...p.on][0] : -1));
    const pinned = top >= 0 && !pins.includes(-1) && new Set(pins).size === pins.length && pieces.length <= threads;
    const level = pinned ? top : top + 1;
    const loads = (load[level] ??= new Array<number>(threads).fill(0));
    const used = new Set<number>();
    for (const p of pieces) {
      let thread = pinned && p.last === top ? [...p.on][0] : -1;
      // Cut by uneven shares (split.ts's ranges): piece j is sized for thread j.
      if (thread < 0 && uneven && pieces.length === threads && !used.has(p.j) && !(pinned && pins.includes(p.j))) thread = p.j;
      if (thread < 0) {
        // The least loaded thread this launch does not use yet (any, once it uses them all).
        const weighed = loads.map((l, t) => l / share[t]);
        const free = weighed.map((l, t) => (used.has(t) || (pinned && pins.includes(t)) ? Infinity : l));
        thread = Math.min(...free) < Infinity ? free.indexOf(Math.min(...free)) : weighed.indexOf(Math.min(...weighed));
      }
      used.add(thread);
      loads[thread] += p.cost;
      placed.push({ m, j: p.j, acc: p.acc, level, thread });
    }
  });
  const head: PhaseStep[] = pre.length > 0 ? [{ w: false, phase: true, pre, lists: [] }] : [];
  const steps = load.map((loads, level): PlannedLaunch | PhaseStep => {
    const here = placed.filter((p) => p.level === level);
    const call = (p: { m: number; j: number; acc: Access[] }): PlacedCall => ({
      f: run[p.m].f,
      name: run[p.m].name,
      args: run[p.m].argv[p.j],
      acc: p.acc,
    });
    if (here.length === run[here[0].m].argv.length && here.every((p) => p.m === here[0].m)) return run[here[0].m]; // one whole launch: replayed as traced
    if (loads.reduce((a, b) => a + b, 0) < thresholds.gemm) {
      // Too little work to wake a worker for: the caller runs it all, in trace order.
      return { w: false, phase: true, pre: [], lists: [here.map(call)] };
    }
    const lists = loads.map((_, t) => here.filter((p) => p.thread === t).map(call)).filter((l) => l.length > 0);
    return { w: false, phase: true, pre: [], lists };
  });
  return [...head, ...steps];
}

/** Replays a phase: perCall values in trace order, then one fork-join over the threads' lists. */
export function runPhase(s: PhaseStep): void {
  for (const m of s.pre) {
    const vals = m.compute!();
    for (const a of m.argv) for (let i = 0, at = a.length - m.dyn; i < m.dyn; i++) a[at + i] = vals[i];
  }
  if (s.lists.length === 1) for (const c of s.lists[0]) c.f.apply(null, c.args as number[]);
  else if (s.lists.length > 1) runLists(s.lists);
}

/**
 * A fused run of elementwise launches (src/compile/fuse.ts's runTiles) split over the pool with
 * one fork-join for the whole run instead of one per launch and chunk: each thread runs its
 * piece of every chunk, launch after launch, as one list. Element i of every launch of a run
 * reads only element i of the run's streams (or a scalar), so no thread's pieces depend on
 * another's, and thread j's tile-sized scratch is its own part of the chunk's, as in runTiles.
 * Returns false (nothing run) when the run is not split or the pool cannot take it now.
 */
export function runTileLists(ops: readonly TiledOp[], n: number, tile: number, threads: number): boolean {
  if (threads < 2 || threadCount() < 2 || !schedule.enabled) return false;
  const lists: Call[][] = [];
  for (let j = 0; j < threads && j * tile < n; j++) {
    const list: Call[] = [];
    for (let lo = 0; lo + j * tile < n; lo += tile * threads) {
      const at = lo + j * tile;
      for (const o of ops) {
        const a = o.base.slice();
        for (let p = 0; p < o.ptrs.length; p++) a[o.ptrs[p]] = o.base[o.ptrs[p]] + (o.fixed[p] ? at - lo : at) * o.steps[p];
        a[o.count] = Math.min(tile, n - at);
        list.push({ f: o.f, name: o.name, args: a });
      }
    }
    lists.push(list);
  }
  runLists(lists);
  return true;
}
