// Uneven cuts for threads of unequal speed (src/wasm/balance.ts): the shares the controller
// proposes from measured times, when it applies them (window, step, gap, never while compile()
// traces), and how split.ts's ranges() cuts, equally or by them. The pool itself, bit-identity
// under uneven cuts and the controller against a slowed worker are in threads.test.ts and
// threads-kernels.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { balance, cutKey, cutUnits, proposeCuts, setCuts } from '../src/testing.js';
import { buildCost, cutShares, observeFork, resetBalance } from '../src/wasm/balance.js';
import { hooks, type Recorder } from '../src/wasm/hooks.js';
import { ranges } from '../src/wasm/split.js';

const saved = { ...balance };
beforeEach(() => {
  balance.enabled = true; // test/setup.ts turns it off for the other test files
});
afterEach(() => {
  Object.assign(balance, saved);
  resetBalance();
});

describe('balance: proposed shares', () => {
  it('gives each thread units in proportion to its speed (units over time), rounded to 16 units per thread', () => {
    expect(proposeCuts([16, 16], [1, 1])).toEqual([16, 16]);
    // The worker took twice as long for the same share: it gets a third (10.67 units).
    expect(proposeCuts([16, 16], [1, 2])).toEqual([21, 11]);
    // From uneven shares: 24 units in 3 ms against 8 in 1 ms are equal speeds.
    expect(proposeCuts([24, 8], [3, 1])).toEqual([16, 16]);
    expect(proposeCuts([16, 16, 16], [1, 1, 2])).toEqual([19, 19, 10]); // 48 units on three threads
  });

  it('keeps at least 4 units on every thread, however slow, and sums to 16 per thread', () => {
    expect(proposeCuts([16, 16], [1, 1000])).toEqual([28, 4]);
    expect(proposeCuts([16, 16], [1000, 1])).toEqual([4, 28]);
    for (const times of [
      [1, 2, 3],
      [5, 1, 1],
      [0, 1, 1],
      [1, 1, 1e9],
    ]) {
      const u = proposeCuts([16, 16, 16], times);
      expect(u.reduce((a, b) => a + b, 0)).toBe(48);
      expect(Math.min(...u)).toBeGreaterThanOrEqual(4);
    }
  });

  it('cuts among many threads as among two: 16 units each, at least 4', () => {
    const cur = cutUnits(12);
    expect(cur).toEqual(new Array(12).fill(16));
    const u = proposeCuts(cur, [1, ...new Array(11).fill(50)]);
    expect(u).toEqual([148, ...new Array(11).fill(4)]);
    setCuts([2, 1, 1]);
    expect(cutShares(3)).toEqual([0.5, 0.25, 0.25]); // shares are units over their sum
  });

  it('reads the current units back (equal ones for a pool the set cuts do not fit)', () => {
    expect(cutUnits(2)).toEqual([16, 16]);
    expect(cutUnits(3)).toEqual([16, 16, 16]);
    setCuts([20, 12]);
    expect(cutUnits(2)).toEqual([20, 12]);
    expect(cutUnits(3)).toEqual([16, 16, 16]);
    expect(cutKey()).toBe('20.12');
    setCuts([16, 16]);
    expect(cutKey()).toBe(''); // equal units are equal cuts: the signature of before
  });
});

describe('balance: when shares change', () => {
  /** One full window that is not judged: the first after a change of the cuts (a new pool's included). */
  const settle = () => observeFork([balance.windowMs, 3 * balance.windowMs]);

  it('judges windows of caller time, applies a move two windows in a row ask for, then waits `gapMs`', () => {
    Object.assign(balance, { windowMs: 10, step: 2, gapMs: 60_000 });
    settle();
    observeFork([6, 12]);
    observeFork([6, 12]);
    expect(cutKey()).toBe(''); // one window asked for 21 : 11
    observeFork([10, 19]); // 20.9 : 11.1, within a unit of the first
    expect(cutKey()).toBe('21.11');
    // Now the worker is far slower still, but the gap has not passed.
    for (let i = 0; i < 5; i++) observeFork([10, 100]);
    expect(cutKey()).toBe('21.11');
  });

  it('does not judge the first window after a change of the cuts', () => {
    Object.assign(balance, { windowMs: 10, gapMs: 0 });
    observeFork([10, 40]); // the first window of a new pool
    observeFork([10, 20]);
    expect(cutKey()).toBe('');
    observeFork([10, 20]);
    expect(cutKey()).toBe('21.11');
    // Right after the change the caller looks far slower (its first replays on a fresh plan): not judged.
    observeFork([10, 1]);
    observeFork([10, 11]); // 21 : 11 again: no move
    observeFork([10, 11]);
    expect(cutKey()).toBe('21.11');
  });

  it('ignores one window that a hitch of either thread made uneven', () => {
    Object.assign(balance, { windowMs: 10, gapMs: 0 });
    settle();
    for (const times of [
      [10, 30],
      [10, 10],
      [30, 10],
      [10, 10],
      [10, 30],
      [30, 10],
    ])
      observeFork(times);
    expect(cutKey()).toBe('');
  });

  it('leaves the shares alone for a move under `step` units', () => {
    Object.assign(balance, { windowMs: 10, step: 2, gapMs: 0 });
    settle();
    for (let i = 0; i < 3; i++) observeFork([10, 10.5]); // would be 16.4 : 15.6
    expect(cutKey()).toBe('');
    for (let i = 0; i < 2; i++) observeFork([10, 13]); // 18.1 : 13.9
    expect(cutKey()).toBe('18.14');
  });

  it('waits `costRatio` times what the last compiled signature took to set up between changes', () => {
    Object.assign(balance, { windowMs: 10, gapMs: 0, costRatio: 20 });
    buildCost(1000); // 20 s between changes
    settle();
    for (let i = 0; i < 2; i++) observeFork([10, 20]);
    expect(cutKey()).toBe('21.11');
    settle();
    for (let i = 0; i < 4; i++) observeFork([10, 40]);
    expect(cutKey()).toBe('21.11');
    buildCost(0);
    for (let i = 0; i < 2; i++) observeFork([10, 40]);
    expect(cutKey()).not.toBe('21.11');
  });

  it('undoes a move the next windows ask to reverse at once, back to equal cuts, and then waits twice the gap', () => {
    Object.assign(balance, { windowMs: 10, step: 2, gapMs: 60_000, costRatio: 0 });
    settle();
    for (let i = 0; i < 2; i++) observeFork([10, 20]); // the worker looks slower
    expect(cutKey()).toBe('21.11');
    // Under the new cuts the caller looks slower (the threads changed cores): back to equal
    // within the gap, not on to the other side.
    settle();
    for (let i = 0; i < 2; i++) observeFork([20, 5]);
    expect(cutKey()).toBe('');
    // The next move waits for twice the gap after the undo.
    let now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      balance.gapMs = 1000;
      settle();
      now += 1500;
      for (let i = 0; i < 2; i++) observeFork([10, 20]);
      expect(cutKey()).toBe('');
      now += 600;
      for (let i = 0; i < 2; i++) observeFork([10, 20]);
      expect(cutKey()).toBe('21.11');
      // A move further the same way is no reversal: it waits for the gap like any other.
      settle();
      for (let i = 0; i < 2; i++) observeFork([10, 14]); // asks for more of the same: 23.9
      expect(cutKey()).toBe('21.11');
      now += 2100;
      for (let i = 0; i < 2; i++) observeFork([10, 14]);
      expect(cutKey()).toBe('23.9');
    } finally {
      clock.mockRestore();
    }
  });

  it('measures nothing while compile() traces, or when switched off', () => {
    Object.assign(balance, { windowMs: 1, gapMs: 0 });
    settle();
    hooks.recorder = {} as Recorder;
    try {
      for (let i = 0; i < 3; i++) observeFork([1, 5]);
    } finally {
      hooks.recorder = null;
    }
    expect(cutKey()).toBe('');
    balance.enabled = false;
    for (let i = 0; i < 3; i++) observeFork([1, 5]);
    expect(cutKey()).toBe('');
    balance.enabled = true;
    for (let i = 0; i < 2; i++) observeFork([1, 5]);
    expect(cutKey()).toBe('27.5'); // 26.7 : 5.3
  });

  it('drops the window when the cuts are set from outside (its times were measured under other cuts)', () => {
    Object.assign(balance, { windowMs: 10, gapMs: 0 });
    settle();
    observeFork([10, 20]);
    setCuts([16, 16]);
    settle();
    observeFork([10, 20]);
    expect(cutKey()).toBe('');
  });
});

describe('balance: ranges() by shares', () => {
  it('cuts at the shares, rounded to multiples of align, and only a cut into as many pieces as threads', () => {
    setCuts([24, 8]);
    expect(cutShares(2)).toEqual([0.75, 0.25]);
    expect(cutShares(3)).toBeNull();
    expect(ranges(128, 2, 8)).toEqual([
      [0, 96],
      [96, 128],
    ]);
    expect(ranges(1000, 2, 16)).toEqual([
      [0, 752],
      [752, 1000],
    ]); // 63 units of 16: 47.25 → 47
    expect(ranges(1000, 3, 16)).toEqual(
      [
        [0, 336],
        [336, 672],
        [672, 1000],
      ], // three pieces: the two-thread shares do not apply
    );
    setCuts([4, 20, 8]);
    expect(ranges(64, 3, 1)).toEqual([
      [0, 8],
      [8, 48],
      [48, 64],
    ]);
  });

  it('covers [0, n) exactly, equal or by any shares, with pieces cut at multiples of `align` and empty ones dropped', () => {
    for (const u of [null, [28, 4], [4, 28], [4, 4, 24], [10, 12, 10]]) {
      setCuts(u);
      for (const [n, parts, align] of [
        [1000, 3, 16],
        [17, 2, 16],
        [16, 4, 16],
        [5, 8, 1],
        [67, 3, 8],
        [1, 2, 4],
        [0, 2, 4],
        [7, 2, 1],
        [100, 2, 8],
        [1001, 3, 16],
        [33, 3, 4],
      ]) {
        const rs = ranges(n, parts, align);
        expect(rs.length).toBeLessThanOrEqual(parts);
        let at = 0;
        for (const [lo, hi] of rs) {
          expect(lo).toBe(at);
          expect(hi).toBeGreaterThan(lo);
          if (hi !== n) expect(hi % align).toBe(0);
          at = hi;
        }
        expect(at, `${u} ${n} ${parts} ${align}`).toBe(n);
      }
    }
  });
});
