// Issue 8: the kernels split across the thread pool beyond GEMM and elementwise maps — conv2d
// and both its gradients (over images, or channels for a small batch; the filter gradient over
// its columns), pools over planes, reductions over leading and middle axes (over columns
// when there are few rows), softmax, cross-entropy and layerNorm rows — give the same bytes with
// 1, 2 and 3 threads, cut equally or by uneven shares (threads of unequal speed). One engine on a shared memory, its pool resized by init({ threads })
// between runs, size thresholds dropped so that every launch that can be split is, odd sizes
// included. Each case hashes its outputs and the gradients of Σ y·r (r random, so every
// gradient element counts) and checks the split path really ran (pool dispatches > 0).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { imagePieces, thresholds } from '../src/wasm/split.js';
import { conv2dInputGrad, conv2dFilterGrad, type ConvParams } from '../src/ops/conv-api.js';
import { busy, pauseFor, setCuts, threadCount, threadStats } from '../src/testing.js';

type DT = 'float32' | 'float64';
const saved = { ...thresholds },
  pauseMs = busy.pauseMs;

beforeAll(async () => {
  await A.init({ threads: 3 });
  thresholds.gemm = 0;
  thresholds.elementwise = 0;
  busy.pauseMs = 0; // every split really dispatched, whatever the machine's load
}, 60_000);
afterAll(async () => {
  Object.assign(thresholds, saved);
  busy.pauseMs = pauseMs;
  await A.init({ threads: 1 });
});

/** sha256 of the tensors' bytes. */
function digest(ts: Tensor[]): string {
  const h = createHash('sha256');
  for (const t of ts) h.update(t.toArray());
  return h.digest('hex');
}

/** f's outputs and the gradients of Σ_k Σ y_k·r_k with respect to every input (fresh leaves each call). */
function withGrads(make: () => Tensor[], f: (...xs: Tensor[]) => Tensor[]): Tensor[] {
  const xs = make();
  for (const x of xs) x.requiresGrad = true;
  const ys = f(...xs);
  const loss = ys.map((y, k) => A.sum(A.mul(y, A.randn(y.shape, { seed: 90 + k, dtype: y.dtype })))).reduce((a, b) => A.add(a, b));
  loss.backward();
  return [...ys, ...xs.map((x) => x.grad!)];
}

/** Digest of run() and the pool dispatches it made, with t threads (cut by `cuts`, units per thread, when given). */
async function at(t: number, run: () => Tensor[], cuts: number[] | null = null): Promise<{ digest: string; dispatches: number }> {
  await A.init({ threads: t });
  expect(threadCount()).toBe(t);
  setCuts(cuts);
  const d0 = threadStats.dispatches;
  try {
    const d = A.tidy(() => digest(run()));
    return { digest: d, dispatches: threadStats.dispatches - d0 };
  } finally {
    setCuts(null);
  }
}

/** run() gives one digest for 1, 2 and 3 threads, equal and uneven cuts, and the pool ran pieces of it. */
async function expectSameBytes(run: () => Tensor[]): Promise<void> {
  const one = await at(1, run);
  expect(one.dispatches).toBe(0);
  for (const [t, cuts] of [
    [2, null],
    [3, null],
    [2, [25, 7]],
    [3, [4, 20, 8]],
  ] as const) {
    const r = await at(t, run, cuts === null ? null : [...cuts]);
    expect(r.digest, `${t} threads, cuts ${cuts}`).toBe(one.digest);
    expect(r.dispatches).toBeGreaterThan(0);
  }
}

const rn = (shape: number[], seed: number, dtype: DT = 'float32') => A.randn(shape, { seed, dtype });

/** With 2 threads, the pool dispatches made by each op alone on inputs made beforehand (so only its own launches count). */
async function splitsOf(make: () => Tensor[], ...ops: ((...xs: Tensor[]) => Tensor)[]): Promise<number[]> {
  await A.init({ threads: 2 });
  return A.tidy(() => {
    const xs = make();
    return ops.map((op) => {
      const d0 = threadStats.dispatches;
      A.noGrad(() => op(...xs));
      return threadStats.dispatches - d0;
    });
  });
}
const everyOneSplit = (counts: number[]) => expect(counts.map((c) => c > 0)).toEqual(counts.map(() => true));

const pair = (v: number | [number, number]): [number, number] => (typeof v === 'number' ? [v, v] : v);
/** conv2d's output shape. */
const out = (x: number[], w: number[], { stride: [sh, sw], padding: [ph, pw] }: ConvParams): number[] => [
  x[0],
  w[0],
  Math.floor((x[2] + 2 * ph - w[2]) / sh) + 1,
  Math.floor((x[3] + 2 * pw - w[3]) / sw) + 1,
];

interface ConvCase {
  x: number[];
  w: number[];
  stride: number | [number, number];
  padding: number | [number, number];
  dtype: DT;
  why: string;
}
const convCases: ConvCase[] = [
  { x: [4, 3, 9, 11], w: [5, 3, 3, 3], stride: 1, padding: 1, dtype: 'float32', why: 'cut over images; 5 filters: uneven channel pieces' },
  { x: [1, 5, 12, 12], w: [7, 5, 3, 3], stride: 2, padding: 1, dtype: 'float32', why: 'batch 1: cut over channels' },
  { x: [2, 3, 8, 8], w: [6, 3, 1, 1], stride: 1, padding: 0, dtype: 'float32', why: '1×1 (no im2col); 2 images on 3 threads' },
  {
    x: [3, 2, 10, 7],
    w: [9, 2, 2, 3],
    stride: [2, 1],
    padding: [0, 2],
    dtype: 'float64',
    why: 'f64, odd kernel, stride and padding per axis',
  },
  { x: [5, 1, 28, 28], w: [8, 1, 3, 3], stride: 2, padding: 1, dtype: 'float32', why: 'a first CNN layer' },
  { x: [1, 6, 10, 13], w: [10, 6, 5, 5], stride: 1, padding: 2, dtype: 'float32', why: 'direct convolution, batch 1: cut over channels' },
];

describe('threads: conv2d and its gradients', () => {
  it.each(convCases)(
    '$why: x $x, w $w',
    async ({ x, w, stride, padding, dtype }) => {
      const inputs = () => [rn(x, 1, dtype), rn(w, 2, dtype), rn([w[0]], 3, dtype)];
      const p = { stride: pair(stride), padding: pair(padding) },
        y = out(x, w, p);
      // Each of the three primitives, alone, is one kernel launch: each must have been split.
      everyOneSplit(
        await splitsOf(
          () => [rn(x, 1, dtype), rn(w, 2, dtype), rn(y, 3, dtype)],
          (a, b) => A.conv2d(a, b, p),
          (_a, b, g) => conv2dInputGrad(g, b, p, [x[2], x[3]]),
          (a, _b, g) => conv2dFilterGrad(a, g, p, [w[2], w[3]]),
        ),
      );
      await expectSameBytes(() => withGrads(inputs, (a, b, c) => [A.conv2d(a, b, c, { stride, padding })]));
    },
    60_000,
  );

  it("forward-over-reverse through a conv (its gradient kernels in each other's roles) is thread-count independent", async () => {
    await expectSameBytes(() => {
      const x = rn([3, 4, 7, 7], 4),
        v = rn([6, 4, 3, 3], 5),
        w = rn([6, 4, 3, 3], 6);
      const f = (ww: Tensor) => A.sum(A.square(A.conv2d(x, ww, { padding: 1 })));
      return [A.hvp(f, w, v)];
    });
  }, 60_000);
});

describe('threads: pools', () => {
  it.each([
    { shape: [3, 5, 9, 10], k: 2, s: 2, dtype: 'float32' as DT },
    { shape: [2, 7, 11, 9], k: 3, s: 2, dtype: 'float64' as DT }, // overlapping windows
    { shape: [1, 3, 6, 17], k: [2, 3], s: [1, 2], dtype: 'float32' as DT },
  ])(
    'max and average pooling of $shape (kernel $k, stride $s, $dtype), with gradients',
    async ({ shape, k, s, dtype }) => {
      everyOneSplit(
        await splitsOf(
          () => [rn(shape, 7, dtype)],
          (x) => A.maxPool2d(x, k, s),
          (x) => A.avgPool2d(x, k, s),
        ),
      );
      await expectSameBytes(() =>
        withGrads(
          () => [rn(shape, 7, dtype)],
          (x) => [A.maxPool2d(x, k, s), A.avgPool2d(x, k, s)],
        ),
      );
    },
    60_000,
  );
});

describe('threads: reductions', () => {
  it.each([
    { shape: [128, 256], axis: [0], dtype: 'float32' as DT, why: 'a bias gradient: one row, cut over columns' },
    { shape: [3, 64, 100], axis: [1], dtype: 'float32' as DT, why: 'middle axis, 3 rows of 100 columns' },
    { shape: [37, 70], axis: [0], dtype: 'float64' as DT, why: 'f64, columns not a multiple of 16' },
    { shape: [4, 6, 40], axis: [0, 2], dtype: 'float32' as DT, why: 'two runs of axes' },
    { shape: [5, 2, 3, 48], axis: [0, 1, 2], dtype: 'float64' as DT, why: 'leading axes merged' },
  ])(
    'sum and max over $axis of $shape ($why)',
    async ({ shape, axis, dtype }) => {
      everyOneSplit(
        await splitsOf(
          () => [rn(shape, 8, dtype)],
          (x) => A.sum(x, axis),
          (x) => A.max(x, axis),
        ),
      );
      await expectSameBytes(() =>
        withGrads(
          () => [rn(shape, 8, dtype)],
          (x) => [A.sum(x, axis), A.max(x, axis)],
        ),
      );
    },
    60_000,
  );
});

describe('threads: fused row kernels', () => {
  it.each(['float32', 'float64'] as DT[])(
    'softmax, crossEntropy and layerNorm with gradients (%s)',
    async (dtype) => {
      const labels = Array.from({ length: 67 }, (_, i) => (i * 7) % 10);
      everyOneSplit(
        await splitsOf(
          () => [rn([33, 50], 9, dtype), rn([67, 10], 10, dtype), rn([45, 77], 11, dtype)],
          (s) => A.softmax(s),
          (_s, l) => A.crossEntropy(l, labels, { reduction: 'none' }),
          (_s, _l, n) => A.layerNorm(n),
        ),
      );
      await expectSameBytes(() =>
        withGrads(
          () => [rn([33, 50], 9, dtype), rn([67, 10], 10, dtype), rn([45, 77], 11, dtype), rn([77], 12, dtype), rn([77], 13, dtype)],
          (s, l, n, gamma, beta) => [A.softmax(s), A.crossEntropy(l, labels, { reduction: 'none' }), A.layerNorm(n, gamma, beta)],
        ),
      );
    },
    60_000,
  );
});

describe('threads: a small CNN', () => {
  /** Weights after 3 SGD steps of conv → relu → maxPool → conv/2 → layerNorm → linear → crossEntropy. */
  function train(dtype: DT): Tensor[] {
    const x = rn([6, 1, 14, 14], 20, dtype),
      labels = Array.from({ length: 6 }, (_, i) => (i * 3) % 10);
    const init = (shape: number[], seed: number, fanIn: number) => A.keep(A.mul(rn(shape, seed, dtype), 1 / Math.sqrt(fanIn)));
    let ps = [
      init([6, 1, 3, 3], 21, 9),
      A.zeros([6], { dtype }),
      init([32, 6, 3, 3], 22, 54),
      A.zeros([32], { dtype }),
      init([32 * 16, 10], 23, 512),
    ];
    for (let step = 0; step < 3; step++) {
      ps = A.tidy(() => {
        for (const p of ps) p.requiresGrad = true;
        let h = A.maxPool2d(A.relu(A.conv2d(x, ps[0], ps[1], { padding: 1 })), 2); // [6, 6, 7, 7]
        h = A.conv2d(h, ps[2], ps[3], { stride: 2, padding: 1 }); // [6, 32, 4, 4]
        h = A.layerNorm(A.reshape(h, [6, 32 * 16]));
        A.crossEntropy(A.matmul(h, ps[4]), labels).backward();
        const next = ps.map((p) => A.keep(A.sub(p, A.mul(p.grad!, 0.1)).detach()));
        for (const p of ps) p.dispose();
        return next;
      });
    }
    return ps;
  }

  it.each(['float32', 'float64'] as DT[])(
    'trains to the same weight bytes with 1, 2 and 3 threads (%s)',
    async (dtype) => {
      await expectSameBytes(() => train(dtype));
    },
    60_000,
  );
});

describe('threads: a compiled CNN step', () => {
  /** Weights after 3 Adam steps of an nn.Sequential CNN, eagerly or through compile() (which replays the pooled launches' cuts). */
  function run(compiled: boolean, pauses = false): Tensor[] {
    const { nn } = A;
    const model = new nn.Sequential(
      new nn.Conv2d(2, 6, 3, { padding: 1, seed: 1 }),
      new nn.ReLU(),
      new nn.MaxPool2d(2),
      new nn.Conv2d(6, 32, 3, { stride: 2, padding: 1, seed: 2 }),
      new nn.AvgPool2d(2),
      new nn.Flatten(),
      new nn.LayerNorm(32 * 4),
      new nn.Linear(32 * 4, 10, { seed: 3 }),
    );
    const opt = new A.optim.Adam(model.parameters(), { lr: 0.01 });
    let midway = false;
    const step = (x: Tensor, y: Int32Array) => {
      const loss = A.crossEntropy(model.forward(x), y);
      if (midway) pauseFor(1e9);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss;
    };
    const f = compiled ? A.compile(step) : (x: Tensor, y: Int32Array) => A.tidy(() => step(x, y));
    const stats = (f as Partial<A.Compiled<[Tensor, Int32Array], Tensor>>).stats;
    for (let i = 0; i < 3 + (pauses ? 3 : 0); i++) {
      const x = rn([5, 2, 16, 16], 30 + i),
        y = Int32Array.from({ length: 5 }, (_, j) => (i + 3 * j) % 10);
      // A busy-machine pause starting and ending between calls, and once in the middle of a traced call (i = 2).
      if (pauses) pauseFor(i % 2 ? 1e9 : 0);
      midway = pauses && i === 2;
      f(x, y).dispose();
      x.dispose();
    }
    if (pauses && stats) expect(stats).toMatchObject({ eager: 1, traced: 2, replayed: 3, signatures: 1 }); // one signature, replayed paused or not
    return model.parameters();
  }

  it('replays to the same weight bytes as eager mode on one thread', async () => {
    const eager = await at(1, () => run(false));
    const warn = vi.spyOn(console, 'warn');
    for (const t of [2, 3]) {
      const r = await at(t, () => run(true));
      expect(r.digest, `${t} threads`).toBe(eager.digest);
      expect(r.dispatches).toBeGreaterThan(0);
    }
    expect(warn).not.toHaveBeenCalled(); // compiled, not run eagerly after a warning
    warn.mockRestore();
  }, 60_000);

  it('traces and replays one schedule while the pool pauses and resumes, even mid-trace (no eager fallback)', async () => {
    const eager = await at(1, () => run(false, true));
    const warn = vi.spyOn(console, 'warn');
    const r = await at(2, () => run(true, true));
    pauseFor(0);
    expect(r.digest).toBe(eager.digest);
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
  }, 60_000);
});

describe('threads: how a conv is cut', () => {
  it('cuts images while every thread gets one, else channels in multiples of align; never images when told not to', async () => {
    await A.init({ threads: 3 });
    expect(imagePieces(7, 5, 1, 1e9, true)).toEqual([
      [0, 2, 0, 5],
      [2, 5, 0, 5],
      [5, 7, 0, 5],
    ]);
    expect(imagePieces(2, 9, 4, 1e9, true)).toEqual([
      [0, 2, 0, 4],
      [0, 2, 4, 8],
      [0, 2, 8, 9],
    ]);
    expect(imagePieces(64, 6, 4, 1e9, false)).toEqual([
      [0, 64, 0, 4],
      [0, 64, 4, 6],
    ]);
    thresholds.gemm = 1 << 17;
    expect(imagePieces(64, 6, 4, 1000, true)).toEqual([[0, 64, 0, 6]]); // small: one piece
    thresholds.gemm = 0;
    await A.init({ threads: 1 });
    expect(imagePieces(64, 6, 4, 1e9, true)).toEqual([[0, 64, 0, 6]]);
  });
});
