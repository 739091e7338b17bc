// Child process for test/threads.test.ts: init() happens once per module instance, so every
// thread count (and the fallback and worker-death cases) runs in a process of its own.
// Prints one JSON line.  Usage: node <bundle> digest|fallback|death|resize [--threads N] [--force] [--pause]
//   digest    trains a small MLP (matmul, add, tanh, crossEntropy, backward, SGD written with
//             ops) and prints a SHA-256 of the final weights' bytes; --force drops the size
//             thresholds so every splittable kernel is split, odd sizes included; --pause makes
//             the busy-machine pause kick in at every wait, mixing split and unsplit launches.
//   fallback  removes SharedArrayBuffer, then init({ threads: 2 }): one thread and one notice.
//   death     a worker exits mid-matmul: the call throws, later calls work, init() restarts.
//   terminate a worker is killed from outside (terminate(), no code of it runs) in the middle of
//             a long GEMM piece while the caller is blocked waiting for it: the call throws.
//   resize    init({ threads }) on a running engine: 2 → 3 → 1 → 2 threads, same bytes.
//   compiled  compile()d training steps (nn.Linear MLPs, ReLU and tanh; SGD with momentum, Adam;
//             f32 and f64), replayed with the parallel schedule: digest of the weights' bytes
//             (--force, --pause as for digest), of a fused elementwise chain's results and of a
//             small GPT's AdamW steps; and a
//             worker that dies in a compiled step.
//             --cuts U.U[.U] (digest, compiled): fixed uneven cuts, units per thread (shares are
//             units over their sum), the controller off.
//   balance   compile()d training while the cuts change every four steps (digests), then the
//             cuts the controller chose for a worker made 5× slower, and after it recovered.
//   plan      a GPT's compile()d and eager AdamW steps (digests) and the compiled step's plan bytes.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import * as A from '../src/index.js';
import {
  balance,
  busy,
  cutKey,
  cutUnits,
  poolSize,
  setCuts,
  slowWorker,
  threadCount,
  threadStats,
  killWorkerOnNextJob,
  runJobs,
  terminateWorkerLater,
} from '../src/testing.js';
import { kernel } from '../src/wasm/module.js';
import { thresholds } from '../src/wasm/split.js';
import { matmulT } from '../src/ops/api.js';
import { GPT } from '../src/nn/gpt.js';

const argv = process.argv.slice(2);
const mode = argv[0];
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
};
const out = (v: unknown): void => console.log(JSON.stringify(v));
/** --cuts U.U[.U]: fixed uneven cuts (units per thread; the controller off). */
const fixedCuts = (): void => {
  const c = flag('--cuts');
  if (c === undefined) return;
  balance.enabled = false;
  setCuts(c.split('.').map(Number));
};

/** Weights and a digest of their bytes after `steps` SGD steps of a 3-layer tanh MLP. */
function train(steps: number, dtype: 'float32' | 'float64'): string {
  // Odd sizes on purpose: pieces end mid-tile, mid-vector and mid-row.
  const [n, d0, d1, d2, d3] = [67, 131, 77, 45, 10];
  const x = A.randn([n, d0], { seed: 1, dtype });
  const labels = Array.from({ length: n }, (_, i) => (i * 7) % d3);
  const init = (shape: number[], seed: number) => A.randn(shape, { seed, dtype }).mul(1 / Math.sqrt(shape[0]));
  let ps = [
    init([d0, d1], 2),
    A.zeros([d1], { dtype }),
    init([d1, d2], 3),
    A.zeros([d2], { dtype }),
    init([d2, d3], 4),
    A.zeros([d3], { dtype }),
  ];
  for (let s = 0; s < steps; s++) {
    ps = A.tidy(() => {
      for (const p of ps) p.requiresGrad = true;
      let h = x;
      for (let l = 0; l < 3; l++) {
        h = A.add(A.matmul(h, ps[2 * l]), ps[2 * l + 1]);
        if (l < 2) h = A.tanh(h);
      }
      A.crossEntropy(h, labels).backward();
      const next = ps.map((p) => A.keep(A.sub(p, A.mul(p.grad!, 0.1)).detach()));
      for (const p of ps) p.dispose();
      return next;
    });
  }
  const hash = createHash('sha256');
  for (const p of ps) hash.update(p.toArray());
  return hash.digest('hex');
}

/** GEMMs the MLP does not produce: short and wide (cut over columns of C), every transpose combination, f32 and f64. */
function wideGemms(): string {
  const hash = createHash('sha256');
  A.tidy(() => {
    for (const dtype of ['float32', 'float64'] as const) {
      for (const [ta, tb] of [
        [false, false],
        [true, false],
        [false, true],
        [true, true],
      ]) {
        const a = A.randn(ta ? [301, 5] : [5, 301], { seed: 7, dtype }),
          b = A.randn(tb ? [517, 301] : [301, 517], { seed: 8, dtype });
        hash.update(matmulT(a, b, ta, tb).toArray());
      }
    }
  });
  return hash.digest('hex');
}

/** Fused optimizer updates (split like elementwise kernels): Adam, AdamW and SGD with momentum. */
function optimizers(): string {
  const hash = createHash('sha256');
  for (const [make, dtype] of [
    [(ps: A.Tensor[]) => new A.optim.Adam(ps, { lr: 0.01 }), 'float32'],
    [(ps: A.Tensor[]) => new A.optim.AdamW(ps, { lr: 0.01, weightDecay: 0.1 }), 'float64'],
    [(ps: A.Tensor[]) => new A.optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true }), 'float32'],
  ] as const) {
    const p = A.randn([301, 131], { seed: 9, dtype });
    p.requiresGrad = true;
    const opt = make([p]);
    for (let s = 0; s < 3; s++) {
      p.grad = A.randn([301, 131], { seed: 10 + s, dtype });
      opt.step();
    }
    hash.update(p.toArray());
  }
  return hash.digest('hex');
}

/** A matmul big enough to be split; returns its bytes' digest. */
function bigMatmul(): string {
  return A.tidy(() => {
    const c = A.matmul(A.randn([96, 200], { seed: 5 }), A.randn([200, 120], { seed: 6 }));
    return createHash('sha256')
      .update(c.toArray() as Float32Array)
      .digest('hex');
  });
}

/** A compile()d training step of an nn.Linear MLP with `sizes` (act between layers), and its model. */
function compiledStep(sizes: readonly number[], act: 'relu' | 'tanh', opt: 'sgd' | 'adam', dtype: 'float32' | 'float64') {
  const layers: A.nn.Module[] = [];
  for (let i = 0; i + 1 < sizes.length; i++) {
    layers.push(new A.nn.Linear(sizes[i], sizes[i + 1], { seed: 20 + i, dtype }));
    if (i + 2 < sizes.length) layers.push(act === 'relu' ? new A.nn.ReLU() : new A.nn.Tanh());
  }
  const m = new A.nn.Sequential(...layers);
  const o = opt === 'sgd' ? new A.optim.SGD(m.parameters(), { lr: 0.05, momentum: 0.9 }) : new A.optim.Adam(m.parameters(), { lr: 0.01 });
  const step = A.compile((x: A.Tensor, y: Int32Array) => {
    const loss = A.crossEntropy(m.forward(x), y);
    loss.backward();
    o.step();
    o.zeroGrad();
    return loss;
  });
  return { m, step };
}

/**
 * Digest of an nn.Linear MLP's weights after `steps` compile()d steps (independent launches run
 * side by side with a pool); beforeStep(s) runs before step s.
 */
function compiledTrain(
  steps: number,
  act: 'relu' | 'tanh',
  opt: 'sgd' | 'adam',
  dtype: 'float32' | 'float64',
  beforeStep: (s: number) => void = () => {},
): string {
  const sizes = [131, 77, 45, 45, 10],
    n = 67;
  const { m, step } = compiledStep(sizes, act, opt, dtype);
  const hash = createHash('sha256');
  for (let s = 0; s < steps; s++) {
    beforeStep(s);
    const x = A.randn([n, sizes[0]], { seed: 30 + (s % 3), dtype });
    const y = Int32Array.from({ length: n }, (_, i) => (i * 7 + s) % 10);
    const loss = step(x, y);
    hash.update(loss.toArray());
    loss.dispose();
    x.dispose();
  }
  for (const p of m.parameters()) hash.update(p.toArray());
  return hash.digest('hex');
}

/** A compile()d chain of elementwise ops on 300 × 1001 elements (fused, replayed tile-major; split over the pool as one job list per thread). */
function compiledChain(): { digest: string; fused: number; lists: number; replayed: number } {
  const f = A.compile((a: A.Tensor, b: A.Tensor) => A.sub(A.mul(A.tanh(A.add(A.mul(a, b), a)), 2), b));
  const hash = createHash('sha256');
  const lists = threadStats.lists;
  for (let s = 0; s < 4; s++) {
    const a = A.randn([300, 1001], { seed: 40 + s }),
      b = A.randn([300, 1001], { seed: 50 + s });
    const y = f(a, b);
    hash.update(y.toArray());
    for (const t of [y, a, b]) t.dispose();
  }
  return { digest: hash.digest('hex'), fused: f.stats.fused, lists: threadStats.lists - lists, replayed: f.stats.replayed };
}

/** A compile()d AdamW step of a small GPT (layerNorm, attention, GELU, residual adds: row chains of the schedule): digest of the weights. */
function compiledGpt(steps: number): string {
  return gptSteps(steps, [16, 4, 32], true).digest;
}

/** `steps` AdamW steps of a GPT with context T, batch B and width W, compile()d or eager: digest of the losses and weights, and the plan's bytes. */
function gptSteps(steps: number, [T, B, W]: readonly number[], compiled: boolean): { digest: string; planBytes: number } {
  const V = 17;
  const m = new GPT({ vocabSize: V, layers: 2, heads: 2, width: W, context: T, seed: 3 });
  const opt = new A.optim.AdamW(m.parameters(), { lr: 1e-2, weightDecay: 0.1 });
  const body = (ids: Int32Array, y: Int32Array) => {
    const loss = A.crossEntropy(A.reshape(m.forward({ ids, shape: [B, T] }), [-1, V]), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  const f = A.compile(body);
  const step = compiled ? f : (ids: Int32Array, y: Int32Array) => A.tidy(() => A.keep(body(ids, y)));
  const hash = createHash('sha256');
  for (let s = 0; s < steps; s++) {
    const ids = Int32Array.from({ length: B * T }, (_, i) => (i * 5 + s) % V);
    const y = Int32Array.from({ length: B * T }, (_, i) => (i * 3 + 2 * s) % V);
    const loss = step(ids, y);
    hash.update(loss.toArray());
    loss.dispose();
  }
  for (const p of m.parameters()) hash.update(p.toArray());
  return { digest: hash.digest('hex'), planBytes: f.stats.planBytes };
}

if (mode === 'compiled') {
  const t = flag('--threads');
  await A.init(t === undefined ? {} : { threads: Number(t) });
  if (argv.includes('--force')) Object.assign(thresholds, { gemm: 0, elementwise: 0 });
  busy.pauseMs = 0; // every phase really dispatched, whatever the machine's load
  if (argv.includes('--pause')) Object.assign(busy, { strikes: 1, runs: 1, strikeMs: 0, pauseMs: 2, minWaitMs: -1, ratio: -1, grace: 0 });
  fixedCuts();
  const digests = [
    compiledTrain(6, 'relu', 'sgd', 'float32'),
    compiledTrain(6, 'tanh', 'adam', 'float32'),
    compiledTrain(4, 'tanh', 'sgd', 'float64'),
  ];
  const chain = compiledChain();
  digests.push(chain.digest, compiledGpt(5));
  out({
    threads: poolSize(),
    digests,
    lists: threadStats.lists,
    chain: { fused: chain.fused, lists: chain.lists, replayed: chain.replayed },
    dispatches: threadStats.dispatches,
    pauses: threadStats.pauses,
  });
} else if (mode === 'balance') {
  // Compiled training while the cuts change every four steps (each new set of cuts is a new
  // signature, traced again, whose program replaces the one of the old cuts), then the controller
  // against a worker made 5× slower, and after it is back at full speed.
  await A.init({ threads: 2 });
  const saved = { ...thresholds };
  Object.assign(thresholds, { gemm: 0, elementwise: 0 });
  busy.pauseMs = 0;
  balance.enabled = false;
  // Four steps per set of cuts: an eager call, two traces, a replay; the last set comes back (traced again).
  const rotation = [null, [24, 8], [9, 23], [24, 8]];
  const turn = (s: number) => setCuts(rotation[Math.floor(s / 4) % rotation.length]);
  const runs = [
    ['relu', 'sgd', 'float32'],
    ['tanh', 'adam', 'float32'],
    ['tanh', 'sgd', 'float64'],
  ] as const;
  const reference = runs.map(([act, opt, dtype]) => compiledTrain(16, act, opt, dtype));
  const digests = runs.map(([act, opt, dtype]) => compiledTrain(16, act, opt, dtype, turn));
  const warnings: string[] = [];
  console.warn = (...a: unknown[]) => void warnings.push(a.join(' '));
  Object.assign(thresholds, saved);
  Object.assign(balance, { enabled: true, windowMs: 100, gapMs: 0, costRatio: 0 });
  setCuts(null);
  /** Steps for `ms`: the most units the caller had after any step, and the cuts at the end. */
  const steps = (ms: number) => {
    const { step } = compiledStep([784, 256, 256, 10], 'relu', 'sgd', 'float32');
    const x = A.randn([128, 784], { seed: 70 }),
      y = Int32Array.from({ length: 128 }, (_, i) => i % 10);
    let most = 0;
    for (const t0 = performance.now(); performance.now() - t0 < ms; ) {
      step(x, y).dispose();
      most = Math.max(most, cutUnits(2)[0]);
    }
    return { most, key: cutKey(), units: cutUnits(2) };
  };
  slowWorker(0, 400);
  const slow = steps(3000);
  slowWorker(0, 0);
  const fast = steps(3000);
  out({ reference, digests, slow, fast, warnings });
} else if (mode === 'plan') {
  // A GPT step whose GEMMs are cut by rows on 2 threads (256 rows): compiled and eager, and the plan's size.
  const t = flag('--threads');
  await A.init(t === undefined ? {} : { threads: Number(t) });
  busy.pauseMs = 0;
  const compiled = gptSteps(5, [32, 8, 64], true);
  out({ threads: poolSize(), compiled: compiled.digest, eager: gptSteps(5, [32, 8, 64], false).digest, planBytes: compiled.planBytes });
} else if (mode === 'compiled-death') {
  await A.init({ threads: 2 });
  Object.assign(thresholds, { gemm: 0, elementwise: 0 });
  busy.pauseMs = 0;
  const reference = compiledTrain(6, 'relu', 'adam', 'float32');
  const before = threadStats.lists;
  let error: { message: string; isAdjoint: boolean } | null = null;
  // The worker dies on its first job after this: a launch or a job list of a compiled step.
  killWorkerOnNextJob(0);
  try {
    compiledTrain(6, 'relu', 'adam', 'float32');
  } catch (e) {
    error = { message: (e as Error).message, isAdjoint: e instanceof A.AdjointError };
  }
  const afterThreads = threadCount(),
    after = compiledTrain(6, 'relu', 'adam', 'float32');
  await A.init();
  const again = compiledTrain(6, 'relu', 'adam', 'float32');
  out({ error, listsBefore: before, afterThreads, afterOk: after === reference, restarted: poolSize(), againOk: again === reference });
} else if (mode === 'digest') {
  const t = flag('--threads');
  await A.init(t === undefined ? {} : { threads: t === 'auto' ? 'auto' : Number(t) });
  if (argv.includes('--force')) {
    thresholds.gemm = 0;
    thresholds.elementwise = 0;
    busy.pauseMs = 0; // every split really dispatched, whatever the machine's load
  }
  if (argv.includes('--pause')) Object.assign(busy, { strikes: 1, runs: 1, strikeMs: 0, pauseMs: 2, minWaitMs: -1, ratio: -1, grace: 0 }); // pause after every split
  fixedCuts();
  const f32 = train(4, 'float32'),
    f64 = train(2, 'float64'),
    wide = wideGemms(),
    optim = optimizers();
  // The pool's size, not threadCount(): that is 1 while the busy-machine pause is on.
  out({
    threads: poolSize(),
    f32,
    f64,
    wide,
    optim,
    dispatches: threadStats.dispatches,
    stolen: threadStats.stolen,
    pauses: threadStats.pauses,
  });
} else if (mode === 'fallback') {
  const warnings: string[] = [];
  console.warn = (...a: unknown[]) => void warnings.push(a.join(' '));
  delete (globalThis as { SharedArrayBuffer?: unknown }).SharedArrayBuffer;
  await A.init({ threads: 2 });
  const before = bigMatmul();
  await A.init({ threads: 2 }); // asking again: still no error, no second notice
  out({ threads: threadCount(), warnings, ok: before === bigMatmul() });
} else if (mode === 'death') {
  await A.init({ threads: 2 });
  const reference = bigMatmul();
  killWorkerOnNextJob(0);
  let error: { name: string; message: string; isAdjoint: boolean } | null = null;
  try {
    bigMatmul();
  } catch (e) {
    error = { name: (e as Error).name, message: (e as Error).message, isAdjoint: e instanceof A.AdjointError };
  }
  const afterThreads = threadCount(),
    after = bigMatmul();
  await A.init();
  const restarted = threadCount(),
    again = bigMatmul();
  out({ error, afterThreads, afterOk: after === reference, restarted, againOk: again === reference, dispatches: threadStats.dispatches });
} else if (mode === 'terminate') {
  await A.init({ threads: 2 });
  const reference = bigMatmul();
  // One GEMM of n³ cut unevenly: the caller's piece is 16 rows, the worker's the rest (≈ 0.1 s on
  // one core), and the worker is terminated 25 ms in. If the caller claimed the worker's piece
  // itself (the worker was descheduled: a loaded machine), nothing died: try again.
  const n = 1024,
    a = A.randn([n, n], { seed: 11 }),
    b = A.randn([n, n], { seed: 12 }),
    c = A.randn([n, n], { seed: 13 }); // overwritten (accumulate = 0)
  const job = (i0: number, i1: number) => [a.ptr + i0 * n * 4, b.ptr, c.ptr + i0 * n * 4, i1 - i0, n, n, n, n, n, 0, 0, 0];
  let error: { message: string; isAdjoint: boolean } | null = null,
    attempts = 0,
    waitedMs = 0;
  while (error === null && attempts++ < 20) {
    const w0 = threadStats.waitMs;
    terminateWorkerLater(0, 25);
    try {
      runJobs('gemm_f32', [job(0, 16), job(16, n)], kernel('gemm_f32'));
      await new Promise((r) => setTimeout(r, 100)); // the worker survived (its piece was stolen); the kill lands now
      await A.init({ threads: 1 }); // a fresh pool for the next attempt
      await A.init({ threads: 2 });
    } catch (e) {
      error = { message: (e as Error).message, isAdjoint: e instanceof A.AdjointError };
      waitedMs = threadStats.waitMs - w0;
    }
  }
  const afterThreads = threadCount(),
    after = bigMatmul();
  await A.init();
  const restarted = threadCount(),
    again = bigMatmul();
  out({ error, attempts, waitedMs, afterThreads, afterOk: after === reference, restarted, againOk: again === reference });
} else if (mode === 'resize') {
  // One engine, its pool resized by init({ threads }) between runs: same bytes every time.
  await A.init({ threads: 2 });
  const seen: [number, string][] = [];
  // OS threads of this process (Linux), once stopped workers have exited: a pool nobody stops shows here.
  const tasks = () => (existsSync('/proc/self/task') ? readdirSync('/proc/self/task').length : 0);
  const settledTasks = async (want: number) => {
    for (let i = 0; i < 40 && tasks() !== want; i++) await new Promise((r) => setTimeout(r, 50));
    return tasks();
  };
  let oneThread = 0;
  for (const t of [2, 3, 1, 2]) {
    await A.init({ threads: t });
    seen.push([threadCount(), bigMatmul() + wideGemms()]);
    if (t === 1) oneThread = await settledTasks(-1);
  }
  // Overlapping calls run in call order, as if each were awaited: the last one wins and no pool is orphaned.
  await Promise.all([A.init({ threads: 3 }), A.init({ threads: 1 }), A.init({ threads: 2 })]);
  const overlapped = threadCount();
  await A.init({ threads: 1 });
  const orphaned = (await settledTasks(oneThread)) - oneThread;
  out({
    counts: seen.map((s) => s[0]),
    same: seen.every((s) => s[1] === seen[0][1]),
    dispatches: threadStats.dispatches,
    overlapped,
    orphaned,
  });
} else if (mode === 'resize-many') {
  // 40 restarts of a 2-thread pool under a 4 MiB cap (about 1.2 MB above the static data and
  // packing scratch): each took a new 65 KB control slot for good (2.6 MB in all) until stopped
  // pools' slots were reused.
  await A.init({ threads: 2, memory: { maximumBytes: 4 << 20 } });
  let error: string | null = null;
  for (let i = 0; i < 40 && error === null; i++) {
    try {
      await A.init({ threads: 1 });
      await A.init({ threads: 2 });
    } catch (e) {
      error = `restart ${i}: ${(e as Error).message.slice(0, 80)}`;
    }
  }
  out({ error, threads: threadCount(), ok: bigMatmul().length === 64, wasmBytes: A.memory().wasmBytes });
} else if (mode === 'overlap-module') {
  // Two entry points of one app each read the wasm file into a buffer of their own and call
  // init() at once. The second call used to share the first one's promise; run in call order, it
  // was told 'module was fixed by the first init() call (a Buffer) and cannot change to a Buffer'.
  const bytes = () => readFileSync('build/adjoint.wasm');
  const calls = await Promise.allSettled([A.init({ module: bytes(), threads: 2 }), A.init({ module: bytes(), threads: 2 })]);
  const again = await A.init({ module: new Uint8Array(bytes()) }).then(
    () => 'ok',
    (e: Error) => e.message,
  );
  const other = await A.init({ module: new Uint8Array(16) }).then(
    () => 'ok',
    (e: Error) => e.message.slice(0, 60),
  );
  out({ calls: calls.map((c) => (c.status === 'fulfilled' ? 'ok' : String(c.reason))), again, other, threads: threadCount() });
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
