// Uneven cuts for threads of unequal speed. A fork-join step runs at the pace of its slowest
// thread, and threads are not equally fast for long stretches: a vCPU the hypervisor shares
// (measured on the development VM: one core at 22–34 GFLOP/s against 45–52 on the other, for
// minutes), a small core of a phone, a core another process or tab also wants. Every cut in
// split.ts computes each output element the same way wherever it falls, so the shares may follow
// the threads' measured speeds without changing a bit.
//
// The measure: for each fork in which every thread ran its own piece, the caller's time in its
// piece and each worker's busy time in its own (BUSY_US). Over a window, a thread's speed is its
// share over its time; the new shares are proportional to the speeds, in units of 1/16 of an
// equal share (32nds of the whole on two threads), at least MIN_UNITS (a quarter of an equal
// share) each. They apply only when one moves by `step` units or more in two windows in a row,
// at most once per `gapMs` and per `costRatio` times what the last compiled signature took to
// set up: a compiled function traces itself again for new cuts (its signature includes them),
// which costs a GPT step about half a second, and drops the program of the old ones. The first
// window after a change is not judged. A move the next windows ask to undo goes back to equal
// cuts at once and doubles the gap (see observeFork).
// Nothing changes while compile() traces: both traces of a signature must see the same cuts.
import { hooks } from './hooks.js';

/** Settings (tests and benches change them; not part of the public API). */
export const balance = {
  /** Off: equal cuts, as before this controller (and the measured sums are dropped). */
  enabled: true,
  /** Caller time (ms) in measured forks that makes a window. */
  windowMs: 200,
  /** Smallest move, in units, of any thread's share that is applied. */
  step: 2,
  /** Least time between two changes of the shares (ms)… */
  gapMs: 2000,
  /** …and at least this many times what the last compiled signature cost to set up (its eager call, two traces, the build). */
  costRatio: 20,
};
const MIN_UNITS = 4;
/** Units of a cut among `threads` threads: 16 per thread (32 on two), so MIN_UNITS is a quarter of an equal share. */
const unitsOf = (threads: number): number => 16 * threads;

/** Units per thread (sum unitsOf(threads)), or null for equal cuts. */
let units: number[] | null = null;
/** The units as fractions of the whole (what ranges() cuts by), [] for equal cuts. */
let shares: number[] = [];
/** cutKey()'s value: the units joined, '' for equal cuts. */
let key = '';
/** Per thread: time measured in the current window (ms); [0] is the caller's. */
let spent: number[] = [];
let lastChange = -Infinity;
/** What the last compiled signature cost to set up (ms): new cuts cost a compiled function as much again. */
let lastBuild = 0;
/** The last change of the units (new minus old), while the cuts it made hold; null after a return to equal cuts. */
let lastMove: number[] | null = null;
/** Multiplies the gap after moves that had to be undone (up to MAX_BACKOFF); halves again while the shares hold. */
let backoff = 1,
  lastEase = -Infinity;
const MAX_BACKOFF = 32;
/** Whether the next full window is skipped: the first after a change of the cuts. */
let settling = false;
/** The last window's proposal when it asked for a move, else null. */
let pending: number[] | null = null;

/** compile() built a program: its signature took `ms` from first call to ready. */
export function buildCost(ms: number): void {
  lastBuild = ms;
}

/** The current cuts as a signature part: '' when equal. */
export function cutKey(): string {
  return key;
}

/** Each thread's share of a cut into `parts` pieces (summing to 1), or null for equal shares. */
export function cutShares(parts: number): readonly number[] | null {
  return units !== null && units.length === parts ? shares : null;
}

/** Each of `threads` threads' share of a cut (summing to 1), equal ones included. */
export function threadShares(threads: number): number[] {
  return cutShares(threads)?.slice() ?? new Array<number>(threads).fill(1 / threads);
}

/** Sets the units per thread (null or all equal: equal cuts); for tests and benches, and the controller. */
export function setCuts(u: readonly number[] | null): void {
  spent = []; // times measured under other cuts
  pending = null;
  settling = true;
  const equal = u === null || u.every((x) => x === u[0]);
  units = equal ? null : u.slice();
  const sum = units?.reduce((a, b) => a + b, 0) ?? 0;
  shares = units === null ? [] : units.map((x) => x / sum);
  key = units === null ? '' : units.join('.');
}

/** The current units per thread for a pool of `threads` (equal when no uneven cut is set). */
export function cutUnits(threads: number): number[] {
  if (units !== null && units.length === threads) return units.slice();
  return new Array<number>(threads).fill(unitsOf(1)); // unitsOf(threads) splits evenly
}

/** Forgets the shares and the window (a new pool). */
export function resetBalance(): void {
  setCuts(null);
  lastBuild = 0;
  lastMove = null;
  backoff = 1;
  lastEase = -Infinity;
  lastChange = -Infinity;
}

/**
 * One fork in which every one of `times.length` threads ran its own piece: the caller's time and
 * each worker's busy time (ms). Judges the window when it is full.
 */
export function observeFork(times: readonly number[]): void {
  if (!balance.enabled && spent.length > 0) spent = [];
  if (!balance.enabled || hooks.recorder !== null) return;
  if (spent.length !== times.length) spent = times.map(() => 0);
  for (let i = 0; i < times.length; i++) spent[i] += times[i];
  if (spent[0] < balance.windowMs) return;
  if (settling) {
    // The first window after a change measures the change itself (a compiled function's eager
    // call and first replays on a fresh plan), not the threads: measured at equal cuts on equal
    // cores, such windows swung 2× between the threads.
    settling = false;
    spent = spent.map(() => 0);
    return;
  }
  const cur = cutUnits(spent.length);
  const next = proposeCuts(cur, spent);
  // A move needs two windows in a row that ask for it (one window can catch a hitch of either
  // thread), and the gap since the last change.
  const moves = next.some((u, i) => Math.abs(u - cur[i]) >= balance.step);
  const confirmed = moves && pending !== null && pending.length === next.length && next.every((u, i) => Math.abs(u - pending![i]) <= 1);
  pending = moves ? next : null;
  spent = spent.map(() => 0);
  const now = performance.now(),
    gap = Math.max(balance.gapMs, balance.costRatio * lastBuild) * backoff;
  // The shares held for a whole gap: the next try may come sooner again.
  if (!moves && now - Math.max(lastChange, lastEase) > gap) (backoff = Math.max(1, backoff / 2)), (lastEase = now);
  if (!confirmed) return;
  // Asked to undo the last move: the slowness followed the core, not the thread, and the threads
  // moved between cores (a compiled function's new trace, with its workers asleep, lets the
  // operating system place them afresh). Back to equal cuts at once, and wait twice as long
  // before the next try.
  const back = lastMove !== null && lastMove.length === next.length && next.reduce((d, u, i) => d + (u - cur[i]) * lastMove![i], 0) < 0;
  if (back && units !== null) {
    backoff = Math.min(backoff * 2, MAX_BACKOFF);
    lastMove = null;
    setCuts(null);
    lastChange = now;
    return;
  }
  if (now - lastChange < gap) return;
  lastMove = next.map((u, i) => u - cur[i]);
  setCuts(next);
  lastChange = now;
}

/**
 * New units per thread from the current ones and the time each thread took for its share: shares
 * proportional to speed (units / time), rounded to units (largest remainders), at least MIN_UNITS.
 */
export function proposeCuts(cur: readonly number[], times: readonly number[]): number[] {
  const speed = cur.map((u, i) => u / Math.max(times[i], 1e-9));
  const total = speed.reduce((a, b) => a + b, 0);
  const all = unitsOf(cur.length),
    free = all - MIN_UNITS * cur.length;
  const ideal = speed.map((s) => Math.max(0, (s / total) * all - MIN_UNITS));
  const scale = free / ideal.reduce((a, b) => a + b, 0);
  const raw = ideal.map((x) => x * scale);
  const out = raw.map(Math.floor);
  const order = raw.map((x, i) => [x - Math.floor(x), i]).sort((a, b) => b[0] - a[0]);
  const left = free - out.reduce((a, b) => a + b, 0);
  for (let k = 0; k < left; k++) out[order[k][1]]++;
  return out.map((x) => x + MIN_UNITS);
}
