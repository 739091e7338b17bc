// The memory plan of a scheduled program (src/compile/plan.ts): two blocks may share bytes only
// when every use of those bytes by the earlier one is over before the later one's begin in the
// replay (an earlier step, or one thread's list of a phase, in order). Synthetic schedules with
// known uses, and a GPT block's forward chain planned by src/compile/parallel.ts on 2 threads:
// the plan shares bytes as the one-thread plan does, where keeping every buffer freed in the
// run alive to its end (the rule it replaces) did not.
import { describe, expect, it } from 'vitest';
import { assign, blockKey, checkPlan, mayShare, ScheduleOrder, scheduleOrder } from '../src/compile/plan.js';
import { parallelize, type Extent, type PlannedLaunch, type PhaseStep } from '../src/compile/parallel.js';

const noop = () => 0;
const block = (id: number, bytes: number, alloc: number, free: number) => ({ id, ptr: 0, bytes, alloc, free });

describe('compile: the memory plan of a scheduled program', () => {
  it('orders blocks by their uses: earlier steps, or one list of a phase in order, for the bytes they share', () => {
    const o = new ScheduleOrder();
    o.use(1, 0); // a whole step
    o.use(2, 1); // the next step
    expect(o.before(1, 2, 0)).toBe(true);
    expect(o.before(2, 1, 0)).toBe(false);
    // Step 2, a phase: block 3's halves used by lists 0 and 1 at position 0, block 4's at position 1.
    o.use(3, 2, 0, 0, 0, 512);
    o.use(3, 2, 1, 0, 512, 1024);
    o.use(4, 2, 0, 1, 0, 512);
    o.use(4, 2, 1, 1, 512, 1024);
    expect(o.before(3, 4, 0)).toBe(true); // each half after the same thread's use of it
    expect(o.before(3, 4, 256)).toBe(false); // block 4's first half would meet block 3's second, on the other thread
    expect(o.before(3, 4, 1024)).toBe(true); // no bytes in common
    expect(o.before(4, 3, 0)).toBe(false); // block 4's uses come after block 3's
    o.use(5, 2); // a use of the whole step (a launch replayed alone): after nothing in it
    expect(o.before(3, 5, 0)).toBe(false);
    expect(o.before(5, 2, 0)).toBe(false);
    expect(o.before(1, 5, 0)).toBe(true);
    expect(o.before(9, 1, 0)).toBe(true); // never used: in nobody's way
  });

  it('needs the blocks apart in the trace as well, the earlier one first in the replay', () => {
    const o = new ScheduleOrder();
    o.use(1, 0);
    o.use(2, 1);
    expect(mayShare(block(1, 64, 0, 2), block(2, 64, 2, 4), o, 0)).toBe(true);
    expect(mayShare(block(1, 64, 0, 3), block(2, 64, 2, 4), o, 0)).toBe(false); // alive together in the trace
    expect(mayShare(block(2, 64, 0, 2), block(1, 64, 2, 4), o, 0)).toBe(false); // the trace's order against the replay's
    expect(mayShare(block(1, 64, 0, 3), block(2, 64, 2, 4), null, 0)).toBe(false);
    expect(mayShare(block(1, 64, 0, 2), block(2, 64, 2, 4), null, 0)).toBe(true); // one thread: the trace alone
  });

  it('plans one thread first fit by size over trace lifetimes', () => {
    const blocks = [block(0, 1000, 0, 4), block(1, 640, 1, 3), block(2, 500, 4, 6), block(3, 64, 5, 7)];
    const { offsets, total } = assign(blocks, null);
    expect([...offsets.entries()].sort((a, b) => a[0] - b[0])).toEqual([
      [0, 0],
      [1, 1024],
      [2, 0],
      [3, 512],
    ]);
    expect(total).toBe(1664);
  });

  // A GPT block's forward chain cut by rows of the batch (128 rows of 64): layerNorm x → h, the
  // GEMM h·W1 → q, GELU q → g, the GEMM g·W2 → y. h, q and g are plan blocks freed along the way.
  const [R, C] = [128, 64],
    BYTES = R * C * 4,
    half = BYTES / 2;
  const mem = (lo: number): Extent => ({ key: '', lo, hi: lo + BYTES, at: lo });
  const plan = (id: number, at = 0): Extent => ({ key: blockKey(id), lo: 0, hi: BYTES, at });
  const io = (x: Extent, j: number): Extent => ({ ...x, at: x.at + j * half });
  const launch = (name: string, argv: number[][], touches: (Extent | null)[][]): PlannedLaunch => ({
    w: false,
    name,
    f: noop,
    pooled: true,
    argv,
    dyn: 0,
    compute: null,
    touches,
  });
  const rows = (f: (j: number) => [number[], (Extent | null)[]]) => {
    const p = [0, 1].map(f);
    return [p.map((x) => x[0]), p.map((x) => x[1])] as const;
  };
  const [x, W1, W2, y, dW] = [1, 2, 3, 4, 5].map((i) => mem(i << 20));
  const [h, q, g] = [1, 2, 3].map((id) => plan(id));
  const ln = launch(
    'layer_norm_f32',
    ...rows((j) => [
      [0, 0, R / 2, C, 1e-5],
      [io(x, j), io(h, j), null, null, null],
    ]),
  );
  const gemm = (a: Extent, b: Extent, c: Extent) =>
    launch(
      'gemm_f32',
      ...rows((j) => [
        [0, 0, 0, R / 2, C, C, C, C, C, 0, 0, 0],
        [io(a, j), b, io(c, j), ...Array<null>(9).fill(null)],
      ]),
    );
  const gelu = launch(
    'gelu_erf_f32',
    ...rows((j) => [
      [0, 0, (R / 2) * C, 0, 0],
      [io(q, j), io(g, j), null, null, null],
    ]),
  );
  // dW = hᵀ·g reads every row of h and g: a step of its own after the chain.
  const grad = launch('gemm_f32', [[0, 0, 0, C, C, R, C, C, C, 1, 0, 0]], [[h, g, dW, ...Array<null>(9).fill(null)]]);
  // Lifetimes in the trace (launch clocks 1–4, then 5): h freed after the first GEMM, q after GELU, g after the second GEMM.
  const blocks = [block(1, BYTES, 1, 3), block(2, BYTES, 2, 4), block(3, BYTES, 3, 5)];

  it('lets a GPT block’s forward chain on 2 threads share bytes as on one thread', () => {
    const steps = parallelize([ln, gemm(h, W1, q), gelu, gemm(g, W2, y)], 2);
    expect(steps).toHaveLength(1); // one phase: each thread runs its rows' chain
    expect((steps[0] as PhaseStep).lists.map((l) => l.length)).toEqual([4, 4]);
    const order = scheduleOrder(steps, new Map());
    const serial = assign(blocks, null),
      scheduled = assign(blocks, order);
    expect(serial.total).toBe(2 * BYTES); // g takes h's bytes
    expect(scheduled.total).toBe(2 * BYTES); // so it does on 2 threads: each thread is done with its rows of h first
    expect(scheduled.offsets.get(3)).toBe(scheduled.offsets.get(1));
    expect(() => checkPlan(blocks, scheduled.offsets, order)).not.toThrow();
    // Keeping every block freed in the run alive to its end (the rule this replaces) took all three.
    const kept = blocks.map((b) => ({ ...b, free: 6 }));
    expect(assign(kept, null).total).toBe(3 * BYTES);
  });

  it('keeps a block whose bytes a later step still reads', () => {
    // With dW = hᵀ·g after the chain, h is read in a later step than g's first use: no sharing.
    const traced = [block(1, BYTES, 1, 6), block(2, BYTES, 2, 4), block(3, BYTES, 3, 6)];
    const steps = parallelize([ln, gemm(h, W1, q), gelu, gemm(g, W2, y), grad], 2);
    expect(steps).toHaveLength(2);
    const order = scheduleOrder(steps, new Map());
    expect(order.before(1, 3, 0)).toBe(false);
    expect(mayShare(traced[0], traced[2], order, 0)).toBe(false);
    const { offsets, total } = assign(traced, order);
    expect(total).toBe(3 * BYTES);
    expect(() => checkPlan(traced, offsets, order)).not.toThrow();
    // A plan that put g on h's bytes is refused.
    expect(() =>
      checkPlan(
        blocks,
        new Map([
          [1, 0],
          [2, BYTES],
          [3, 0],
        ]),
        order,
      ),
    ).toThrow(/share bytes/);
  });
});
