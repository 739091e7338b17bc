// The busy-machine rule of the thread pool (src/wasm/congestion.ts): sequences of dispatches fed
// to congestion() as a quiet and a busy machine produce them, the pauses' lengths, the excuse for a worker still
// waking from its own sleep (waking()), and, on a real pool, the workers' NAP word and the HOLD
// a compiled program asks for when a pause ends in its middle.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import { busy, congestion, paused, resetCongestion, threadStats, waking } from '../src/wasm/congestion.js';
import { currentPool } from '../src/wasm/pool.js';
import { holdPool } from '../src/wasm/threads.js';
import { thresholds } from '../src/wasm/split.js';
import { SLOT } from '../src/wasm/worker-source.js';
import { pauseFor, threadCount } from '../src/testing.js';

const saved = { ...busy };
/** The clock congestion() reads (performance.now(), mocked): feed() advances it by each dispatch's time. */
let now = 10_000;
/** Judges `n` dispatches alike, 0.05 ms apart, and returns the pauses they caused. */
function feed(n: number, ownMs: number, waitMs: number, stole: boolean, excused = false): number {
  const p0 = threadStats.pauses;
  for (let i = 0; i < n; i++) {
    now += ownMs + waitMs;
    congestion(ownMs, waitMs, stole, excused);
    now += 0.05;
  }
  return threadStats.pauses - p0;
}

describe('congestion(): which dispatch sequences pause the pool', () => {
  beforeEach(() => {
    Object.assign(busy, saved);
    resetCongestion();
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    Object.assign(busy, saved);
    resetCongestion();
  });

  /** A busy machine as the steps meet it: a clean call and a strike (a 2 ms piece stolen), `n` times; returns the pauses. */
  const busyCalls = (n: number): number => {
    let p = 0;
    for (let i = 0; i < n; i++) p += feed(1, 0.5, 0, false) + feed(1, 2, 0, true);
    return p;
  };

  it('does not judge the first `grace` dispatches of a pool', () => {
    expect(feed(busy.grace, 1, 10, true)).toBe(0);
    expect(busyCalls(busy.strikes)).toBe(1);
  });

  it('pauses once `strikes` of the last `window` judged dispatches, in `runs` runs, were long waits or steals (a busy machine)', () => {
    feed(busy.grace, 0.1, 0, false);
    expect(busyCalls(busy.strikes - 1)).toBe(0); // steals after own pieces over claimMs, each a run of its own
    expect(feed(1, 0.1, 2, false)).toBe(1); // a wait over ratio × own and minWaitMs: strikes of the last window
    expect(busyCalls(busy.strikes - 1)).toBe(0); // a new count after the pause
    // Clean dispatches push strikes out of the window.
    expect(feed(busy.window, 0.5, 0, false) + busyCalls(1)).toBe(0);
  });

  it('does not pause for two hitches close together (two runs), but for a third run in the window', () => {
    feed(busy.grace, 0.1, 0, false);
    // The GPT step on the idle VM: a hitch strikes the 0.6 ms calls in flight, 5 in a row within 3 ms.
    expect(feed(5, 0.6, 0, true) + feed(2, 0.6, 0, false) + feed(3, 0.6, 0, true)).toBe(0);
    expect(feed(1, 0.6, 0, false) + feed(1, 0.6, 0, true)).toBe(1);
  });

  it('pauses for `inRow` strikes in a row spanning strikeMs (a worker descheduled for a slice), not for fewer', () => {
    feed(busy.grace, 0.1, 0, false);
    expect(feed(busy.inRow - 1, 2, 0, true) + feed(1, 0.5, 0, false)).toBe(0);
    expect(feed(busy.inRow, 2, 0, true)).toBe(1);
    // Strikes in a row that span less than strikeMs (a hitch of 0.3 ms calls) do not.
    now += busy.pauseMs;
    expect(feed(busy.window, 0.5, 0, false) + feed(busy.inRow, 0.3, 0, true)).toBe(0);
  });

  it('window ≤ strikes: that many strikes in a row (a clean dispatch starts the count again)', () => {
    Object.assign(busy, { strikes: 3, window: 1 });
    feed(busy.grace, 0.1, 0, false);
    expect(feed(2, 2, 0, true) + feed(1, 0.5, 0, false) + feed(2, 2, 0, true)).toBe(0);
    expect(feed(1, 2, 0, true)).toBe(1);
  });

  it('does not pause for the hitches of an idle machine: a few strikes in a row, far apart', () => {
    feed(busy.grace, 0.1, 0, false);
    // Runs of 1–3 struck calls of long pieces (the MLP step's 0.8 ms phases, stolen: 1.6 ms each,
    // 4.8 ms for three) with dozens of clean calls between them, as measured on the idle VM.
    for (let i = 0; i < 100; i++) expect(feed(1 + (i % 3), 1.6, 0, true) + feed(30, 0.8, 0, false)).toBe(0);
  });

  it('does not pause for strikes that span less than strikeMs (a hitch of the second core)', () => {
    feed(busy.grace, 0.1, 0, false);
    // A busy machine's pattern in 0.4 ms pieces: a window's six strikes span 3.4 ms.
    const short = () => feed(1, 0.4, 0, true) + feed(1, 0.1, 0, false);
    let p = 0;
    for (let i = 0; i < 20; i++) p += short();
    expect(p).toBe(0);
    // A worker gone for longer (a scheduler slice) pauses once the strikes span strikeMs.
    expect(feed(1, 2, 0, true)).toBe(1);
  });

  it('never pauses for steals from workers still waking (a quiet machine after an idle gap), however many', () => {
    feed(busy.grace, 0.1, 0, false);
    expect(feed(1000, 1.5, 0, true, true)).toBe(0);
    // Nor do they count as clean: strike, excused, strike, excused, … are strikes in a row: inRow of them pause.
    for (let i = 1; i < busy.inRow; i++) expect(feed(1, 2, 0, true) + feed(1, 1, 0, true, true)).toBe(0);
    expect(feed(1, 2, 0, true)).toBe(1);
  });

  it('still judges the wait of an excused dispatch (a woken worker that claimed its piece and was descheduled)', () => {
    feed(busy.grace, 0.1, 0, false);
    expect(feed(busy.inRow, 0.1, 5, true, true)).toBe(1);
  });

  it('pauses for firstPauseMs, doubling while each pause follows the last within its length, up to pauseMs', () => {
    feed(busy.grace, 0.1, 0, false);
    /** Strikes the pool into a pause and returns how long it lasts (to 0.1 ms). */
    const pauseLength = (): number => {
      expect(busyCalls(busy.strikes)).toBe(1);
      const start = now;
      while (paused()) now += 0.1;
      return Math.round(now - start);
    };
    const lengths: number[] = [];
    for (let i = 0; i < 6; i++) {
      lengths.push(pauseLength());
      now += 50; // busy again soon after the pause
    }
    expect(lengths).toEqual([100, 200, 400, 800, 1000, 1000]);
    now += busy.pauseMs; // a long clean stretch: the next pause is short again
    expect(pauseLength()).toBe(busy.firstPauseMs);
    now += busy.firstPauseMs + 1; // hitches further apart than the pause stay short
    expect(pauseLength()).toBe(busy.firstPauseMs);
  });

  it('pauseMs = 0 turns the rule off', () => {
    busy.pauseMs = 0;
    expect(feed(busy.grace + 100, 1, 10, true)).toBe(0);
  });
});

describe('waking(): which steals are excused', () => {
  beforeEach(() => {
    Object.assign(busy, saved);
    resetCongestion();
  });
  afterAll(() => {
    Object.assign(busy, saved);
    resetCongestion();
  });

  it('excuses a worker asleep by choice for wakeMs from the first job posted into that sleep', () => {
    const nap = 2 << 1; // its second sleep, not calm
    expect(waking(0, nap, 100)).toBe(true);
    expect(waking(0, nap, 100 + busy.wakeMs / 2)).toBe(true);
    expect(waking(0, nap, 100 + busy.wakeMs + 0.01)).toBe(false); // still asleep: starved, judged again
    expect(waking(0, 3 << 1, 100 + busy.wakeMs + 0.02)).toBe(true); // a new sleep, a new allowance
    expect(waking(1, nap, 200)).toBe(true); // per worker
  });

  it('does not excuse a polling worker, a calm one (odd NAP), or any when wakeMs = 0', () => {
    expect(waking(0, 0, 100)).toBe(false);
    expect(waking(0, (5 << 1) | 1, 100)).toBe(false);
    busy.wakeMs = 0;
    expect(waking(0, 6 << 1, 100)).toBe(false);
  });

  it('forgets the sleeps it saw when a new pool starts', () => {
    expect(waking(0, 4, 100)).toBe(true);
    expect(waking(0, 4, 100 + busy.wakeMs * 2)).toBe(false);
    resetCongestion();
    expect(waking(0, 4, 100 + busy.wakeMs * 2)).toBe(true);
  });
});

describe('the pool: NAP and HOLD words', () => {
  const savedThresholds = { ...thresholds };
  beforeAll(async () => {
    await A.init({ threads: 2 });
    thresholds.elementwise = 0;
  }, 60_000);
  afterAll(async () => {
    Object.assign(thresholds, savedThresholds);
    pauseFor(0);
    await A.init({ threads: 1 });
  });
  const slot = () => currentPool()!.slots[0];
  /** Blocks this thread until `ok()` or 5 s. */
  const until = (ok: () => boolean) => {
    const t = performance.now();
    while (!ok() && performance.now() - t < 5000) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    return ok();
  };
  const split = () => {
    const x = A.tensor(Float32Array.from({ length: 4096 }, (_, i) => i));
    A.add(x, x).dispose();
    x.dispose();
  };

  it('an idle worker sleeps with an even NAP number, a new one for each sleep', () => {
    expect(threadCount()).toBe(2);
    split();
    expect(until(() => Atomics.load(slot(), SLOT.NAP) !== 0)).toBe(true);
    const first = Atomics.load(slot(), SLOT.NAP);
    expect(first & 1).toBe(0);
    split(); // wakes it (or the caller runs its piece; either way it wakes)
    expect(until(() => ![0, first].includes(Atomics.load(slot(), SLOT.NAP)))).toBe(true);
    expect(Atomics.load(slot(), SLOT.NAP) & 1).toBe(0);
  });

  it('a compiled program that starts paused sets HOLD at its first dispatch after the pause ends, and clears it at its end', () => {
    pauseFor(1e9);
    holdPool(true);
    expect(Atomics.load(slot(), SLOT.HOLD)).toBe(0); // paused: the workers are left asleep
    split();
    expect(Atomics.load(slot(), SLOT.HOLD)).toBe(0); // ran on the caller
    pauseFor(0);
    split();
    expect(Atomics.load(slot(), SLOT.HOLD)).toBe(1);
    holdPool(false);
    expect(Atomics.load(slot(), SLOT.HOLD)).toBe(0);
    split();
    expect(Atomics.load(slot(), SLOT.HOLD)).toBe(0); // outside a program, dispatches leave it clear
  });
});
