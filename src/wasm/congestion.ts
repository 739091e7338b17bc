// When to stop splitting kernels over threads for a while: the congestion rules of a pool on a
// busy machine, and the dispatch counters tests and benches read.
import { hooks } from './hooks.js';

/** Counters of the dispatches so far (read by tests and benches; not part of the public API). */
export const threadStats = { dispatches: 0, lists: 0, stolen: 0, excused: 0, pauses: 0, ownMs: 0, waitMs: 0 };

/**
 * Fork-join on cores that are busy with other work: a worker that has claimed its piece gets
 * descheduled, and the caller waits a scheduler slice (milliseconds) for a piece worth
 * microseconds. Or workers too starved to claim their pieces in time: the caller runs those
 * pieces itself, and the workers' polling and wake-ups take CPU from it (measured: 2 threads
 * 0.55–0.75× the speed of 1 with one core taken by another process). A call is a strike when
 * the caller waited, after its own piece, longer than both `ratio` times that piece and
 * `minWaitMs`, or when it had to run a worker's piece itself after an own piece of over
 * `claimMs` (time enough for a sleeping worker to wake); when `strikes` of the last `window`
 * judged calls were strikes, the pool pauses for a while (kernels run on the calling thread,
 * same bits), then tries again. A busy machine strikes call after call; an idle one, too, now
 * and then: the second core vanishes for a millisecond or two (the engine's own background
 * threads, the hypervisor) and two or three calls in a row strike (the MLP step measured on the
 * idle development VM: runs of 1–3 struck calls, about one run per 150 calls; with the second
 * core taken by another process, 40–75 % of calls struck, also in runs of at most 3: after three
 * lost jobs the worker sleeps between jobs, and a woken thread gets its core back). So a run of
 * three is no sign, but four in twelve calls are: two hitches close together, or a busy machine
 * (6 in 12 reacted too late there: steps 1.2–1.7× slower than with 3 in a row). The counted
 * strikes must also span `strikeMs`, and come in at least `runs` separate runs: a hitch strikes
 * the calls in flight one after another (the GPT step's 0.3–0.7 ms calls: runs of up to 6 within
 * 3 ms), so two hitches close together gave four strikes in twelve calls about once per 50 GPT
 * steps on an idle machine, while a busy machine's strikes come as many short runs, one or two
 * clean calls apart. `inRow` strikes in a row spanning `strikeMs` pause too: a worker that lost
 * its core for a scheduler slice. A pause lasts `firstPauseMs`, doubled for each pause that
 * starts within the previous one's length of its end, up to `pauseMs`: a passing hitch costs a
 * step, a machine that stays busy soon gets the full pause. `pauseMs = 0` turns this off. The first `grace` calls of a new pool (workers warming up) are not judged.
 *
 * A piece taken, inside a compiled program, from a worker that was asleep by its own choice
 * (idle longer than its poll window: at the start of a step) says nothing about the machine:
 * waking takes a while even on idle cores. Such a call is not judged (neither a strike nor a clean call) while the
 * worker's sleep is under `wakeMs` old, counted from the first job posted into it; a worker
 * that still has not woken by then, or that sleeps because it is calm (it kept losing jobs while
 * polling), counts again. `wakeMs = 0` judges every steal (the rule before this excuse).
 */
export const busy = {
  /** Strikes among the last `window` judged calls that pause the pool (`window` ≤ `strikes`: that many in a row)… */
  strikes: 4,
  window: 12,
  /** …in at least this many separate runs of consecutive strikes; or `inRow` in a row. */
  runs: 3,
  inRow: 6,
  /** The counted strikes must also span this long (from the start of the first): a hitch of the second core shorter than a scheduler slice does not pause. */
  strikeMs: 4,
  pauseMs: 1000,
  firstPauseMs: 100,
  minWaitMs: 0.25,
  ratio: 2,
  claimMs: 0.25,
  grace: 32,
  wakeMs: 2,
  /** Workers (read when a pool starts): how long an idle one polls before it sleeps; after losing `calmAfter` jobs in a row while polling, it sleeps between jobs for `calmMs`. */
  spinMs: 1,
  /** Workers: how long an idle one polls while a compiled program runs (the caller holds the pool awake for the step). */
  holdMs: 5,
  calmAfter: 3,
  calmMs: 100,
};
let pausedUntil = 0,
  judged = 0,
  /** The length of the last pause (ms); 0 before the first. */
  lastPause = 0;
/** The last judged calls, oldest first: when each strike began (performance.now()), NaN for a clean call. */
let recent: number[] = [];
/** Per worker: the last sleep (its NAP word) a job was posted into, and when that first happened. */
let naps: { nap: number; at: number }[] = [];
/** Paused, unless compile() is tracing: a pause starting or ending between its two traces would make them differ. */
export const paused = (): boolean => pausedUntil > 0 && hooks.recorder === null && performance.now() < pausedUntil;

/** Where congestion() logs each dispatch it is given ([now, ownMs, waitMs, stole, excused]), for bench/pause-replay.ts; null: nowhere. */
let record: number[][] | null = null;
export function recordDispatches(into: number[][] | null): void {
  record = into;
}

/** Pauses the pool until `at` (performance.now() time; 0 ends a pause), as a busy machine would (src/testing.ts). */
export function pauseUntil(at: number): void {
  pausedUntil = at;
}

/** A new pool starts unjudged and unpaused. */
export function resetCongestion(): void {
  judged = pausedUntil = lastPause = 0;
  recent = [];
  naps = [];
}

/**
 * Whether worker `w`, whose NAP word read `nap` as a job was posted to it at `now`, is waking from
 * a sleep of its own choice begun (as far as the caller knows: its first job posted into it)
 * under `wakeMs` ago. Polling (0) and calm sleeps (odd) are not.
 */
export function waking(w: number, nap: number, now: number): boolean {
  if (nap === 0 || (nap & 1) === 1 || busy.wakeMs <= 0) return false;
  const n = (naps[w] ??= { nap: 0, at: 0 });
  if (n.nap !== nap) Object.assign(n, { nap, at: now });
  return now - n.at < busy.wakeMs;
}

/**
 * `strikes` of the last `window` judged calls, spanning `strikeMs`, in at least `runs` separate
 * runs (one when `window` ≤ `strikes`: then they are that many in a row).
 */
function spread(now: number): boolean {
  const last = recent.slice(-Math.max(busy.window, busy.strikes));
  let struck = 0,
    runs = 0,
    first = NaN;
  last.forEach((t, i) => {
    if (Number.isNaN(t)) return;
    if (struck++ === 0) first = t;
    if (i === 0 || Number.isNaN(last[i - 1])) runs++;
  });
  return struck >= busy.strikes && runs >= (busy.window > busy.strikes ? busy.runs : 1) && now - first >= busy.strikeMs;
}

/** The last `inRow` judged calls all struck, spanning `strikeMs`. */
function inRow(now: number): boolean {
  const k = busy.inRow;
  if (k <= 0 || recent.length < k) return false;
  const last = recent.slice(-k);
  return last.every((t) => !Number.isNaN(t)) && now - last[0] >= busy.strikeMs;
}

/**
 * Judges one dispatch: the caller's own piece took `ownMs`, it then waited `waitMs`; `stole`: it
 * ran a worker's piece; `excused`: every piece it ran was of a worker still waking (see waking()).
 */
export function congestion(ownMs: number, waitMs: number, stole: boolean, excused = false): void {
  record?.push([performance.now(), ownMs, waitMs, stole ? 1 : 0, excused ? 1 : 0]);
  if (busy.pauseMs <= 0 || ++judged <= busy.grace) return;
  const waitedLong = waitMs > Math.max(busy.minWaitMs, busy.ratio * ownMs);
  if (!waitedLong && stole && (excused || ownMs <= busy.claimMs)) return; // a sleeping worker, or too short to tell one from a starved one
  const now = performance.now();
  recent.push(!waitedLong && !stole ? NaN : now - ownMs - waitMs);
  if (recent.length > Math.max(busy.window, busy.strikes, busy.inRow)) recent.shift();
  if (!waitedLong && !stole) return;
  if (spread(now) || inRow(now)) {
    recent = [];
    const again = lastPause > 0 && now - pausedUntil < lastPause;
    lastPause = Math.min(busy.pauseMs, again ? 2 * lastPause : busy.firstPauseMs);
    pausedUntil = now + lastPause;
    threadStats.pauses++;
  }
}
