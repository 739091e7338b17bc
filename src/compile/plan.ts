// A compiled program's memory plan (src/compile/program.ts): every block the traced call allocated
// and freed again gets an offset in one arena block, and two blocks may share bytes only when
// they are never in use together. On one thread that is when their lifetimes in the trace do not
// overlap. With the parallel schedule (src/compile/parallel.ts) the replay does not run in trace
// order: a phase runs its threads' lists side by side, and a launch may run before one traced
// ahead of it. So the schedule is planned first, on blocks by identity (a block's bytes cannot
// order anything: no false dependency through a reused buffer can cut a chain or hold back a
// phase), and then a block may take the bytes of another only if, besides their lifetimes in the
// trace, the schedule puts every use of the earlier block before every use of the later one
// (ScheduleOrder.before).
import { AdjointError } from '../errors.js';
import type { Block } from './trace.js';
import type { Extent, PhaseStep } from './parallel.js';

const ALIGN = 64; // the arena's alignment: SIMD loads stay aligned and buffers off each other's lines

/** Bytes [lo, hi) of a block one list of a phase uses at a step, and its first (or last) position in that list. */
interface Part {
  readonly lo: number;
  readonly hi: number;
  readonly at: number;
}
/** A block's uses at its first (or last) step: by list of the phase (list -1: the whole step, any thread, all bytes). */
interface Edge {
  readonly step: number;
  readonly lists: Map<number, Part>;
}

/**
 * The first and last uses of each block in a scheduled program (steps in replay order: each runs
 * to its end before the next starts; a phase's lists run concurrently, each in order on one thread).
 */
export class ScheduleOrder {
  private readonly first = new Map<number, Edge>();
  private readonly last = new Map<number, Edge>();

  /** Records that step `step` uses bytes [lo, hi) of `block`: in list `list` of a phase at position `at`, or as a whole (list -1). */
  use(block: number, step: number, list = -1, at = 0, lo = 0, hi = Infinity): void {
    const at1 = list < 0 ? 0 : at;
    note(this.first, block, step, list, { lo, hi, at: at1 }, (e) => step < e.step, Math.min);
    note(this.last, block, step, list, { lo, hi, at: at1 }, (e) => step > e.step, Math.max);
  }

  /**
   * Whether block b may take bytes of block a, b placed `d` bytes after a, when b's uses in the
   * trace all come after a's: no use of b can run while a use of a of the same bytes has not
   * finished. So a's last step comes before b's first, or at that step (a phase) every two uses
   * of the same bytes are in one thread's list, a's ahead of b's. Steps before a's last finished
   * before it began, b's later steps begin after it ended; uses of other bytes may run together.
   * A block no step uses (nothing replayed touches it) is never in the way.
   */
  before(a: number, b: number, d: number): boolean {
    const x = this.last.get(a),
      y = this.first.get(b);
    if (x === undefined || y === undefined || x.step < y.step) return true;
    if (x.step > y.step) return false;
    for (const [la, p] of x.lists)
      for (const [lb, q] of y.lists) if (p.lo < d + q.hi && d + q.lo < p.hi && (la < 0 || la !== lb || p.at >= q.at)) return false;
    return true;
  }

  /** Whether before(a, b, d) may hold for some d but not all (their first and last steps meet), false: it holds for all or none. */
  meets(a: number, b: number): boolean {
    const x = this.last.get(a),
      y = this.first.get(b);
    return x !== undefined && y !== undefined && x.step === y.step;
  }
}

/** Adds a use to a block's first or last edge: a new edge when `replaces` it, merged into the same step's. */
function note(
  edges: Map<number, Edge>,
  block: number,
  step: number,
  list: number,
  part: Part,
  replaces: (e: Edge) => boolean,
  pick: (x: number, y: number) => number,
): void {
  const e = edges.get(block);
  if (e === undefined || replaces(e)) edges.set(block, { step, lists: new Map([[list, part]]) });
  else if (e.step === step) {
    const p = e.lists.get(list);
    e.lists.set(list, p === undefined ? part : { lo: Math.min(p.lo, part.lo), hi: Math.max(p.hi, part.hi), at: pick(p.at, part.at) });
  }
}

/** Whether two blocks are never alive together in the trace (-1: alive at the end, never freed). */
const apartInTrace = (a: Block, b: Block): boolean => (a.free >= 0 && a.free <= b.alloc) || (b.free >= 0 && b.free <= a.alloc);
/** Whether block a's lifetime in the trace ends before b's begins. */
const ahead = (a: Block, b: Block): boolean => a.free >= 0 && a.free <= b.alloc;

/**
 * Whether block b placed `d` bytes after block a may share bytes with it: apart in the trace and,
 * with a schedule, the earlier one's uses of those bytes all over before the later one's begin
 * (the trace's order and the replay's agree).
 */
export function mayShare(a: Block, b: Block, order: ScheduleOrder | null, d: number): boolean {
  if (!apartInTrace(a, b)) return false;
  if (order === null) return true;
  return ahead(a, b) ? order.before(a.id, b.id, d) : order.before(b.id, a.id, -d);
}

/** Whether mayShare(a, b, order, d) depends on d. */
const depends = (a: Block, b: Block, order: ScheduleOrder | null): boolean =>
  order !== null && apartInTrace(a, b) && (ahead(a, b) ? order.meets(a.id, b.id) : order.meets(b.id, a.id));

interface Placed {
  readonly b: Block;
  readonly off: number;
  readonly size: number;
}

/**
 * Offsets for blocks: largest first, each at the lowest offset where it overlaps no placed block
 * it may not share bytes with there (greedy by size, first fit). Candidates: 0, the ends of
 * placed blocks, and the starts of those it may share bytes with at some offsets (a buffer of
 * the same rows, used by the same threads after them).
 */
export function assign(blocks: readonly Block[], order: ScheduleOrder | null): { offsets: Map<number, number>; total: number } {
  const items = blocks
    .map((b) => ({ b, size: Math.max(ALIGN, Math.ceil(b.bytes / ALIGN) * ALIGN) }))
    .sort((x, y) => y.size - x.size || x.b.alloc - y.b.alloc);
  const placed: Placed[] = [];
  const offsets = new Map<number, number>();
  let total = 0;
  for (const { b, size } of items) {
    const soft = placed.filter((p) => depends(p.b, b, order));
    const hard = placed.filter((p) => !depends(p.b, b, order) && !mayShare(p.b, b, order, 0)).sort((x, y) => x.off - y.off);
    const off = soft.length === 0 ? firstGap(hard, size, 0) : firstFit(hard, soft, b, size, order!);
    placed.push({ b, off, size });
    offsets.set(b.id, off);
    total = Math.max(total, off + size);
  }
  return { offsets, total };
}

/** The lowest offset from `from` where `size` bytes overlap none of `busy` (sorted by offset). */
function firstGap(busy: readonly Placed[], size: number, from: number): number {
  let off = from;
  for (const p of busy) {
    if (off + size <= p.off) break;
    off = Math.max(off, p.off + p.size);
  }
  return off;
}

/** The lowest candidate offset clear of `hard` where b may share bytes with every block of `soft` it overlaps. */
function firstFit(hard: readonly Placed[], soft: readonly Placed[], b: Block, size: number, order: ScheduleOrder): number {
  const starts = [...new Set([0, ...hard.map((p) => p.off + p.size), ...soft.flatMap((p) => [p.off, p.off + p.size])])].sort(
    (x, y) => x - y,
  );
  let clear = 0; // candidates below are not clear of `hard`
  for (const c of starts) {
    if (c < clear || (clear = firstGap(hard, size, c)) !== c) continue;
    if (soft.every((p) => p.off >= c + size || c >= p.off + p.size || mayShare(p.b, b, order, c - p.off))) return c;
  }
  return clear; // the last candidate is past every placed block: not reached
}

/** The key of plan block `id` in the schedule's extents (src/compile/parallel.ts's Extent). */
export const blockKey = (id: number): string => `b${id}`;
const blockOf = (key: string): number => (key[0] === 'b' ? Number(key.slice(1)) : -1);

/** What ScheduleOrder needs of a program's steps: phases' lists, launches' extents; other steps' blocks from `uses`. */
type Scheduled = PhaseStep | { readonly w: boolean; readonly tiled?: boolean; readonly touches?: readonly (readonly (Extent | null)[])[] };

/** The uses of plan blocks in a scheduled program; `uses`: the blocks JS writes and fused runs use, by step. */
export function scheduleOrder(steps: readonly Scheduled[], uses: ReadonlyMap<object, readonly number[]>): ScheduleOrder {
  const order = new ScheduleOrder();
  const key = (k: string, step: number, list?: number, at?: number, lo?: number, hi?: number) => {
    const b = blockOf(k);
    if (b >= 0) order.use(b, step, list, at, lo, hi);
  };
  steps.forEach((s, i) => {
    if ('phase' in s) s.lists.forEach((l, t) => l.forEach((c, k) => c.acc.forEach((a) => key(a.key, i, t, k, a.lo, a.hi))));
    else if (s.touches !== undefined) for (const x of s.touches.flat()) if (x !== null) key(x.key, i);
    for (const b of uses.get(s) ?? []) order.use(b, i);
  });
  return order;
}

/**
 * Throws unless every two blocks whose bytes overlap at `offsets` may share them in `order`:
 * the schedule the program replays is the one the plan was made for.
 */
export function checkPlan(blocks: readonly Block[], offsets: ReadonlyMap<number, number>, order: ScheduleOrder): void {
  const at = blocks.map((b) => ({ b, lo: offsets.get(b.id)!, hi: offsets.get(b.id)! + Math.max(1, b.bytes) })).sort((x, y) => x.lo - y.lo);
  for (let i = 0; i < at.length; i++)
    for (let j = i + 1; j < at.length && at[j].lo < at[i].hi; j++)
      if (!mayShare(at[i].b, at[j].b, order, at[j].lo - at[i].lo))
        throw new AdjointError(
          `internal: compile: blocks ${at[i].b.id} and ${at[j].b.id} share bytes while the schedule uses them together`,
        );
}
