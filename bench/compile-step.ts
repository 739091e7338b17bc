// Eager vs compile() on the MLP training step of issue 6 (784-256-256-10, batch 128, ReLU,
// crossEntropy) with SGD + momentum and with Adam, the README's digits step (with dropout), the
// forward pass alone, and a tiny call (the fixed overhead per call). One thread, f32.
// Run: node scripts/run-ts.mjs bench/compile-step.ts (prints a markdown table; wall and CPU medians).
import * as A from '../src/index.js';
import { randomValues, randomLabels } from './timing.js';

await A.init({ threads: 1 });
const { nn, optim, tidy, noGrad, crossEntropy, tensor, compile, add } = A;
const BATCH = 128, SIZES = [784, 256, 256, 10];

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
  const wall: [number[], number[]] = [[], []], cpu: [number[], number[]] = [[], []];
  const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
  for (let r = 0; r < rounds; r++) {
    [a, b].forEach((f, k) => {
      const t0 = performance.now(), c0 = cpuNow();
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
  rows.push([name, `${fmt(r.a[0], unit)} (cpu ${fmt(r.a[1], unit)})`, `${fmt(r.b[0], unit)} (cpu ${fmt(r.b[1], unit)})`, (r.a[0] / r.b[0]).toFixed(2)]);
}

for (const kind of ['SGD', 'Adam'] as const) {
  const runner = (compiled: boolean) => {
    const m = model();
    const opt = kind === 'SGD' ? new optim.SGD(m.parameters(), { lr: 0.01, momentum: 0.9 }) : new optim.Adam(m.parameters(), { lr: 1e-3 });
    const step = (x: A.Tensor, y: Int32Array) => {
      const loss = crossEntropy(m.forward(x), y);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss;
    };
    const f = compiled ? compile(step) : (x: A.Tensor, y: Int32Array) => tidy(() => step(x, y));
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

{
  // The README's digits example: 64-512-10 with dropout 0.5, SGD + Nesterov momentum, batch 32.
  const runner = (compiled: boolean) => {
    const m = new nn.Sequential(new nn.Linear(64, 512, { seed: 1 }), new nn.ReLU(), new nn.Dropout(0.5, { seed: 2 }), new nn.Linear(512, 10, { seed: 3 }));
    const opt = new optim.SGD(m.parameters(), { lr: 0.1, momentum: 0.9, nesterov: true });
    const step = (x: A.Tensor, y: Int32Array) => {
      const loss = crossEntropy(m.forward(x), y);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss;
    };
    const f = compiled ? compile(step) : (x: A.Tensor, y: Int32Array) => tidy(() => step(x, y));
    const data = [0, 1, 2, 3].map((s) => ({ x: tensor(randomValues(32 * 64, 300 + s), { shape: [32, 64] }), y: randomLabels(32, 10, 400 + s) }));
    let i = 0;
    return () => {
      const b = data[i++ % data.length];
      f(b.x, b.y).dispose();
    };
  };
  row('digits MLP 64-512-10 + dropout, batch 32, SGD', pair(runner(false), runner(true), 50));
}

{
  const m = model();
  const fwd = (x: A.Tensor) => noGrad(() => m.forward(x));
  const f = compile(fwd);
  row('MLP forward (noGrad)', pair(() => tidy(() => fwd(batches[0].x)).dispose(), () => f(batches[0].x).dispose(), 20));
}

{
  const a = tensor([0.1, 0.2, 0.3, 0.4]), b = tensor([0.01, 0.01, 0.01, 0.01]);
  const f = compile((x: A.Tensor, y: A.Tensor) => add(x, y));
  const r = pair(() => add(a, b).dispose(), () => f(a, b).dispose(), 20000);
  row('add of 4 elements (one call)', r, 'µs');
}

console.log('| workload | eager | compiled | speed-up |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
