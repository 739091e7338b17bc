// Fusion of elementwise chains in compiled programs (src/compile/fuse.ts): chains of 2–6 ops
// (unary, binary same-shape, with scalars and broadcast scalar tensors, f32 and f64) replayed
// tile-major give the same bytes as eager mode and as the unfused program, at sizes around the
// 16-element tile rule and large enough to be split across the 2-thread pool; gradients too;
// intermediates that die inside a run shrink the plan; ones used later keep their buffer.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { findRuns, fusion } from '../src/compile/fuse.js';
import { schedule } from '../src/compile/parallel.js';
import { busy, threadStats } from '../src/testing.js';
import type { Launch, Ref, Trace } from '../src/compile/trace.js';

const { compile, tidy } = A;
type DT = 'float32' | 'float64';

// The pool's pause on a loaded machine (src/wasm/threads.ts) would change how a call is cut
// between the two traces of a signature, which then runs eagerly: off here, so every signature compiles.
const pauseMs = busy.pauseMs;
beforeAll(async () => {
  await A.init({ threads: 2 });
  busy.pauseMs = 0;
});
afterAll(() => void (busy.pauseMs = pauseMs));
const defaults = { ...fusion };
afterEach(() => Object.assign(fusion, defaults));

const bytesOf = (t: Tensor): string => Buffer.from(t.toArray().buffer).toString('base64');
const flat = (r: unknown): Tensor[] => (Array.isArray(r) ? r.flatMap(flat) : [r as Tensor]);

/** Chains by name: each takes three same-shape tensors and a shape-[] tensor. */
type Chain = (x: Tensor, y: Tensor, z: Tensor, s: Tensor) => Tensor | Tensor[];
const chains: Record<string, { ops: number; f: Chain }> = {
  'tanh(x + y)': { ops: 2, f: (x, y) => A.tanh(A.add(x, y)) },
  'tanh((x + y) · z)': { ops: 3, f: (x, y, z) => A.tanh(A.mul(A.add(x, y), z)) },
  'exp(-x²)·2 + 1 (number scalars)': {
    ops: 5,
    f: (x) =>
      A.exp(A.neg(A.square(x)))
        .mul(2)
        .add(1),
  },
  'sigmoid(3x − y)·z, relu, sqrt, /s': { ops: 7, f: (x, y, z, s) => A.sqrt(A.relu(A.mul(A.sigmoid(A.sub(A.mul(x, 3), y)), z))).div(s) },
  'clamp, leakyRelu, max, softplus': { ops: 4, f: (x, y) => A.softplus(A.maximum(A.leakyRelu(A.clamp(x, -0.5, 0.7), 0.1), y)) },
  's − x, then x·(…) (two inputs re-read)': {
    ops: 5,
    f: (x, y, _z, s) =>
      A.mul(x, A.abs(A.sub(s, x)))
        .add(y)
        .mul(x),
  },
};

const SIZES = [1, 15, 16, 17, 100003];

function inputs(n: number, dtype: DT, seed: number): Tensor[] {
  return [
    A.randn([n], { seed, dtype }),
    A.randn([n], { seed: seed + 1, dtype }),
    A.randn([n], { seed: seed + 2, dtype }),
    A.full([], 1.7, { dtype }),
  ];
}

/** Calls compiled `c` until it replays, then once more on `args`; the result's bytes. */
function replayed(c: (...a: Tensor[]) => unknown, warm: Tensor[], args: Tensor[]): string[] {
  for (let i = 0; i < 3; i++) for (const t of flat(c(...warm))) t.dispose();
  const out = flat(c(...args));
  const b = out.map(bytesOf);
  for (const t of out) t.dispose();
  return b;
}

describe('fused chains are bit-identical to eager and to the unfused program', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    for (const [name, { ops, f }] of Object.entries(chains)) {
      it(`${name}, ${dtype}`, () => {
        for (const n of SIZES) {
          // Small sizes: 16-element tiles, so 17 is two tiles (a full one and a 1-element tail).
          fusion.tileBytes = n < 1000 ? 64 : defaults.tileBytes;
          const warm = inputs(n, dtype, 1),
            args = inputs(n, dtype, 7);
          const eager = tidy(() => flat(f(args[0], args[1], args[2], args[3])).map(bytesOf));
          const fused = compile((...a: Tensor[]) => f(a[0], a[1], a[2], a[3]));
          const plain = compile((...a: Tensor[]) => f(a[0], a[1], a[2], a[3]), { fuse: false });
          const got = replayed(fused, warm, args),
            ref = replayed(plain, warm, args);
          expect(got, `n = ${n}`).toEqual(eager);
          expect(ref, `n = ${n}`).toEqual(eager);
          // Runs of one tile are left as they are: fusion starts at two tiles.
          expect(fused.stats.fused, `n = ${n}`).toBe(n > 16 ? ops : 0);
          expect(plain.stats.fused).toBe(0);
          fused.reset();
          plain.reset();
          for (const t of [...warm, ...args]) t.dispose();
        }
      });
    }
  }
});

describe('gradients through fused chains', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`grad of sum(tanh((x + w)·z)²) and of a 6-op chain, ${dtype}`, () => {
      for (const n of [17, 100003]) {
        fusion.tileBytes = n < 1000 ? 64 : defaults.tileBytes;
        const loss = (x: Tensor, w: Tensor, z: Tensor) =>
          A.sum(A.square(A.tanh(A.mul(A.add(x, w), z)))).add(A.sum(A.sigmoid(A.mul(A.exp(A.neg(A.abs(w))), 2))));
        const g = (x: Tensor, w: Tensor, z: Tensor) => A.grad(loss, { argnums: [0, 1] })(x, w, z);
        const [warm, args] = [inputs(n, dtype, 3), inputs(n, dtype, 11)];
        const eager = tidy(() => (g(args[0], args[1], args[2]) as Tensor[]).map(bytesOf));
        const step = compile((x: Tensor, w: Tensor, z: Tensor) => g(x, w, z));
        const got = replayed(step as never, warm, args.slice(0, 3));
        expect(got).toEqual(eager);
        expect(step.stats.fused).toBeGreaterThan(4);
        step.reset();
        for (const t of [...warm, ...args]) t.dispose();
      }
    });
  }
});

describe('with the thread pool', () => {
  it('a run the trace split across threads replays in chunks split the same way, same bits', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const n = 200003; // tanh and sigmoid are split at this size; chunks of 2 × 16 KB pieces
      fusion.pieceBytes = 16384;
      const f = (x: Tensor, y: Tensor) => A.sigmoid(A.tanh(A.mul(x, y)).add(x));
      const [x, y] = inputs(n, dtype, 21),
        [x2, y2] = inputs(n, dtype, 31);
      const eager = tidy(() => [bytesOf(f(x2, y2))]);
      const c = compile(f);
      for (let i = 0; i < 3; i++) c(x, y).dispose();
      const before = threadStats.dispatches;
      const out = c(x2, y2);
      const forks = threadStats.dispatches - before;
      expect([bytesOf(out)]).toEqual(eager);
      expect(c.stats.fused).toBe(4);
      // With the parallel schedule: each thread runs its pieces of every chunk as one job list, one fork-join.
      expect(forks).toBe(1);
      // Without it: pieces of 16 KB, two per chunk, one fork-join per launch and chunk that has two pieces.
      schedule.enabled = false;
      const before2 = threadStats.dispatches;
      const out2 = c(x2, y2);
      const forks2 = threadStats.dispatches - before2;
      schedule.enabled = true;
      expect([bytesOf(out2)]).toEqual(eager);
      const piece = 16384 / (dtype === 'float32' ? 4 : 8);
      let split = 0;
      for (let lo = 0; lo < n; lo += 2 * piece) if (n - lo > piece) split++;
      expect(forks2).toBe(4 * split);
      out2.dispose();
      out.dispose();
      c.reset();
      for (const t of [x, y, x2, y2]) t.dispose();
    }
  });
});

describe('memory plan', () => {
  it('intermediates that die inside a run get tile-sized buffers: a lower planned peak', () => {
    const n = 1 << 16;
    fusion.tileBytes = fusion.pieceBytes = 16384;
    const f = (x: Tensor, y: Tensor) =>
      A.tanh(A.mul(A.exp(A.add(x, y)), x))
        .add(y)
        .sigmoid();
    const [x, y] = inputs(n, 'float32', 5);
    const fused = compile(f),
      plain = compile(f, { fuse: false });
    const a = replayed(fused as never, [x, y], [x, y]),
      b = replayed(plain as never, [x, y], [x, y]);
    expect(a).toEqual(b);
    // Unfused: four full-size intermediates (add, exp, mul, tanh, add: all but the result), each n·4 bytes.
    expect(plain.stats.planBytes).toBeGreaterThanOrEqual(4 * n * 4);
    expect(fused.stats.fused).toBe(6);
    // Fused: five scratch buffers of one tile (16 KB), or of one chunk (two 16 KB pieces) where
    // the trace split exp, tanh and sigmoid across the pool.
    expect(fused.stats.planBytes).toBeLessThanOrEqual(5 * 2 * 16384);
    fused.reset();
    plain.reset();
    x.dispose();
    y.dispose();
  });

  it('an intermediate used after the run keeps its full buffer, and its values', () => {
    fusion.tileBytes = 256;
    for (const dtype of ['float32', 'float64'] as const) {
      const n = 1001;
      // e = exp(x) is read again after sum() (a reduction, which ends the run) by a broadcast add.
      const f = (x: Tensor, y: Tensor) => {
        const e = A.exp(x);
        const t = A.tanh(A.mul(e, y));
        const s = A.sum(t);
        return [A.mul(A.add(e, s), y).relu(), t];
      };
      const [x, y] = inputs(n, dtype, 9),
        [x2, y2] = inputs(n, dtype, 19);
      const eager = tidy(() => (f(x2, y2) as Tensor[]).map(bytesOf));
      const fused = compile(f),
        plain = compile(f, { fuse: false });
      expect(replayed(fused as never, [x, y], [x2, y2])).toEqual(eager);
      expect(replayed(plain as never, [x, y], [x2, y2])).toEqual(eager);
      expect(fused.stats.fused).toBe(6); // exp, mul, tanh | add, mul, relu
      // e lives on past the first run: at least its full n elements stay in the plan.
      expect(fused.stats.planBytes).toBeGreaterThanOrEqual(n * (dtype === 'float32' ? 4 : 8));
      fused.reset();
      plain.reset();
      for (const t of [x, y, x2, y2]) t.dispose();
    }
  });
});

describe('what is left unfused', () => {
  it('row-broadcast binary ops ([r, c] + [c]) stay separate launches, with the same bits', () => {
    fusion.tileBytes = 64;
    const f = (x: Tensor, b: Tensor) => A.tanh(A.add(A.exp(x), b)).mul(2);
    const x = A.randn([33, 17], { seed: 1 }),
      b = A.randn([17], { seed: 2 });
    const eager = tidy(() => bytesOf(f(x, b)));
    const c = compile(f);
    expect(replayed(c as never, [x, b], [x, b])).toEqual([eager]);
    expect(c.stats.fused).toBe(2); // tanh, mul; exp is cut off by the broadcast add
    c.reset();
    x.dispose();
    b.dispose();
  });

  it('compile(fn, { fuse }) checks its options', () => {
    expect(() => compile((x: Tensor) => x, { fuse: 'yes' as never })).toThrow(A.AdjointError);
    expect(() => compile((x: Tensor) => x, null as never)).toThrow(/options/);
    expect(() => compile((x: Tensor) => x, { fuse: true, tile: 4 } as never)).toThrow(
      /compile: unknown option "tile" \(the options are: fuse\)/,
    );
  });

  it('fusion.enabled = false compiles without runs', () => {
    fusion.enabled = false;
    const x = A.randn([100], { seed: 1 });
    const c = compile((t: Tensor) => A.tanh(A.exp(t)));
    replayed(c as never, [x], [x]);
    expect(c.stats.fused).toBe(0);
    c.reset();
    x.dispose();
  });
});

describe('findRuns on hand-made traces (the hazard rules)', () => {
  const n = 64,
    B = n * 4;
  const blk = (block: number, off = 0): Ref => ({ k: 'block', block, off });
  const X: Ref = { k: 'input', input: 0, off: 0 };
  let clock = 10;
  const unary = (name: string, x: Ref, y: Ref): Launch => ({
    kind: 'launch',
    name,
    pooled: false,
    jobs: [[1000, 2000, n, 0, 0]],
    refs: [[x, y, null, null, null]],
    dyn: 0,
    compute: null,
    at: clock++,
  });
  const binary = (name: string, a: Ref, b: Ref, y: Ref, sbc: number): Launch => ({
    kind: 'launch',
    name,
    pooled: false,
    jobs: [[1000, 2000, 3000, 1, n, 0, 1, 0, sbc]],
    refs: [[a, b, y, null, null, null, null, null, null]],
    dyn: 0,
    compute: null,
    at: clock++,
  });
  const trace = (...ops: Launch[]): Trace =>
    ({ ops, blocks: [0, 1, 2].map((id) => ({ id, ptr: 0, bytes: B, alloc: 0, free: 99 })) }) as unknown as Trace;
  const runs = (t: Trace) => findRuns(t, { tileBytes: 64, pieceBytes: 64 }, new Set());

  it('a chain through a temporary is one run, the temporary a 16-element scratch', () => {
    const [r] = runs(trace(unary('exp_f32', X, blk(0)), unary('tanh_f32', blk(0), blk(1)), unary('relu_f32', blk(1), blk(1))));
    expect([r.members, r.tile, r.threads]).toEqual([[0, 1, 2], 16, 1]);
    expect([...r.scratch]).toEqual([
      [0, 64],
      [1, 64],
    ]);
  });
  it('a read at another offset of a block the run writes ends the run', () => {
    expect(runs(trace(unary('exp_f32', X, blk(0)), unary('tanh_f32', blk(0, 16), blk(1))))).toEqual([]);
  });
  it('a broadcast read of a block the run writes ends the run', () => {
    expect(runs(trace(unary('exp_f32', X, blk(0)), binary('mul_f32', X, blk(0), blk(1), 0)))).toEqual([]);
  });
  it('a temporary read after the run keeps its full buffer', () => {
    const later: Launch = {
      kind: 'launch',
      name: 'sum_f32',
      pooled: false,
      jobs: [[1, 2, 1, n, 1]],
      refs: [[blk(0), blk(2), null, null, null]],
      dyn: 0,
      compute: null,
      at: clock++,
    };
    const [r] = runs(trace(unary('exp_f32', X, blk(0)), binary('add_f32', blk(0), X, blk(1), 1), later));
    expect(r.members).toEqual([0, 1]);
    expect([...r.scratch.keys()]).toEqual([1]);
  });
  it('a block read before the run writes it is no scratch', () => {
    const [r] = runs(trace(unary('exp_f32', blk(0), blk(1)), unary('tanh_f32', blk(1), blk(0))));
    expect([...r.scratch.keys()]).toEqual([1]);
  });
});
