// DP-SGD on the built-in digits, written out with the public API: per-example gradients from
// one vmap(grad) pass over the model's parameters (functionalCall), each clipped to L2 norm C,
// summed, seeded Gaussian noise N(0, σ²C²) added, divided by the batch. Compared with the same
// model trained without privacy on the same batches.
// Run (from the repo root): node scripts/run-ts.mjs examples/dp-sgd/train.ts [C] [σ]
import * as A from '../../src/index.js';
import type { Tensor } from '../../src/index.js';

await A.init();
const C = Number(process.argv[2] ?? 1), SIGMA = Number(process.argv[3] ?? 1);
const EPOCHS = 20, BATCH = 64, LR = 0.1, CLASSES = 10;
const data = A.data.digits({ seed: 0 });

const makeModel = () => new A.nn.Sequential(new A.nn.Linear(64, 128, { seed: 1 }), new A.nn.ReLU(), new A.nn.Linear(128, CLASSES, { seed: 2 }));

/** One example's loss: x [1, 64], y one-hot [1, 10]. */
const lossOf = (model: A.nn.Sequential) => (p: Record<string, Tensor>, x: Tensor, y: Tensor): Tensor =>
  A.neg(A.sum(A.mul(A.logSoftmax(A.functionalCall(model, p, x)), y)));

/** The DP-SGD gradient of a batch, as tensors by parameter name. */
function privateGradients(model: A.nn.Sequential, x: Tensor, labels: Int32Array, seed: number): Record<string, Tensor> {
  const n = x.shape[0];
  const params = Object.fromEntries(model.namedParameters());
  const onehot = A.tensor(Array.from({ length: n * CLASSES }, (_, k) => (labels[Math.floor(k / CLASSES)] === k % CLASSES ? 1 : 0)), { shape: [n, 1, CLASSES] });
  const perExample = A.vmap(A.grad(lossOf(model)), { inAxes: [null, 0, 0] });
  const g = perExample(params, A.reshape(x, [n, 1, 64]), onehot) as unknown as Record<string, Tensor>; // each [n, ...shape]
  const norms = A.sqrt(Object.values(g).map((t) => A.sum(A.square(A.reshape(t, [n, -1])), 1)).reduce((a, b) => A.add(a, b)));
  const scale = A.minimum(A.div(C, A.add(norms, 1e-12)), 1); // min(1, C/‖g_i‖)
  return Object.fromEntries(Object.entries(g).map(([name, t], i) => {
    const clipped = A.sum(A.mul(t, A.reshape(scale, [n, ...t.shape.slice(1).map(() => 1)])), 0);
    const noise = A.mul(A.randn(clipped.shape, { seed: seed * 100 + i }), SIGMA * C);
    return [name, A.div(A.add(clipped, noise), n)];
  }));
}

function train(priv: boolean): number {
  const model = makeModel();
  const named = model.namedParameters();
  const opt = new A.optim.SGD(named.map(([, p]) => p), { lr: LR, momentum: 0.9 });
  let step = 0;
  for (let e = 0; e < EPOCHS; e++) {
    for (const b of A.data.batches(data.xTrain, data.yTrain, { batchSize: BATCH, seed: e })) {
      A.tidy(() => {
        if (priv) {
          const g = privateGradients(model, b.x, b.y, step);
          for (const [name, p] of named) p.grad = A.keep(g[name]);
        } else A.crossEntropy(model.forward(b.x), b.y).backward();
        opt.step();
        opt.zeroGrad();
      });
      step++;
    }
  }
  const logits = A.tidy(() => A.noGrad(() => model.forward(data.xTest).toArray()));
  let correct = 0;
  data.yTest.forEach((y, i) => {
    const row = logits.subarray(i * CLASSES, (i + 1) * CLASSES);
    if (row.indexOf(Math.max(...row)) === y) correct++;
  });
  return correct / data.yTest.length;
}

const plain = train(false), priv = train(true);
console.log(`digits, MLP 64-128-10, ${EPOCHS} epochs of batch ${BATCH}, SGD lr ${LR} momentum 0.9`);
console.log(`  non-private test accuracy        ${(100 * plain).toFixed(2)}%`);
console.log(`  DP-SGD (C = ${C}, σ = ${SIGMA}) test accuracy  ${(100 * priv).toFixed(2)}%`);
