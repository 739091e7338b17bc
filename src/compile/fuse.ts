// Fusion of elementwise chains in a compiled program (src/compile/program.ts). A traced step runs
// `tanh(mul(add(x, y), z))` as three kernel calls, each one full pass over memory. Here maximal
// runs of consecutive elementwise map launches over the same element count are found in the
// trace and replayed tile-major: for each tile of T elements every launch of the run runs on
// that tile before the next tile starts, so intermediates stay in cache. Tiles start at multiples
// of 16 elements — the rule src/wasm/split.ts uses for thread pieces — so every piece starts on
// a SIMD lane boundary and the scalar (or vmath partial-vector) tail lands where it did: each
// element is computed by the same code path as in the unfused call, bit for bit.
// An intermediate that only this run touches (written first, read only inside the run, freed
// before the call returns) needs no full-size buffer: it gets a tile-sized scratch buffer whose
// pointer stays fixed while the others advance, which lowers the plan's peak memory.
// With the thread pool up (the trace cut the run's launches into pieces), a run is replayed in
// chunks of one piece per thread: each launch runs on the chunk through runJobs (one fork-join per
// launch and chunk), each thread's piece staying in its core's cache from one launch to the next.
import type { Trace, Ref, Block, Launch } from './trace.js';
import { runJobs } from '../wasm/threads.js';
import { rules } from '../ops/table.js';
import type { Element } from '../ops/rule.js';

/** Internal tuning (the bench sets these; tests shrink the tile to exercise many tiles). */
export const fusion = {
  /**
   * Bytes per operand per tile on one thread. Measured (bench/compile-step.ts, 5-op f32 chains of
   * 2^20 and 2^22 elements): 4–64 KB all within noise of each other, 32 KB marginally best — a
   * run's ~8 streams of 32 KB stay in L2, and a tile is large enough that the JS loop costs little.
   */
  tileBytes: 32768,
  /** Bytes per operand per thread's piece when the run is split across the pool (fewer, larger fork-joins). */
  pieceBytes: 131072,
  /** Off: compiled programs replay every launch on its own (as compile(fn, { fuse: false })). */
  enabled: true,
};

/** One launch of a run, as a whole (unsplit) call. */
interface FusedOp {
  readonly name: string;
  /** The whole call's arguments (element count at `count`). */
  readonly args: number[];
  readonly refs: readonly (Ref | null)[];
  /** Positions of the pointer arguments, and the bytes each advances per element (0: a broadcast scalar). */
  readonly ptrs: readonly number[];
  readonly steps: readonly number[];
  readonly count: number;
}

export interface Run {
  /** Indices into trace.ops of the first and last launch, and of every launch in the run. */
  readonly first: number;
  readonly last: number;
  readonly members: readonly number[];
  /**
   * Ops between first and last that are not in the run but touch none of its memory (the fills
   * that make number operands into scalars, JS writes of constants): replayed before the run.
   */
  readonly hoisted: readonly number[];
  /** Blocks the run and its hoisted ops touch (they live through the whole run). */
  readonly touched: ReadonlySet<number>;
  readonly n: number;
  /** Elements per tile, or per thread's piece of a chunk (a multiple of 16). */
  readonly tile: number;
  /** Threads a chunk is split over (1: tile by tile on the calling thread). */
  readonly threads: number;
  readonly ops: readonly FusedOp[];
  /** Intermediates replaced by tile-sized scratch: block id → scratch bytes. */
  readonly scratch: ReadonlyMap<number, number>;
  /** Event clocks of the first and last launch. */
  readonly span: readonly [number, number];
}

type Role = 'r' | 'w' | 'rw';
interface Sig {
  readonly ptrs: readonly number[];
  readonly roles: readonly Role[];
  /** Bytes per element of each pointer's stream (0: read as a broadcast scalar). */
  readonly steps: readonly number[];
  readonly count: number;
}

/** Kernel family → argument layout, for every primitive whose rule row marks its kernel fusable. */
const FUSABLE: ReadonlyMap<string, Element['layout']> = new Map(
  Object.values(rules as Record<string, { element?: Element }>).flatMap((r) =>
    r.element?.fusable ? [[r.element.kernel, r.element.layout] as const] : [],
  ),
);

/** The map signature of a launch (kernel name and arguments), or null when it is no plain elementwise map. */
function sigOf(name: string, a: readonly number[]): Sig | null {
  if (name === 'cast_f32_f64') return { ptrs: [0, 1], roles: ['r', 'w'], steps: [4, 8], count: 2 };
  if (name === 'cast_f64_f32') return { ptrs: [0, 1], roles: ['r', 'w'], steps: [8, 4], count: 2 };
  const m = /^(\w+)_f(32|64)$/.exec(name);
  if (m === null) return null;
  const op = m[1],
    b = m[2] === '32' ? 4 : 8,
    layout = FUSABLE.get(op);
  if (layout === 'map') return { ptrs: [0, 1], roles: ['r', 'w'], steps: [b, b], count: 2 };
  if (layout === 'grad') return { ptrs: [0, 1, 2], roles: ['r', 'r', 'w'], steps: [b, b, b], count: 3 };
  if (op === 'fill') return { ptrs: [0], roles: ['w'], steps: [b], count: 1 };
  if (op === 'scale') return { ptrs: [0], roles: ['rw'], steps: [b], count: 1 };
  // (a, b, y, rows, cols, sar, sac, sbr, sbc): one row, each operand contiguous or a broadcast scalar.
  const unit = (s: number) => s === 0 || s === 1;
  if (layout === 'zip' && a[3] === 1 && unit(a[6]) && unit(a[8])) {
    return { ptrs: [0, 1, 2], roles: ['r', 'r', 'w'], steps: [a[6] * b, a[8] * b, b], count: 4 };
  }
  return null;
}

/** The launch as one whole call, or null (a perCall argument, or pooled pieces that are not one contiguous split). */
function wholeCall(op: Launch): FusedOp | null {
  if (op.dyn !== 0 || op.compute !== null) return null;
  const s = sigOf(op.name, op.jobs[0]);
  if (s === null) return null;
  const args = op.jobs[0].slice();
  let lo = 0;
  for (let j = 0; j < op.jobs.length; j++) {
    const same = s.ptrs.every((p, k) => {
      const r0 = op.refs[0][p],
        r = op.refs[j][p];
      return r0 !== null && r !== null && sameBase(r0, r) && offOf(r) === offOf(r0) + lo * s.steps[k];
    });
    if (!same || (j > 0 && op.jobs[j].some((v, i) => !s.ptrs.includes(i) && i !== s.count && v !== args[i]))) return null;
    lo += op.jobs[j][s.count];
  }
  args[s.count] = lo;
  return { name: op.name, args, refs: op.refs[0], ptrs: s.ptrs, steps: s.steps, count: s.count };
}

const offOf = (r: Ref): number => (r.k === 'abs' ? r.ptr : r.off);
function sameBase(a: Ref, b: Ref): boolean {
  switch (a.k) {
    case 'block':
      return b.k === 'block' && a.block === b.block;
    case 'input':
      return b.k === 'input' && a.input === b.input;
    case 'ext':
      return b.k === 'ext' && a.storage === b.storage;
    case 'abs':
      return b.k === 'abs';
  }
}

/** One pointer argument's bytes: [lo, hi) from the start of its base; step 0 is a single element. */
interface Access {
  readonly ref: Ref;
  readonly lo: number;
  readonly hi: number;
  readonly step: number;
  readonly write: boolean;
}

function accesses(f: FusedOp, roles: readonly Role[]): Access[] {
  const n = f.args[f.count];
  return f.ptrs.flatMap((p, k) => {
    const ref = f.refs[p]!,
      lo = offOf(ref),
      step = f.steps[k],
      bytes = step === 0 ? 8 : step * n;
    const a = { ref, lo, hi: lo + bytes, step };
    return roles[k] === 'rw'
      ? [
          { ...a, write: false },
          { ...a, write: true },
        ]
      : [{ ...a, write: roles[k] === 'w' }];
  });
}

/**
 * Whether two accesses could see each other's writes at another element index once reordered
 * tile-major: same base, overlapping bytes, and not the same stream (same start, same element size).
 */
function conflict(x: Access, y: Access): boolean {
  if (!x.write && !y.write) return false;
  if (!sameBase(x.ref, y.ref) || x.hi <= y.lo || y.hi <= x.lo) return false;
  return !(x.step !== 0 && x.step === y.step && x.lo === y.lo);
}

/** An op outside a run that may move before it: a fill or a JS write, with the bytes it writes. */
function hoistable(op: Trace['ops'][number]): Access | null {
  if (op.kind === 'write') {
    const lo = offOf(op.dest);
    return { ref: op.dest, lo, hi: lo + op.data.byteLength, step: 1, write: true };
  }
  const f = wholeCall(op);
  if (f === null || !/^fill_f(32|64)$/.test(f.name)) return null;
  return accesses(f, ['w'])[0];
}

interface Open {
  first: number;
  members: number[];
  hoisted: number[];
  ops: FusedOp[];
  acc: Access[];
  lifted: Access[];
  at: number[];
  threads: number;
}
export interface Sizes {
  readonly tileBytes: number;
  readonly pieceBytes: number;
}

/** Runs of two or more launches that can be replayed tile-major, over the trace's ops. */
export function findRuns(trace: Trace, sizes: Sizes, outputBlocks: ReadonlySet<number>): Run[] {
  const runs: Run[] = [];
  let cur: Open | null = null;
  const close = (c: Open | null): null => {
    if (c !== null && c.ops.length >= 2) {
      const run = finishRun(trace, c, sizes, outputBlocks);
      if (run !== null) runs.push(run);
    }
    return null;
  };
  trace.ops.forEach((op, i) => {
    const f = op.kind === 'launch' ? wholeCall(op) : null;
    const acc = f === null ? [] : accesses(f, sigOf(f.name, f.args)!.roles);
    // A launch whose own broadcast read overlaps its own write cannot be cut into tiles at all.
    const ok = f !== null && f.args[f.count] > 0 && !acc.some((x) => acc.some((y) => x !== y && conflict(x, y)));
    // Hoisted ops need no check here: in both orders they come before this launch.
    if (
      cur !== null &&
      ok &&
      f.args[f.count] === cur.ops[0].args[cur.ops[0].count] &&
      !acc.some((x) => cur!.acc.some((y) => conflict(x, y)))
    ) {
      cur.members.push(i), cur.ops.push(f), cur.acc.push(...acc), cur.at.push((op as Launch).at);
      cur.threads = Math.max(cur.threads, (op as Launch).jobs.length);
      return;
    }
    const h = cur === null ? null : hoistable(op);
    if (cur !== null && h !== null && !cur.acc.some((y) => overlaps(h, y))) {
      cur.hoisted.push(i), cur.lifted.push(h);
      return;
    }
    cur = close(cur);
    if (ok)
      cur = {
        first: i,
        members: [i],
        hoisted: [],
        ops: [f],
        acc,
        lifted: [],
        at: [(op as Launch).at],
        threads: (op as Launch).jobs.length,
      };
  });
  close(cur);
  return runs;
}

const overlaps = (x: Access, y: Access): boolean => sameBase(x.ref, y.ref) && x.lo < y.hi && y.lo < x.hi;

function finishRun(trace: Trace, c: Open, sizes: Sizes, outputBlocks: ReadonlySet<number>): Run | null {
  const n = c.ops[0].args[c.ops[0].count];
  const widest = Math.max(4, ...c.acc.map((a) => a.step));
  const elems = (bytes: number) => Math.max(16, Math.floor(bytes / widest / 16) * 16);
  // Split across the pool when the trace did (the launches were large enough): pieces of at most
  // pieceBytes, fewer when one chunk covers the run (then it is the unfused split, launch by launch).
  const threads = c.threads;
  const tile = threads > 1 ? Math.min(elems(sizes.pieceBytes), Math.ceil(n / threads / 16) * 16) : elems(sizes.tileBytes);
  if (n <= tile) return null; // one tile: the unfused launches already are that
  const last = c.members[c.members.length - 1];
  const hoisted = c.hoisted.filter((i) => i < last); // ops after the last member stay where they are
  const touched = new Set<number>();
  for (const a of [...c.acc, ...c.lifted.slice(0, hoisted.length)]) if (a.ref.k === 'block') touched.add(a.ref.block);
  return {
    first: c.first,
    last,
    members: c.members,
    hoisted,
    touched,
    n,
    tile,
    threads,
    ops: c.ops,
    scratch: scratchOf(trace, new Set(c.members), c.acc, tile * threads, outputBlocks),
    span: [c.at[0], c.at[c.at.length - 1]],
  };
}

/**
 * Blocks of the run that die inside it: used by no op outside the run, not returned, freed by
 * the end of the call, every access a stream from the block's start, and written before read.
 */
function scratchOf(
  trace: Trace,
  members: ReadonlySet<number>,
  acc: Access[],
  tile: number,
  outputBlocks: ReadonlySet<number>,
): Map<number, number> {
  const scratch = new Map<number, number>();
  const byBlock = new Map<number, Access[]>();
  for (const a of acc) if (a.ref.k === 'block') byBlock.set(a.ref.block, [...(byBlock.get(a.ref.block) ?? []), a]);
  for (const [id, as] of byBlock) {
    if (outputBlocks.has(id) || trace.blocks[id].free < 0) continue;
    if (!as.every((a) => a.step === as[0].step && a.step !== 0 && a.lo === 0) || !as[0].write) continue;
    if (usedOutside(trace, id, members)) continue;
    scratch.set(id, tile * as[0].step);
  }
  return scratch;
}

function usedOutside(trace: Trace, id: number, members: ReadonlySet<number>): boolean {
  const hit = (r: Ref | null) => r !== null && r.k === 'block' && r.block === id;
  return trace.ops.some((op, i) => !members.has(i) && (op.kind === 'write' ? hit(op.dest) : op.refs.some((rs) => rs.some(hit))));
}

/**
 * The trace's planned blocks as fusion needs them: every block a run touches lives through the
 * whole run (tile-major replay has them all in use at once, so none may share bytes with another),
 * and scratch blocks shrink to their tile and to the run's span.
 */
export function fusedBlocks(blocks: readonly Block[], runs: readonly Run[]): Block[] {
  const out = new Map(blocks.map((b) => [b.id, { ...b }]));
  for (const r of runs) {
    for (const id of r.touched) {
      const b = out.get(id);
      if (b === undefined) continue; // an output: not in the plan
      const bytes = r.scratch.get(id);
      out.set(
        id,
        bytes !== undefined
          ? { ...b, bytes, alloc: r.span[0], free: r.span[1] }
          : { ...b, alloc: Math.min(b.alloc, r.span[0]), free: Math.max(b.free, r.span[1]) },
      );
    }
  }
  return [...out.values()];
}

/** A run's launch ready to replay: `base` holds the call's rebased pointers, `pieces` one argument list per thread. */
export interface TiledOp {
  readonly name: string;
  readonly f: (...args: number[]) => unknown;
  readonly base: number[];
  readonly pieces: number[][];
  readonly ptrs: readonly number[];
  readonly steps: readonly number[];
  /** Per pointer: a scratch buffer (addressed from the chunk's start) rather than the whole stream. */
  readonly fixed: readonly boolean[];
  readonly count: number;
}

/**
 * Replays a run tile-major: every launch on chunk [lo, lo + tile·threads) before the next chunk,
 * the chunk cut into one piece of `tile` elements per thread (one piece: a plain call).
 */
export function runTiles(ops: readonly TiledOp[], n: number, tile: number, threads: number): void {
  const chunk = tile * threads;
  for (let lo = 0; lo < n; lo += chunk) {
    const parts = Math.min(threads, Math.ceil((n - lo) / tile));
    for (let k = 0; k < ops.length; k++) {
      const o = ops[k];
      for (let j = 0; j < parts; j++) {
        const a = o.pieces[j],
          at = lo + j * tile;
        for (let p = 0; p < o.ptrs.length; p++) a[o.ptrs[p]] = o.base[o.ptrs[p]] + (o.fixed[p] ? at - lo : at) * o.steps[p];
        a[o.count] = Math.min(tile, n - at);
      }
      if (parts === 1) o.f.apply(null, o.pieces[0]);
      else runJobs(o.name, parts === threads ? o.pieces : o.pieces.slice(0, parts), o.f as (...args: number[]) => number);
    }
  }
}
