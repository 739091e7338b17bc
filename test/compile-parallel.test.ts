// compile()'s parallel schedule (src/compile/parallel.ts): which launches of a step may run side
// by side. Synthetic launches with known memory: the planner must put independent ones in one
// phase, keep every read-after-write, write-after-read and write-after-write pair in order, stop
// at steps it cannot reorder, and compute perCall values in trace order.
import { describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { parallelize, type Extent, type PlannedLaunch, type PhaseStep } from '../src/compile/parallel.js';

const noop = () => 0;
const at = (lo: number, bytes = 1024): Extent => ({ key: '', lo, hi: lo + bytes, at: lo });
const input = (k: number): Extent => ({ key: `in${k}`, lo: 0, hi: 1024, at: 0 });
/** gemm_f32 C[M, N] = A·B with A, B, C at the given extents, cut in `pieces` pieces. */
function gemm(label: string, a: Extent, b: Extent, c: Extent, pieces = 1): PlannedLaunch {
  const args = [0, 0, 0, 256, 256, 256, 0, 0, 0, 0, 0, 0];
  return {
    w: false,
    name: 'gemm_f32',
    f: noop,
    pooled: pieces > 1,
    argv: Array.from({ length: pieces }, (_, j) => Object.assign(args.slice(), { label: pieces > 1 ? `${label}${j}` : label })),
    dyn: 0,
    compute: null,
    touches: Array.from({ length: pieces }, () => [a, b, c, null, null, null, null, null, null, null, null, null]),
  };
}
/** sgd_f32 on parameter p with gradient g (n elements); `compute` as an optimizer's perCall. */
function sgd(label: string, p: Extent, g: Extent, compute: (() => number[]) | null = null): PlannedLaunch {
  return {
    w: false,
    name: 'sgd_f32',
    f: noop,
    pooled: false,
    argv: [Object.assign([0, 0, 0, 1 << 18, 0.1, 0, 0, 0, 0], { label })],
    dyn: compute === null ? 0 : 5,
    compute,
    touches: [[p, g, null, null, null, null, null, null, null]],
  };
}
const labels = (s: PhaseStep): string[][] => s.lists.map((l) => l.map((c) => (c.args as unknown as { label: string }).label));
function shape(steps: readonly unknown[]): unknown[] {
  return steps.map((s) => {
    if ('tag' in (s as object)) return (s as { tag: string }).tag;
    if ('phase' in (s as object)) return labels(s as PhaseStep);
    return ((s as PlannedLaunch).argv[0] as unknown as { label: string }).label;
  });
}

describe('compile: the parallel schedule', () => {
  const W = at(0),
    X = at(4096),
    G = at(8192),
    dW = at(12288),
    dX = at(16384);
  it('runs the two gradient GEMMs of a layer side by side, and the update after both', () => {
    // dX = G·Wᵀ and dW = Xᵀ·G read the same G and write different buffers; sgd writes W, which dX reads.
    const steps = parallelize([gemm('dX', G, W, dX, 2), gemm('dW', X, G, dW, 2), sgd('sgd', W, dW)], 2);
    expect(shape(steps)).toEqual([
      [
        ['dX0', 'dW0'],
        ['dX1', 'dW1'],
      ],
      'sgd',
    ]);
  });

  it('keeps a launch that reads another one’s output after it, and one that overwrites its input', () => {
    // Each pair conflicts: the second runs after the first, on the same thread (one list, in order).
    const chain = parallelize([gemm('h', X, W, dX), gemm('y', dX, W, G)], 2); // y reads h's output
    expect(shape(chain)).toEqual([[['h', 'y']]]);
    const war = parallelize([gemm('r', G, W, dX), sgd('w', G, X)], 2); // w writes G, which r reads
    expect(shape(war)).toEqual([[['r', 'w']]]);
    const overlapping = parallelize([sgd('a', at(0, 100), G), sgd('b', at(64, 100), X)], 2);
    expect(shape(overlapping)).toEqual([[['a', 'b']]]); // both write bytes 64–99
    const apart = parallelize([sgd('a', at(0, 64), G), sgd('b', at(64, 100), X)], 2);
    expect(shape(apart)).toEqual([[['a'], ['b']]]); // adjacent, not overlapping: side by side
    const inputs = parallelize([sgd('a', input(0), G), sgd('b', input(0), X), sgd('c', input(1), X)], 2);
    expect(shape(inputs)).toEqual([[['a', 'b'], ['c']]]); // the same input buffer by key, another input apart
  });

  /** gemm_f32 C = A·B (A [M, K], B [K, N], C [M, N], f32, row-major) cut into row pieces, as split.ts cuts it. */
  function rowGemm(label: string, a: number, b: number, c: number, M: number, N: number, K: number, pieces: number, ta = 0): PlannedLaunch {
    const buf = (lo: number, elems: number, at = lo): Extent => ({ key: '', lo, hi: lo + elems * 4, at });
    const rows = M / pieces;
    const argv = Array.from({ length: pieces }, (_, j) => {
      const a0 = ta ? a + j * rows * 4 : a + j * rows * K * 4;
      return Object.assign([a0, b, c + j * rows * N * 4, rows, N, K, ta ? M : K, N, N, ta, 0, 0], { label: `${label}${j}` });
    });
    const touches = argv.map((v) => [buf(a, M * K, v[0]), buf(b, K * N), buf(c, M * N, v[2]), ...Array<null>(9).fill(null)]);
    return { w: false, name: 'gemm_f32', f: noop, pooled: true, argv, dyn: 0, compute: null, touches };
  }

  it('chains row pieces of consecutive GEMMs on their threads without a barrier, and waits for a GEMM that reads all rows', () => {
    // h = x·W1 and y = h·W2 cut by rows of the batch: y's piece j reads only h's rows of piece j.
    const [x, W1, h, W2, y, dW] = [0, 1, 2, 3, 4, 5].map((i) => i << 20);
    const fwd = parallelize([rowGemm('h', x, W1, h, 128, 64, 64, 2), rowGemm('y', h, W2, y, 128, 64, 64, 2)], 2);
    expect(shape(fwd)).toEqual([
      [
        ['h0', 'y0'],
        ['h1', 'y1'],
      ],
    ]);
    // dW = hᵀ·y reads every row of h and y: a level of its own after both threads' chains.
    const withGrad = parallelize(
      [rowGemm('h', x, W1, h, 128, 64, 64, 2), rowGemm('y', h, W2, y, 128, 64, 64, 2), rowGemm('dW', h, y, dW, 64, 64, 128, 2, 1)],
      2,
    );
    expect(shape(withGrad)).toEqual([
      [
        ['h0', 'y0'],
        ['h1', 'y1'],
      ],
      'dW0', // the launch itself, replayed as traced (labelled by its first piece)
    ]);
  });

  it('moves a later independent update into an earlier phase, balancing the threads', () => {
    // sgd of W2 (its gradient ready before the layer below's GEMMs) joins their phase.
    const W2 = at(20480),
      dW2 = at(24576);
    const steps = parallelize([gemm('dX', G, W, dX, 2), gemm('dW', X, G, dW, 2), sgd('sgd1', W, dW), sgd('sgd2', W2, dW2)], 2);
    expect(shape(steps)).toEqual([
      [
        ['dX0', 'dW0', 'sgd2'],
        ['dX1', 'dW1'],
      ],
      'sgd1',
    ]);
  });

  it('stops at steps it cannot reorder and computes perCall values in trace order', () => {
    const order: string[] = [];
    const barrier = { w: true, tag: 'write' };
    const a = sgd('a', W, dW, () => (order.push('a'), [1, 0, 0, 0, 0]));
    const b = sgd('b', X, dX, () => (order.push('b'), [2, 0, 0, 0, 0]));
    const c = sgd('c', G, dX);
    const steps = parallelize<{ w: boolean }>([a, barrier, b, c], 2);
    expect(shape(steps.filter((s) => !('pre' in s) || (s as PhaseStep).lists.length > 0))).toEqual(['a', 'write', [['b'], ['c']]]);
    // A run's perCall values are computed by a step at its start, in trace order, and its launches no longer compute them.
    const pre = steps.filter((s): s is PhaseStep => 'phase' in s && s.lists.length === 0);
    expect(pre.map((s) => s.pre.map((m) => (m.argv[0] as unknown as { label: string }).label))).toEqual([['a'], ['b']]);
    expect(steps.filter((s): s is PlannedLaunch => 'compute' in s).every((s) => s.compute === null)).toBe(true);
  });

  it('cuts a dense layer backward into activation-gradient row pieces that chain behind the GEMM rows, and the bias sum after them', async () => {
    await A.init(); // the rewritten launches take their kernels from the engine
    // g = rows of a GEMM; bias_act_vjp(y, g, gz, db, M, N, rs, act = 2: tanh); then the next layer's gz·W by rows.
    const [x, W1, g, y, gz, db, W2, out] = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => i << 20);
    const M = 128,
      N = 64;
    const buf = (lo: number, elems: number): Extent => ({ key: '', lo, hi: lo + elems * 4, at: lo });
    const vjp = (act: number): PlannedLaunch => ({
      w: false,
      name: 'bias_act_vjp_f32',
      f: noop,
      pooled: false,
      argv: [[y, g, gz, db, M, N, N, act]],
      dyn: 0,
      compute: null,
      touches: [[buf(y, M * N), buf(g, M * N), buf(gz, M * N), buf(db, N), null, null, null, null]],
    });
    const names = (s: unknown) =>
      'phase' in (s as object) ? (s as PhaseStep).lists.map((l) => l.map((c) => c.name)) : (s as PlannedLaunch).name;
    const steps = parallelize([rowGemm('g', x, W1, g, M, N, 64, 2), vjp(2), rowGemm('o', gz, W2, out, M, N, N, 2)], 2);
    expect(steps.map(names)).toEqual([
      [
        ['gemm_f32', 'tanh_vjp_f32', 'gemm_f32'],
        ['gemm_f32', 'tanh_vjp_f32', 'gemm_f32'],
      ],
      'bias_act_vjp_f32',
    ]);
    const rows = (steps[0] as PhaseStep).lists.map((l) => l[1].args);
    expect(rows).toEqual([
      [y, g, gz, 64 * N],
      [y + 64 * N * 4, g + 64 * N * 4, gz + 64 * N * 4, 64 * N],
    ]);
    // The bias sum reads the stored gz with no activation (act 0), so it sums the same values in the same order.
    expect((steps[1] as PlannedLaunch).argv).toEqual([[gz, gz, gz, db, M, N, N, 0]]);
    // Without an activation (gz is g, not written) or on one thread, the launch stays as traced.
    expect(parallelize([vjp(0)], 2).map(names)).toEqual(['bias_act_vjp_f32']);
    expect(parallelize([vjp(2)], 1).map(names)).toEqual(['bias_act_vjp_f32']);
  });

  // h = x·W1 by rows, an add z = h + s traced whole (argv), o = z·W2 by rows: M = 128 rows of N = 64.
  const [x, W1, h, s, z, W2, o] = [0, 1, 2, 3, 4, 5, 6].map((i) => i << 20);
  const [M, N] = [128, 64];
  /** The per-thread lists of the one phase the chain is planned as for 2 threads (s has `sElems` elements). */
  function chainAdd(argv: number[], sElems: number): PhaseStep['lists'] {
    const buf = (lo: number, elems: number): Extent => ({ key: '', lo, hi: lo + elems * 4, at: lo });
    const add: PlannedLaunch = {
      w: false,
      name: 'add_f32',
      f: noop,
      pooled: false,
      argv: [argv],
      dyn: 0,
      compute: null,
      touches: [[buf(h, M * N), buf(s, sElems), buf(z, M * N), null, null, null, null, null, null]],
    };
    const steps = parallelize([rowGemm('h', x, W1, h, M, N, 64, 2), add, rowGemm('o', z, W2, o, M, N, N, 2)], 2);
    expect(steps).toHaveLength(1);
    const lists = (steps[0] as PhaseStep).lists;
    expect(lists.map((l) => l.map((c) => c.name))).toEqual([
      ['gemm_f32', 'add_f32', 'gemm_f32'],
      ['gemm_f32', 'add_f32', 'gemm_f32'],
    ]);
    return lists;
  }

  it('cuts a small whole elementwise launch between row pieces by rows, so the chain goes on without a barrier', () => {
    // s = b broadcast over rows (sbr = 0), traced whole (too small to split).
    const lists = chainAdd([h, s, z, M, N, N, 1, 0, 1], N);
    // Rows [0, 64) and [64, 128): a and y move by rows, the broadcast b stays.
    expect(lists.map((l) => l[1].args)).toEqual([
      [h, s, z, 64, N, N, 1, 0, 1],
      [h + 64 * N * 4, s, z + 64 * N * 4, 64, N, N, 1, 0, 1],
    ]);
  });

  it('cuts a same-shape add traced as one row (a residual add) by columns at multiples of 16, on the threads of the rows', () => {
    // s = r, the residual, as one row of M·N elements.
    const lists = chainAdd([h, s, z, 1, M * N, 0, 1, 0, 1], M * N);
    // Elements [0, 4096) and [4096, 8192): rows [0, 64) and [64, 128) of both operands and the result.
    const half = (M * N) / 2;
    expect(lists.map((l) => l[1].args)).toEqual([
      [h, s, z, 1, half, 0, 1, 0, 1],
      [h + half * 4, s + half * 4, z + half * 4, 1, half, 0, 1, 0, 1],
    ]);
  });

  it('leaves the steps alone on one thread', () => {
    const s = [gemm('dX', G, W, dX), gemm('dW', X, G, dW)];
    expect(parallelize(s, 1)).toEqual(s);
  });
});
