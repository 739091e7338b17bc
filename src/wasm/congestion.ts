// When to stop splitting kernels over threads for a while: the congestion rules of a pool on a
// busy machine, and the dispatch counters tests and benches read.
import { hooks } from './hooks.js';

/** Counters of the dispatches so far (read by tests and benches; not part of the public API). */
export const threadStats = { dispatches: 0, lists: 0, stolen: 0, pauses: 0, ownMs: 0, waitMs: 0 };

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
  strikes: 3,
  pauseMs: 1000,
  minWaitMs: 0.25,
  ratio: 2,
  claimMs: 0.25,
  grace: 32,
  /** Workers (read when a pool starts): how long an idle one polls before it sleeps; after losing `calmAfter` jobs in a row while polling, it sleeps between jobs for `calmMs`. */
  spinMs: 1,
  /** Workers: how long an idle one polls while a compiled program runs (the caller holds the pool awake for the step). */
  holdMs: 5,
  calmAfter: 3,
  calmMs: 100,
};
let strikes = 0,
  pausedUntil = 0,
  judged = 0;
/** Paused, unless compile() is tracing: a pause starting or ending between its two traces would make them differ. */
export const paused = (): boolean => pausedUntil > 0 && hooks.recorder === null && performance.now() < pausedUntil;

/** Pauses the pool until `at` (performance.now() time; 0 ends a pause), as a busy machine would (src/testing.ts). */
export function pauseUntil(at: number): void {
  pausedUntil = at;
}

/** A new pool starts unjudged and unpaused. */
export function resetCongestion(): void {
  strikes = judged = pausedUntil = 0;
}

/** Judges one dispatch: the caller's own piece took `ownMs`, it then waited `waitMs`; `stole`: it ran a worker's piece. */
export function congestion(ownMs: number, waitMs: number, stole: boolean): void {
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
