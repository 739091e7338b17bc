// Eager vs compile() on the MLP training step of issue 6 (784-256-256-10, batch 128, ReLU,
// crossEntropy) with SGD + momentum and with Adam, the README's digits step (with dropout), the
// forward pass alone, and a tiny call (the fixed overhead per call). One thread, f32.
// Then fusion of elementwise chains: two 5-op chains eager / compiled unfused / compiled fused, and
// the MLP step compiled without and with fusion.
// Run: node scripts/run-ts.mjs bench/compile-step.ts [--fusion] (markdown tables; wall and CPU medians; --fusion: only the fusion table).
import * as A from '../src/index.js';
import { randomValues, randomLabels } from './timing.js';

await A.init({ threads: 1 });
const { nn, optim, tidy, noGrad, crossEntropy, tensor, compile, add } = A;
const BATCH = 128,
  SIZES = [784, 256, 256, 10];

function model(): A.nn.Sequential {
  const layers: A.nn.Module[] = [];
  for (let i = 0; i + 1 < SIZES.length; i++) {
    layers.push(new nn.Linear(SIZES[i], SIZES[i + 1], { seed: 10 + i }));
    if (i + 2 < SIZES.length) layers.push(new nn.ReLU());
  }
  return new nn.Sequential(...layers);
}

// A few batches in rotation: new inputs and labels every step, as in training.
const batches = [0, 1, 2, 3].map((s) => ({
  x: tensor(randomValues(BATCH * SIZES[0], 100 + s), { shape: [BATCH, SIZES[0]] }),
  y: randomLabels(BATCH, SIZES[SIZES.length - 1], 200 + s),
}));

const rows: string[][] = [];

/**
 * Median ms per call of a and b, timed in alternating rounds of `reps` calls after a warm-up, so
 * load from other processes on a shared machine hits both alike; wall and process-CPU medians.
 */
function pair(a: () => void, b: () => void, reps: number, rounds = 15): { a: [number, number]; b: [number, number] } {
  for (const f of [a, b, a, b]) for (let i = 0; i < reps; i++) f();
  const wall: [number[], number[]] = [[], []],
    cpu: [number[], number[]] = [[], []];
  const cpuNow = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e3;
  };
  for (let r = 0; r < rounds; r++) {
    [a, b].forEach((f, k) => {
      const t0 = performance.now(),
        c0 = cpuNow();
      for (let i = 0; i < reps; i++) f();
      wall[k].push((performance.now() - t0) / reps);
      cpu[k].push((cpuNow() - c0) / reps);
    });
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  return { a: [med(wall[0]), med(cpu[0])], b: [med(wall[1]), med(cpu[1])] };
}
const fmt = (x: number, unit = 'ms') => (unit === 'µs' ? `${(x * 1e3).toFixed(2)} µs` : `${x.toFixed(2)} ms`);
function row(name: string, r: ReturnType<typeof pair>, unit = 'ms'): void {
  rows.push([
    name,
    `${fmt(r.a[0], unit)} (cpu ${fmt(r.a[1], unit)})`,
    `${fmt(r.b[0], unit)} (cpu ${fmt(r.b[1], unit)})`,
    (r.a[0] / r.b[0]).toFixed(2),
  ]);
}

const fusionOnly = process.argv.includes('--fusion');

/** One cross-entropy training step of m with opt, eager (in a tidy) or compiled; returns the loss. */
function trainStep(m: A.nn.Module, opt: A.optim.Optimizer, compiled: boolean): (x: A.Tensor, y: Int32Array) => A.Tensor {
  const step = (x: A.Tensor, y: Int32Array) => {
    const loss = crossEntropy(m.forward(x), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return compiled ? compile(step) : (x, y) => tidy(() => step(x, y));
}
if (!fusionOnly)
  for (const kind of ['SGD', 'Adam'] as const) {
    const runner = (compiled: boolean) => {
      const m = model();
      const f = trainStep(
        m,
        kind === 'SGD' ? new optim.SGD(m.parameters(), { lr: 0.01, momentum: 0.9 }) : new optim.Adam(m.parameters(), { lr: 1e-3 }),
        compiled,
      );
      let i = 0;
      return () => {
        const b = batches[i++ % batches.length];
        const loss = f(b.x, b.y);
        loss.item(); // wasm is synchronous: the step is done; read the loss as a training loop would
        loss.dispose();
      };
    };
    row(`MLP step, ${kind}`, pair(runner(false), runner(true), 10));
  }

if (!fusionOnly) {
  // The README's digits example: 64-512-10 with dropout 0.5, SGD + Nesterov momentum, batch 32.
  const runner = (compiled: boolean) => {
    const m = new nn.Sequential(
      new nn.Linear(64, 512, { seed: 1 }),
      new nn.ReLU(),
      new nn.Dropout(0.5, { seed: 2 }),
      new nn.Linear(512, 10, { seed: 3 }),
    );
    const f = trainStep(m, new optim.SGD(m.parameters(), { lr: 0.1, momentum: 0.9, nesterov: true }), compiled);
    const data = [0, 1, 2, 3].map((s) => ({
      x: tensor(randomValues(32 * 64, 300 + s), { shape: [32, 64] }),
      y: randomLabels(32, 10, 400 + s),
    }));
    let i = 0;
    return () => {
      const b = data[i++ % data.length];
      f(b.x, b.y).dispose();
    };
  };
  row('digits MLP 64-512-10 + dropout, batch 32, SGD', pair(runner(false), runner(true), 50));
}

if (!fusionOnly) {
  const m = model();
  const fwd = (x: A.Tensor) => noGrad(() => m.forward(x));
  const f = compile(fwd);
  row(
    'MLP forward (noGrad)',
    pair(
      () => tidy(() => fwd(batches[0].x)).dispose(),
      () => f(batches[0].x).dispose(),
      20,
    ),
  );
}

if (!fusionOnly) {
  const a = tensor([0.1, 0.2, 0.3, 0.4]),
    b = tensor([0.01, 0.01, 0.01, 0.01]);
  const f = compile((x: A.Tensor, y: A.Tensor) => add(x, y));
  const r = pair(
    () => add(a, b).dispose(),
    () => f(a, b).dispose(),
    20000,
  );
  row('add of 4 elements (one call)', r, 'µs');
}

if (!fusionOnly) {
  console.log('| workload | eager | compiled | speed-up |\n| --- | --- | --- | --- |');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

// Fusion of elementwise chains (src/compile/fuse.ts): a 5-op chain eager, compiled unfused and
// compiled fused, then the MLP step unfused vs fused. Same alternating-rounds medians as above.
{
  /** Median wall and CPU ms per call of each f, in alternating rounds of `reps` calls after a warm-up. */
  const medians = (fs: (() => void)[], reps: number, rounds = 11): [number, number][] => {
    for (const f of fs) for (let i = 0; i < 2 * reps; i++) f();
    const cpuNow = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e3;
    };
    const ts = fs.map((): [number[], number[]] => [[], []]);
    for (let r = 0; r < rounds; r++)
      fs.forEach((f, k) => {
        const t0 = performance.now(),
          c0 = cpuNow();
        for (let i = 0; i < reps; i++) f();
        ts[k][0].push((performance.now() - t0) / reps);
        ts[k][1].push((cpuNow() - c0) / reps);
      });
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
    return ts.map(([w, c]) => [med(w), med(c)]);
  };
  const both = ([w, c]: [number, number]) => `${fmt(w)} (cpu ${fmt(c)})`;
  type Chain = (x: A.Tensor, y: A.Tensor, z: A.Tensor) => A.Tensor;
  // 5 maps each (number operands become a 1-element fill, which the run hoists).
  const chains: [string, Chain][] = [
    ['add, mul, sub, relu, mul', (x, y, z) => A.relu(A.sub(A.mul(A.add(x, y), z), x)).mul(y)],
    ['add, mul, tanh, mul 0.5, sigmoid', (x, y, z) => A.sigmoid(A.tanh(A.mul(A.add(x, y), z)).mul(0.5))],
  ];
  const out: string[] = [
    '| 5-op chain, f32 | eager | compiled, unfused | compiled, fused | fused vs unfused (wall, cpu) |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const [name, chain] of chains)
    for (const log2 of [16, 20, 22]) {
      const n = 1 << log2;
      const [x, y, z] = [1, 2, 3].map((s) => A.randn([n], { seed: s }));
      const plain = compile(chain, { fuse: false }),
        fused = compile(chain);
      const run = (f: Chain) => () => f(x, y, z).dispose();
      const [e, u, f] = medians(
        [() => tidy(() => chain(x, y, z)).dispose(), run(plain), run(fused)],
        log2 >= 22 ? 3 : log2 >= 20 ? 10 : 100,
      );
      out.push(
        `| ${name}, 2^${log2} (plan ${(plain.stats.planBytes / 2 ** 20).toFixed(1)} → ${(fused.stats.planBytes / 2 ** 20).toFixed(2)} MB) | ${both(e)} | ${both(u)} | ${both(f)} | ${(u[0] / f[0]).toFixed(2)}×, ${(u[1] / f[1]).toFixed(2)}× |`,
      );
      plain.reset(), fused.reset();
      for (const t of [x, y, z]) t.dispose();
    }
  for (const kind of ['SGD', 'Adam'] as const) {
    let fusedCount = 0;
    const make = (fuse: boolean) => {
      const m = model();
      const opt =
        kind === 'SGD' ? new optim.SGD(m.parameters(), { lr: 0.01, momentum: 0.9 }) : new optim.Adam(m.parameters(), { lr: 1e-3 });
      const f = compile(
        (x: A.Tensor, y: Int32Array) => {
          const loss = crossEntropy(m.forward(x), y);
          loss.backward();
          opt.step();
          opt.zeroGrad();
          return loss;
        },
        { fuse },
      );
      let i = 0;
      return () => {
        const b = batches[i++ % batches.length];
        f(b.x, b.y).dispose();
        fusedCount = Math.max(fusedCount, f.stats.fused);
      };
    };
    const [u, f] = medians([make(false), make(true)], 10);
    out.push(
      `| MLP step, ${kind} (compiled; ${fusedCount} launches fused) | | ${both(u)} | ${both(f)} | ${(u[0] / f[0]).toFixed(2)}×, ${(u[1] / f[1]).toFixed(2)}× |`,
    );
  }
  console.log(`\n${out.join('\n')}`);
}
