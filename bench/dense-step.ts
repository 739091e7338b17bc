// The thread benches' dense training steps (bench/threads-step.ts, threads-plan.ts,
// threads-anatomy.ts, pause-replay.ts): the MLP 784-256-256-10 with ReLU or the deep 32×256 tanh MLP, batch 128,
// cross-entropy, plain SGD (lr 0.01) or Adam (lr 1e-3), seeded so every bench builds the same
// weights and batches.
import * as A from '../src/index.js';
import { randomLabels, randomValues } from './timing.js';

export type DenseModel = 'mlp' | 'deep';
export const DENSE_BATCH = 128;

/** One training step's function (forward, backward, update, zeroGrad; returns the loss). */
export type DenseStep = (x: A.Tensor, y: Int32Array) => A.Tensor;

/** The model's training step, not yet compiled, and its input width. */
export function denseStep(model: DenseModel, optim: 'sgd' | 'adam'): { step: DenseStep; inputs: number } {
  const sizes = model === 'deep' ? [256, ...Array<number>(32).fill(256), 10] : [784, 256, 256, 10];
  const layers: A.nn.Module[] = [];
  for (let i = 0; i + 1 < sizes.length; i++) {
    layers.push(new A.nn.Linear(sizes[i], sizes[i + 1], { seed: 10 + i }));
    if (i + 2 < sizes.length) layers.push(model === 'deep' ? new A.nn.Tanh() : new A.nn.ReLU());
  }
  const m = new A.nn.Sequential(...layers);
  const opt = optim === 'adam' ? new A.optim.Adam(m.parameters(), { lr: 1e-3 }) : new A.optim.SGD(m.parameters(), { lr: 0.01 });
  const step = (x: A.Tensor, y: Int32Array) => {
    const loss = A.crossEntropy(m.forward(x), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { step, inputs: sizes[0] };
}

/** Random batch number `s` (inputs seeded 100 + s, labels 200 + s) for a model of `inputs` features. */
export function denseBatch(inputs: number, s = 0): { x: A.Tensor; y: Int32Array } {
  return {
    x: A.tensor(randomValues(DENSE_BATCH * inputs, 100 + s), { shape: [DENSE_BATCH, inputs] }),
    y: randomLabels(DENSE_BATCH, 10, 200 + s),
  };
}

/** The compiled SGD step of `model` on batch 0, as a function that runs one step (the loss disposed). */
export function compiledDenseRunner(model: DenseModel): () => void {
  const { step, inputs } = denseStep(model, 'sgd');
  const f = A.compile(step);
  const { x, y } = denseBatch(inputs);
  return () => f(x, y).dispose();
}
