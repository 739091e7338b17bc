// Fused dense layers, before/after in one process: the MLP 784-256-256-10 (batch 128, ReLU,
// cross-entropy) and the deep tanh MLP 32×256 (batch 64, MSE) of bench/workloads.ts, trained
// with Adam, each run three ways on the same parameters:
//   ops         matmul(x, Wᵀ) → add(b) → act as separate ops: the library before fusion
//   modules     each module on its own: Linear = dense(act 'none'), then the activation op
//   sequential  nn.Sequential: Linear + activation as one dense(act)
// The variants are interleaved round-robin (so machine noise hits all three alike) and the
// median of many repetitions is reported (CPU time: steadier on a shared machine; and wall).
// Usage: node scripts/run-ts.mjs bench/dense.ts [--threads N] [--reps N]
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { matmulT } from '../src/ops/api.js';
import { MLP, DEEP, mlpData, deepData } from './workloads.js';

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number): number => {
  const i = argv.indexOf(name);
  return i < 0 ? dflt : Number(argv[i + 1]);
};
await A.init(argv.includes('--threads') ? { threads: flag('--threads', 1) } : {});
const reps = flag('--reps', 200);

type Net = (h: Tensor) => Tensor;
interface Workload {
  name: string;
  x: Tensor;
  model: A.nn.Sequential;
  act: Net;
  loss: (out: Tensor) => Tensor;
}

/** The three ways to run a Sequential of Linear → act pairs (the last Linear may stand alone). */
function variantsOf(w: Workload): Record<string, Net> {
  const linears = w.model.layers.filter((m): m is A.nn.Linear => m instanceof A.nn.Linear);
  const actAfter = linears.map((l) => w.model.layers[w.model.layers.indexOf(l) + 1] !== undefined);
  return {
    ops: (h) =>
      linears.reduce((t, l, i) => {
        const z = A.add(matmulT(t, l.weight, false, true), l.bias!);
        return actAfter[i] ? w.act(z) : z;
      }, h),
    modules: (h) => w.model.layers.reduce((t, m) => m.forward(t), h),
    sequential: (h) => w.model.forward(h),
  };
}

function mlp(): Workload {
  const d = mlpData(),
    [i0, h1, h2, o] = MLP.layers;
  return {
    name: `MLP ${MLP.layers.join('-')} relu, batch ${MLP.batch}`,
    x: A.keep(A.tensor(d.x, { shape: [MLP.batch, i0] })),
    model: new A.nn.Sequential(
      new A.nn.Linear(i0, h1, { seed: 1 }),
      new A.nn.ReLU(),
      new A.nn.Linear(h1, h2, { seed: 2 }),
      new A.nn.ReLU(),
      new A.nn.Linear(h2, o, { seed: 3 }),
    ),
    act: A.relu,
    loss: (out) => A.crossEntropy(out, d.labels),
  };
}

function deep(): Workload {
  const d = deepData(),
    target = A.keep(A.tensor(d.target, { shape: [DEEP.batch, DEEP.width] }));
  const layers = Array.from({ length: DEEP.depth }, (_, i) => [
    new A.nn.Linear(DEEP.width, DEEP.width, { seed: 10 + i }),
    new A.nn.Tanh(),
  ]).flat();
  return {
    name: `deep tanh MLP ${DEEP.depth}×${DEEP.width}, batch ${DEEP.batch}`,
    x: A.keep(A.tensor(d.x, { shape: [DEEP.batch, DEEP.width] })),
    model: new A.nn.Sequential(...layers),
    act: A.tanh,
    loss: (out) => A.mseLoss(out, target),
  };
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function measure(kind: string, variants: Record<string, Net>, make: (f: Net) => () => void): void {
  const names = Object.keys(variants),
    runs = names.map((n) => make(variants[n]));
  const wall: number[][] = names.map(() => []),
    cpu: number[][] = names.map(() => []);
  for (let r = 0; r < 20; r++) runs.forEach((run) => run()); // warm-up: JIT, arena size classes
  for (let r = 0; r < reps; r++) {
    runs.forEach((run, i) => {
      const t0 = performance.now(),
        c0 = cpuMs();
      run();
      wall[i].push(performance.now() - t0);
      cpu[i].push(cpuMs() - c0);
    });
  }
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
  const base = med(cpu[0]);
  for (let i = 0; i < names.length; i++) {
    const c = med(cpu[i]);
    console.log(
      `  ${kind.padEnd(8)} ${names[i].padEnd(11)} cpu ${c.toFixed(3)} ms (wall ${med(wall[i]).toFixed(3)} ms)  ${(base / c).toFixed(3)}× vs ops`,
    );
  }
}

for (const w of [mlp(), deep()]) {
  const variants = variantsOf(w),
    adam = new A.optim.Adam(w.model.parameters(), { lr: 1e-4 });
  const forward = (f: Net) => () =>
    A.noGrad(() =>
      A.tidy(() => {
        f(w.x).toArray();
      }),
    );
  const step = (f: Net) => () =>
    A.tidy(() => {
      adam.zeroGrad();
      w.loss(f(w.x)).backward();
      adam.step();
    });
  console.log(`${w.name}, float32, ${reps} interleaved reps, median CPU time per call`);
  measure('forward', variants, forward);
  measure('step', variants, step);
}
