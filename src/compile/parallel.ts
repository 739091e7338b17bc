// compile()'s parallel schedule: with the thread pool up, a replayed program runs independent
// kernel launches of one step concurrently — the two gradient GEMMs of a layer (dX and dW) side
// by side, every parameter's optimizer update in one batch, an update next to the backward work
// of the layers below it — instead of only cutting each launch into halves with a fork-join of
// its own. Planned once, when the program is built (src/compile/program.ts):
//   1. Every launch of a kernel whose memory roles are known (ROLES: which pointer arguments it
//      writes, the rest it reads) gets the byte ranges it touches: whole buffers of the memory
//      plan, persistent tensors, or the call's own inputs and outputs (by position). Any other
//      step (JS writes, fused runs, kernels not in ROLES) is a barrier that runs as before.
//   2. Between barriers, each launch gets the earliest level after every earlier launch it
//      conflicts with (one writes what the other reads or writes); a level is one phase.
//   3. A phase's pieces (the traced cuts of pooled launches, whole calls otherwise) go to the
//      threads largest first, each to the least loaded one; each thread runs its list in trace
//      order. One fork-join per phase (runLists in src/wasm/threads.ts).
// Bits do not depend on any of this: every piece computes its outputs exactly as in the traced
// order (no two pieces of a phase touch the same bytes where one writes), whichever thread runs
// it, so a replay gives the same results for any thread count, paused pool or none.
import type { Kernel } from '../wasm/hooks.js';
import { runLists, type Call } from '../wasm/threads.js';
import { scratchOf } from '../wasm/scratch.js';
import { thresholds } from '../wasm/split.js';

/** Memory a launch touches: absolute bytes [lo, hi), or a per-call buffer (an input or output of the call) by key. */
export type Extent = { readonly lo: number; readonly hi: number } | { readonly key: string };

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

/** A phase: launches that run concurrently, their pieces assigned to threads. */
export interface PhaseStep {
  readonly w: false;
  readonly tiled?: false;
  readonly phase: true;
  /** Launches whose perCall values are computed first, in trace order (a run's first step carries all of the run's). */
  readonly pre: readonly PlannedLaunch[];
  /** Per thread, the calls it runs in order (empty: a step that only computes `pre`). */
  readonly lists: readonly (readonly Call[])[];
}

interface Role {
  /** Pointer arguments the kernel writes (the others it reads). */
  readonly writes: readonly number[];
  /** Work of a call (≈ multiply-adds or element visits), for balancing threads. */
  readonly cost: (a: readonly number[]) => number;
}
const f = (...names: string[]): RegExp => new RegExp(`^(${names.join('|')})_f(32|64)$`);
/** Kernels the planner may reorder and run side by side, with their written arguments. */
const ROLES: readonly (readonly [RegExp, Role])[] = [
  [f('gemm'), { writes: [2], cost: (a) => a[3] * a[4] * a[5] }],
  [f('gemm_bias_act'), { writes: [2], cost: (a) => a[4] * a[5] * a[6] }],
  [f('sgd'), { writes: [0, 2], cost: (a) => a[3] }],
  [f('adam'), { writes: [0, 2, 3], cost: (a) => 2 * a[4] }],
  [f('bias_act_vjp'), { writes: [2, 3], cost: (a) => a[4] * a[5] }],
  [f('add', 'sub', 'mul', 'div', 'maximum', 'minimum'), { writes: [2], cost: (a) => a[3] * a[4] }],
  [f('sum', 'max'), { writes: [1], cost: (a) => a[2] * a[3] * a[4] }],
  [f('fill'), { writes: [0], cost: (a) => a[1] }],
];
const roleCache = new Map<string, Role | null>();
function roleOf(name: string): Role | null {
  let r = roleCache.get(name);
  if (r === undefined) roleCache.set(name, (r = ROLES.find(([re]) => re.test(name))?.[1] ?? null));
  return r;
}

/** Whether a step of the program may join a phase. */
const plannable = (s: { w: boolean; tiled?: boolean; name?: string }): s is PlannedLaunch =>
  !s.w && s.tiled !== true && !('phase' in s) && roleOf((s as PlannedLaunch).name) !== null;

/** gemm_set_scratch to the calling thread's own region: only sets the caller's instance, so it may run before a phase. */
function ownScratch(s: { w: boolean; name?: string; argv?: number[][] }): boolean {
  if (s.w || s.name !== 'gemm_set_scratch') return false;
  const own = scratchOf(0);
  return s.argv![0][0] === own.ptr && s.argv![0][1] === own.bytes;
}

interface Access {
  readonly x: Extent;
  readonly write: boolean;
}
function accesses(s: PlannedLaunch): Access[] {
  const writes = roleOf(s.name)!.writes;
  const out: Access[] = [];
  for (const piece of s.touches) piece.forEach((x, i) => x !== null && out.push({ x, write: writes.includes(i) }));
  return out;
}
const overlap = (a: Extent, b: Extent): boolean =>
  'key' in a || 'key' in b ? 'key' in a && 'key' in b && a.key === b.key : a.lo < b.hi && b.lo < a.hi;
const conflict = (a: readonly Access[], b: readonly Access[]): boolean =>
  a.some((p) => b.some((q) => (p.write || q.write) && overlap(p.x, q.x)));

/**
 * The program's steps with runs of plannable launches grouped into phases for `threads`
 * threads. Steps that are not plannable stay where they are and end a run.
 */
export function parallelize<S extends { w: boolean; tiled?: boolean }>(steps: readonly S[], threads: number): (S | PhaseStep)[] {
  if (threads < 2) return steps.slice();
  const out: (S | PhaseStep)[] = [];
  let run: PlannedLaunch[] = [];
  const flush = () => {
    out.push(...(phases(run, threads) as (S | PhaseStep)[]));
    run = [];
  };
  for (const s of steps) {
    if (plannable(s)) run.push(s);
    else if (ownScratch(s as never)) out.push(s);
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
  const acc = run.map(accesses);
  const level: number[] = [];
  const levels: PlannedLaunch[][] = [];
  run.forEach((s, i) => {
    let l = 0;
    for (let j = 0; j < i; j++) if (level[j] >= l && conflict(acc[i], acc[j])) l = level[j] + 1;
    level.push(l);
    (levels[l] ??= []).push(s);
  });
  const head: PhaseStep[] = pre.length > 0 ? [{ w: false, phase: true, pre, lists: [] }] : [];
  return [...head, ...levels.map((members): PlannedLaunch | PhaseStep => (members.length === 1 ? members[0] : assign(members, threads)))];
}

/** Pieces of a phase to threads: largest first, each to the least loaded thread; every list in trace order. */
function assign(members: readonly PlannedLaunch[], threads: number): PhaseStep {
  const pieces = members.flatMap((s, m) => s.argv.map((a, j) => ({ m, j, cost: roleOf(s.name)!.cost(a) })));
  const call = (p: { m: number; j: number }): Call => ({ f: members[p.m].f, name: members[p.m].name, args: members[p.m].argv[p.j] });
  if (pieces.reduce((t, p) => t + p.cost, 0) < thresholds.gemm) {
    // Too little work to wake a worker for: the caller runs it all, in trace order.
    return { w: false, phase: true, pre: [], lists: [pieces.map(call)] };
  }
  const load = new Array<number>(threads).fill(0);
  const lists: number[][] = Array.from({ length: threads }, () => []);
  const order = pieces.map((_, i) => i).sort((a, b) => pieces[b].cost - pieces[a].cost || a - b);
  for (const i of order) {
    const t = load.indexOf(Math.min(...load));
    load[t] += pieces[i].cost;
    lists[t].push(i);
  }
  return {
    w: false,
    phase: true,
    pre: [],
    lists: lists.filter((l, t) => t === 0 || l.length > 0).map((l) => l.sort((a, b) => a - b).map((i) => call(pieces[i]))),
  };
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
