// A second-order training step next to a first-order one, on the bench MLP (784-256-256-10,
// batch 128, ReLU, float32, nn.Linear's fused dense layers). The first-order step is
// crossEntropy → backward(). The second-order step adds a WGAN-GP gradient penalty
// 10·mean((‖∂D/∂x_n‖ − 1)²) with D = Σ logits: grad() of the critic with respect to the input,
// recorded because the parameters it captures require grad, then one backward() through the
// sum (a double backward through every layer). The target is a ratio of at most about 4.
//
// Run: node scripts/run-ts.mjs bench/second-order.ts [--quick]
// Times are process CPU time; the two steps alternate round by round and the ratio is the
// median over rounds of (second-order step / first-order step of the same round), so load that
// drifts hits both sides of each ratio.
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

await A.init();
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 5 : 15,
  REPS = quick ? 3 : 5,
  B = 128;

const model = new A.nn.Sequential(
  new A.nn.Linear(784, 256, { seed: 1 }),
  new A.nn.ReLU(),
  new A.nn.Linear(256, 256, { seed: 2 }),
  new A.nn.ReLU(),
  new A.nn.Linear(256, 10, { seed: 3 }),
);
const x = A.keep(A.rand([B, 784], { seed: 4 }));
const labels = Int32Array.from({ length: B }, (_, i) => (i * 7) % 10);
const params = model.parameters();

const opt = new A.optim.SGD(params, { lr: 0.01 });
function sgd(): void {
  opt.step();
  opt.zeroGrad();
}

function firstOrder(): void {
  A.tidy(() => A.crossEntropy(model.forward(x), labels).backward());
  sgd();
}

function secondOrder(): void {
  A.tidy(() => {
    const g = A.grad((z: Tensor) => A.sum(model.forward(z)))(x) as Tensor; // [B, 784]
    const gp = A.mean(A.square(A.sub(A.sqrt(A.sum(A.square(g), 1)), 1)));
    A.add(A.crossEntropy(model.forward(x), labels), A.mul(gp, 10)).backward();
  });
  sgd();
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const timeOf = (f: () => void): number => {
  const t0 = cpuMs();
  for (let i = 0; i < REPS; i++) f();
  return (cpuMs() - t0) / REPS;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

for (let i = 0; i < 3; i++) firstOrder(), secondOrder(); // warm-up
const live = A.memory().tensors;
const first: number[] = [],
  second: number[] = [],
  ratio: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const a = timeOf(firstOrder),
    b = timeOf(secondOrder);
  first.push(a);
  second.push(b);
  ratio.push(b / a);
}
console.log(`MLP 784-256-256-10, batch ${B}, float32, ${ROUNDS} rounds × ${REPS} steps (CPU ms per step, medians)`);
console.log(`  first-order step (crossEntropy, backward)             ${median(first).toFixed(2)} ms`);
console.log(`  second-order step (+ gradient penalty, double backward) ${median(second).toFixed(2)} ms`);
console.log(`  ratio (median of per-round ratios)                     ${median(ratio).toFixed(2)}×  (target ≤ ~4×)`);
console.log(`  live tensors: ${live} after warm-up, ${A.memory().tensors} after the run (no leak: equal)`);
