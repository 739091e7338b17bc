// compile(fn): a compiled training step gives the same bytes as eager mode (losses, weights,
// optimizer state) in f32 and f64 with SGD and Adam; shapes retrace; memory stays flat; what
// cannot be replayed (.item() steering control flow, JS state in kernel arguments, a live graph
// returned) falls back to eager with one warning; dropout masks, learning-rate schedules, new
// labels every step and the thread pool replay exactly. The file runs on a 2-thread pool.
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { POINTER_ARGS } from '../src/compile/kernel-args.generated.js';
import { runtime } from '../src/wasm/module.js';
import { thresholds } from '../src/wasm/split.js';
import { setCuts, threadStats } from '../src/testing.js';

const { nn, optim, compile, tidy, crossEntropy, noGrad } = A;
type DT = 'float32' | 'float64';

beforeAll(async () => {
  await A.init({ threads: 2 });
});

let warn: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
});
afterEach(() => warn.mockClear());

const bytes = (t: Tensor): Uint8Array => new Uint8Array(t.toArray().buffer);

interface Setup {
  model: A.nn.Sequential;
  opt: A.optim.Optimizer;
  step: (x: Tensor, y: Int32Array) => Tensor;
  dispose(): void;
}

/** An MLP 12-24-16-4 (Linear, Tanh, Linear, ReLU[, Dropout], Linear) with its optimizer and training step. */
function setup(dtype: DT, kind: 'sgd' | 'adam', { dropout = false, width = 12 } = {}): Setup {
  const model = new nn.Sequential(
    new nn.Linear(width, 24, { seed: 1, dtype }),
    new nn.Tanh(),
    new nn.Linear(24, 16, { seed: 2, dtype }),
    new nn.ReLU(),
    ...(dropout ? [new nn.Dropout(0.3, { seed: 7 })] : []),
    new nn.Linear(16, 4, { seed: 3, dtype }),
  );
  const opt =
    kind === 'sgd'
      ? new optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9, nesterov: true })
      : new optim.Adam(model.parameters(), { lr: 0.01 });
  const step = (x: Tensor, y: Int32Array | number[]) => {
    const loss = crossEntropy(model.forward(x), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { model, opt, step, dispose: () => (opt.dispose(), model.dispose()) };
}

/** Batch i: new inputs and labels every step, as in training. */
function batch(i: number, n: number, dtype: DT, width = 12): { x: Tensor; y: Int32Array } {
  return { x: A.randn([n, width], { seed: 1000 + i, dtype }), y: Int32Array.from({ length: n }, (_, j) => (i * 7 + j * 3) % 4) };
}

/** Same parameter bytes (and Adam step counts) in both setups. */
function expectSameState(e: Setup, c: Setup): void {
  const pe = e.model.parameters(),
    pc = c.model.parameters();
  pe.forEach((p, i) => expect(bytes(pc[i])).toEqual(bytes(p)));
  if (e.opt instanceof optim.Adam)
    pe.forEach((p, i) => expect((c.opt as A.optim.Adam).stepCount(pc[i])).toBe((e.opt as A.optim.Adam).stepCount(p)));
}

/** Runs an eager and a compiled copy of the same setup in lockstep; every loss must match bit for bit. */
function lockstep(e: Setup, c: Setup, sizes: number[], dtype: DT, before?: (i: number, s: Setup) => void) {
  const f = compile(c.step);
  sizes.forEach((n, i) => {
    const { x, y } = batch(i, n, dtype);
    before?.(i, e);
    before?.(i, c);
    const le = tidy(() => e.step(x, y)),
      lc = f(x, y);
    expect(lc.shape).toEqual(le.shape);
    expect(lc.requiresGrad).toBe(le.requiresGrad);
    expect(bytes(lc)).toEqual(bytes(le));
    le.dispose();
    lc.dispose();
    x.dispose();
  });
  expectSameState(e, c);
  return f;
}

describe('compile: a training step, bit for bit', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    for (const kind of ['sgd', 'adam'] as const) {
      it(`${kind}, ${dtype}: 12 steps give the eager losses, weights and optimizer state`, () => {
        const e = setup(dtype, kind),
          c = setup(dtype, kind);
        const f = lockstep(e, c, Array(12).fill(8), dtype);
        // One warm-up call, two traced calls, then replays.
        expect(f.stats).toMatchObject({ eager: 1, traced: 2, replayed: 9, signatures: 1, fallback: null });
        expect(f.stats.planBytes).toBeGreaterThan(0);
        expect(warn).not.toHaveBeenCalled();
        e.dispose();
        c.dispose();
      });
    }
  }

  it('retraces for a new batch size, and both signatures replay correctly', () => {
    const e = setup('float32', 'adam'),
      c = setup('float32', 'adam');
    const f = lockstep(e, c, [16, 16, 16, 16, 8, 8, 8, 8, 16, 8, 16, 8, 5, 16], 'float32');
    expect(f.stats).toMatchObject({ signatures: 3, traced: 4, replayed: 7, fallback: null });
    e.dispose();
    c.dispose();
  });

  it('drops the program of the old shares of the cuts when new shares come (no signature build-up, no warning)', () => {
    const f = compile((x: Tensor) => A.mul(A.tanh(x), 2));
    const xs = Array.from({ length: 9 }, (_, i) => A.randn([i + 2, 3], { seed: i }));
    const ready = () => {
      for (let i = 0; i < 3; i++) f(xs[0]).dispose(); // eager, two traces: built
    };
    try {
      ready();
      const bytes0 = f.stats.planBytes;
      expect(bytes0).toBeGreaterThan(0);
      for (const x of xs.slice(1, 8)) f(x).dispose();
      expect(f.stats.signatures).toBe(8);
      setCuts([20, 12]); // new shares, as balance.ts sets them: every signature is new
      expect(A.backend().shares).toEqual([0.625, 0.375]);
      f(xs[0]).dispose();
      expect(f.stats.signatures).toBe(8); // the old program of xs[0]'s signature was dropped
      expect(f.stats.planBytes).toBe(0); // with its plan
      ready();
      expect(f.stats.planBytes).toBe(bytes0);
      for (const x of xs.slice(1, 8)) f(x).dispose();
      expect(f.stats.signatures).toBe(8);
      expect(warn).not.toHaveBeenCalled();
      f(xs[8]).dispose(); // a ninth signature under the same shares
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('more than 8 signatures'));
      // The results do not depend on the shares.
      const ys = xs.map((x) => f(x));
      setCuts(null);
      for (let i = 0; i < xs.length; i++) {
        const y = f(xs[i]);
        expect(bytes(y)).toEqual(bytes(ys[i]));
        y.dispose(), ys[i].dispose();
      }
      expect(A.backend()).toMatchObject({ threads: 2, shares: [0.5, 0.5] });
    } finally {
      setCuts(null);
      for (const x of xs) x.dispose();
    }
  });

  it('replays dropout masks (a fresh one every step), a learning-rate schedule and labels given as arrays', () => {
    const e = setup('float32', 'sgd', { dropout: true }),
      c = setup('float32', 'sgd', { dropout: true });
    const f = compile(c.step);
    for (let i = 0; i < 10; i++) {
      const { x, y } = batch(i, 8, 'float32');
      e.opt.lr = c.opt.lr = 0.05 * (1 - i / 20);
      const labels = Array.from(y);
      const le = tidy(() => e.step(x, labels as never)),
        lc = f(x, labels as never);
      expect(bytes(lc)).toEqual(bytes(le));
      le.dispose();
      lc.dispose();
      x.dispose();
    }
    expectSameState(e, c);
    expect(f.stats).toMatchObject({ replayed: 7, fallback: null });
    e.dispose();
    c.dispose();
  });

  it('checks new labels as eager mode does, and a rejected call changes nothing', () => {
    const c = setup('float64', 'adam');
    const f = compile(c.step);
    for (let i = 0; i < 4; i++) f(batch(i, 8, 'float64').x, batch(i, 8, 'float64').y).dispose();
    expect(f.stats.replayed).toBe(1);
    const before = c.model.parameters().map(bytes);
    const { x } = batch(9, 8, 'float64');
    const bad = Int32Array.from([0, 1, 2, 3, 9, 0, 1, 2]);
    expect(() => f(x, bad)).toThrow(/crossEntropy: label 9 at position 4 is outside \[0, 4\)/);
    c.model.parameters().forEach((p, i) => expect(bytes(p)).toEqual(before[i]));
    expect(c.opt instanceof optim.Adam && c.opt.stepCount(c.model.parameters()[0])).toBe(4);
    c.dispose();
  });

  it('keeps memory flat over 1,000 compiled steps', () => {
    const c = setup('float32', 'adam');
    const f = compile(c.step);
    const data = [0, 1, 2, 3].map((i) => batch(i, 16, 'float32'));
    const run = (i: number) => f(data[i % 4].x, data[i % 4].y).dispose();
    for (let i = 0; i < 10; i++) run(i);
    const m0 = A.memory();
    for (let i = 0; i < 1000; i++) run(i);
    const m1 = A.memory();
    expect({ tensors: m1.tensors, bytesInUse: m1.bytesInUse, wasmBytes: m1.wasmBytes }).toEqual({
      tensors: m0.tensors,
      bytesInUse: m0.bytesInUse,
      wasmBytes: m0.wasmBytes,
    });
    expect(f.stats.replayed).toBe(1007);
    for (const d of data) d.x.dispose();
    c.dispose();
  });

  it('frees its plans on reset(); the next calls trace again', () => {
    const c = setup('float32', 'sgd');
    const f = compile(c.step);
    const { x, y } = batch(0, 8, 'float32');
    for (let i = 0; i < 4; i++) f(x, y).dispose();
    const held = A.memory().bytesInUse,
      plan = f.stats.planBytes;
    expect(plan).toBeGreaterThan(0);
    f.reset();
    expect(f.stats).toMatchObject({ signatures: 0, planBytes: 0 });
    expect(A.memory().bytesInUse).toBe(held - plan);
    for (let i = 0; i < 4; i++) f(x, y).dispose();
    expect(f.stats.replayed).toBe(2);
    x.dispose();
    c.dispose();
  });
});

describe('compile: other layers, bit for bit', () => {
  type Made = { model: A.nn.Module; input: (i: number) => [Tensor | Int32Array, Int32Array] };
  const cases: [string, () => Made][] = [
    [
      'conv, pooling, GELU (AdamW)',
      () => ({
        model: new nn.Sequential(
          new nn.Conv2d(1, 4, 3, { padding: 1, seed: 1 }),
          new nn.ReLU(),
          new nn.MaxPool2d(2),
          new nn.Conv2d(4, 4, 3, { seed: 2 }),
          new nn.GELU(),
          new nn.AvgPool2d(2),
          new nn.Flatten(),
          new nn.Linear(4, 3, { seed: 3 }),
        ),
        input: (i) => [A.randn([4, 1, 8, 8], { seed: i }), Int32Array.from([0, 1, 2, i % 3])],
      }),
    ],
    [
      'layerNorm, residual, checkpointed segments (AdamW)',
      () => ({
        model: new nn.Sequential(
          new nn.Linear(6, 8, { seed: 1 }),
          new nn.LayerNorm(8),
          new nn.Residual(new nn.Sequential(new nn.Linear(8, 8, { seed: 4 }), new nn.Tanh())),
          new nn.Linear(8, 3, { seed: 3 }),
          { checkpoint: 2 },
        ),
        input: (i) => [A.randn([5, 6], { seed: i }), Int32Array.from([0, 1, 2, i % 3, 1])],
      }),
    ],
    [
      'an embedding fed new indices every step (AdamW)',
      () => ({
        model: new nn.Sequential(new nn.Embedding(10, 4, { seed: 1 }), new nn.Linear(4, 3, { seed: 3 })),
        input: (i) => [Int32Array.from({ length: 6 }, (_, j) => (i + j * 3) % 10), Int32Array.from([i % 3, 1, 0, 2, 1, 0])],
      }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, () => {
      const e = make(),
        c = make();
      const step = (m: A.nn.Module) => {
        const opt = new optim.AdamW(m.parameters(), { lr: 1e-2 });
        return (x: Tensor | Int32Array, y: Int32Array) => {
          const loss = crossEntropy(m.forward(x as Tensor), y);
          loss.backward();
          opt.step();
          opt.zeroGrad();
          return loss;
        };
      };
      const g = step(e.model),
        f = compile(step(c.model));
      for (let i = 0; i < 8; i++) {
        const [x, y] = e.input(i);
        expect(bytes(f(x, y))).toEqual(bytes(tidy(() => g(x, y))));
      }
      e.model.parameters().forEach((p, i) => expect(bytes(c.model.parameters()[i])).toEqual(bytes(p)));
      expect(f.stats).toMatchObject({ replayed: 5, fallback: null });
    });
  }
});

describe('compile: what a schedule cannot replay runs eagerly, after one warning', () => {
  it('a step that reads .item() to decide what to do', () => {
    const make = () => {
      const s = setup('float32', 'sgd');
      const step = (x: Tensor, y: Int32Array) => {
        const loss = crossEntropy(s.model.forward(x), y);
        loss.backward();
        if (loss.item() > 1.38) s.opt.step(); // control flow on a value read mid-way
        s.opt.zeroGrad();
        return loss;
      };
      return { ...s, step };
    };
    const e = make(),
      c = make();
    const f = lockstep(e, c, Array(8).fill(8), 'float32');
    expect(f.stats).toMatchObject({ replayed: 0, fallback: expect.stringMatching(/reads tensor values into JS .*\.item\(\)/) });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toMatch(/^adjoint: compile: .* runs eagerly/);
    e.dispose();
    c.dispose();
  });

  it('a JS counter that reaches a kernel argument', () => {
    const x = A.tensor([1, 2, 3]);
    let k = 0,
      k2 = 0;
    const f = compile((t: Tensor) => A.mul(t, k++));
    for (let i = 0; i < 6; i++) {
      const got = f(x),
        want = tidy(() => A.mul(x, k2++));
      expect(bytes(got)).toEqual(bytes(want));
    }
    expect(f.stats.fallback).toMatch(/schedule changed between two calls .*argument/);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('a dropout probability that changes between calls: never the traced one replayed', () => {
    const x = A.ones([64]);
    let p = 0.1;
    const f = compile((t: Tensor) => A.dropout(t, p, { seed: 3 }));
    for (let i = 0; i < 8; i++) {
      p = 0.1 + 0.2 * (i % 3);
      const got = f(x),
        want = tidy(() => A.dropout(x, p, { seed: 3 }));
      expect(bytes(got), `call ${i}`).toEqual(bytes(want));
    }
    expect(f.stats.fallback).toMatch(/schedule changed between two calls .*dropout_mask_f32 \(step \d+\) argument 2 was 0\.3/);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('a seed given per call (seed: step) to dropout, rand, randn or attention dropout: never the traced one replayed', () => {
    const x = A.ones([64]),
      q = A.randn([2, 8, 4], { seed: 1 });
    const ops = [
      (s: number) => A.dropout(x, 0.5, { seed: s }),
      (s: number) => A.randn([16], { seed: s }),
      (s: number) => A.rand([16], { seed: s }),
      (s: number) => A.scaledDotProductAttention(q, q, q, { dropoutP: 0.5, seed: s }),
    ];
    for (const op of ops) {
      let step = 0;
      const f = compile(() => op(step));
      for (; step < 8; step++) expect(bytes(f()), `step ${step}`).toEqual(bytes(tidy(() => op(step))));
      expect(f.stats.fallback).toMatch(/schedule changed between two calls .*argument/);
      // A constant seed replays, with the same bytes.
      const g = compile(() => op(7));
      for (let i = 0; i < 5; i++) expect(bytes(g())).toEqual(bytes(tidy(() => op(7))));
      expect(g.stats).toMatchObject({ replayed: 2, fallback: null });
    }
    expect(warn).toHaveBeenCalledTimes(ops.length);
  });

  it('seed: null is an automatic seed, as undefined: drawn afresh on every replay, no fallback', () => {
    // seedOf() reads `seed ?? next automatic seed`, so null draws one; taking null for a given
    // seed made it an ordinary argument that changes every call: every step fell back with a warning.
    const x = A.ones([64]),
      q = A.randn([2, 8, 4], { seed: 1 });
    const ops = [
      () => A.dropout(x, 0.5, { seed: null as never }),
      () => A.randn([16], { seed: null as never }),
      () => A.rand([16], { seed: null as never }),
      () => A.scaledDotProductAttention(q, q, q, { dropoutP: 0.5, seed: null as never }),
    ];
    for (const op of ops) {
      const f = compile(op);
      const seen = new Set<string>();
      for (let i = 0; i < 8; i++) {
        const r = f();
        seen.add(bytes(r).join());
        r.dispose();
      }
      expect(seen.size).toBe(8);
      expect(f.stats).toMatchObject({ replayed: 5, fallback: null });
    }
    expect(warn).not.toHaveBeenCalled();
  });

  it('gradients left from the previous step (opt.zeroGrad() first), and a result that carries a graph', () => {
    const e = setup('float64', 'adam'),
      c = setup('float64', 'adam');
    const zeroFirst = (s: Setup) => (x: Tensor, y: Int32Array) => {
      s.opt.zeroGrad();
      const loss = crossEntropy(s.model.forward(x), y);
      loss.backward();
      s.opt.step();
      return loss;
    };
    const f = lockstep({ ...e, step: zeroFirst(e) }, { ...c, step: zeroFirst(c) }, Array(6).fill(8), 'float64');
    expect(f.stats.fallback).toMatch(/frees a tensor that existed before the call .*zeroGrad\(\) comes first/);

    const fwd = compile((x: Tensor) => c.model.forward(x));
    const { x } = batch(0, 8, 'float64');
    for (let i = 0; i < 4; i++) expect(bytes(fwd(x))).toEqual(bytes(tidy(() => e.model.forward(x))));
    expect(fwd.stats.fallback).toMatch(/autodiff graph/);
    const inference = compile((x: Tensor) => noGrad(() => c.model.forward(x)));
    for (let i = 0; i < 5; i++) expect(bytes(inference(x))).toEqual(bytes(tidy(() => e.model.forward(x))));
    expect(inference.stats).toMatchObject({ replayed: 2, fallback: null });
    e.dispose();
    c.dispose();
  });
});

describe('compile: contract details', () => {
  it('returns structures of tensors and passes arguments through; nested compiled calls are recorded by the outer one', () => {
    const inner = compile((a: Tensor) => A.tanh(a));
    const f = compile((a: Tensor, b: Tensor) => ({ sum: A.add(inner(a), b), pair: [b, A.mul(a, 2)], n: 3 }));
    for (let i = 0; i < 5; i++) {
      const a = A.randn([5], { seed: i }),
        b = A.randn([5], { seed: 50 + i });
      const r = f(a, b);
      expect(bytes(r.sum)).toEqual(bytes(tidy(() => A.add(A.tanh(a), b))));
      expect(r.pair[0]).toBe(b);
      expect(bytes(r.pair[1])).toEqual(bytes(tidy(() => A.mul(a, 2))));
      expect(r.n).toBe(3);
    }
    expect(f.stats).toMatchObject({ replayed: 2, fallback: null });
  });

  it('starts over when a tensor the schedule reads was disposed (a new optimizer)', () => {
    const e = setup('float32', 'adam'),
      c = setup('float32', 'adam');
    let opt = c.opt,
      optE = e.opt;
    const step = (s: Setup, o: () => A.optim.Optimizer) => (x: Tensor, y: Int32Array) => {
      const loss = crossEntropy(s.model.forward(x), y);
      loss.backward();
      o().step();
      o().zeroGrad();
      return loss;
    };
    const f = compile(step(c, () => opt)),
      g = step(e, () => optE);
    for (let i = 0; i < 10; i++) {
      if (i === 5) {
        opt.dispose();
        optE.dispose();
        opt = new optim.Adam(c.model.parameters(), { lr: 0.02 });
        optE = new optim.Adam(e.model.parameters(), { lr: 0.02 });
      }
      const { x, y } = batch(i, 8, 'float32');
      expect(bytes(f(x, y))).toEqual(bytes(tidy(() => g(x, y))));
    }
    expect(f.stats).toMatchObject({ traced: 4, replayed: 4 });
    expectSameState(e, c);
  });

  it('rejects a non-function', () => {
    expect(() => compile(3 as never)).toThrow(/compile: fn must be a function/);
  });
});

describe('compile: the thread pool', () => {
  it('replays launches cut across 2 threads through the pool, and retraces for another thread count', async () => {
    const saved = { ...thresholds };
    thresholds.gemm = thresholds.elementwise = 0; // split every kernel that can be split
    try {
      const e = setup('float32', 'adam', { width: 40 }),
        c = setup('float32', 'adam', { width: 40 });
      const f = compile(c.step);
      const run = (i: number) => {
        const { x, y } = batch(i, 32, 'float32', 40);
        const d0 = threadStats.dispatches;
        const lc = f(x, y);
        const pooled = threadStats.dispatches - d0;
        expect(bytes(lc)).toEqual(bytes(tidy(() => e.step(x, y))));
        return pooled;
      };
      for (let i = 0; i < 6; i++) {
        const pooled = run(i);
        if (i >= 3) expect(pooled).toBeGreaterThan(4); // replays went through the workers (7 fork-joins: the schedule chains the rest)
      }
      await A.init({ threads: 1 });
      for (let i = 6; i < 12; i++) expect(run(i)).toBe(0);
      await A.init({ threads: 2 });
      for (let i = 12; i < 14; i++) run(i);
      expect(f.stats).toMatchObject({ signatures: 2, replayed: 3 + 3 + 2, fallback: null });
      expectSameState(e, c);
    } finally {
      Object.assign(thresholds, saved);
    }
  });
});

describe('compile: the kernel pointer table', () => {
  it('matches the usize parameters of every exported kernel in assembly/', () => {
    const dir = new URL('../assembly/', import.meta.url);
    const index = readFileSync(new URL('index.ts', dir), 'utf8');
    const files = ['index.ts', ...[...index.matchAll(/export \* from '\.\/(\w+)'/g)].map((m) => `${m[1]}.ts`)];
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(files));
    const want = new Map<string, number>();
    for (const f of files) {
      for (const m of readFileSync(new URL(f, dir), 'utf8').matchAll(/export function (\w+)\s*\(([^)]*)\)/g)) {
        const types = m[2]
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean)
          .map((p) => p.split(':')[1].trim());
        want.set(
          m[1],
          types.reduce((mask, t, i) => (t === 'usize' ? mask | (1 << i) : mask), 0),
        );
      }
    }
    const exported = Object.keys(runtime().exports).filter((k) => typeof runtime().exports[k] === 'function');
    const missing = exported.filter((k) => want.get(k) !== POINTER_ARGS.get(k)).map((k) => `${k}: ${want.get(k)?.toString(2)}`);
    expect(missing, 'src/compile/kernel-args.generated.ts is stale or misses an export: run npm run asbuild').toEqual([]);
  });
});
