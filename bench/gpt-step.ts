// The tiny-Shakespeare GPT's compiled training step on random token batches, for the thread
// benches (bench/threads-step.ts, bench/threads-plan.ts): 4 layers, 4 heads, width 128, context
// 64, batch 12, AdamW with decay on matrices only, no clipping (bench/gpt.ts times the CLI's step).
import * as A from '../src/index.js';
import { GPT } from '../src/nn/gpt.js';
import { randomLabels } from './timing.js';

const [V, T, B] = [65, 64, 12];

/** A runner of the compiled GPT step over `batches` fixed random batches (seeds 300+i, 400+i), in turn. */
export function gptRunner(batches = 4): () => void {
  const m = new GPT({ vocabSize: V, layers: 4, heads: 4, width: 128, context: T, seed: 0 });
  const params = m.parameters();
  const opt = new A.optim.AdamW(
    [
      { params: params.filter((p) => p.shape.length >= 2), weightDecay: 0.1 },
      { params: params.filter((p) => p.shape.length < 2), weightDecay: 0 },
    ],
    { lr: 1e-3, betas: [0.9, 0.99] },
  );
  const f = A.compile((ids: Int32Array, y: Int32Array) => {
    const loss = A.crossEntropy(A.reshape(m.forward({ ids, shape: [B, T] }), [-1, V]), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  });
  const data = Array.from({ length: batches }, (_, s) => ({ x: randomLabels(B * T, V, 300 + s), y: randomLabels(B * T, V, 400 + s) }));
  let i = 0;
  return () => {
    const b = data[i++ % data.length];
    const loss = f(b.x, b.y);
    loss.item();
    loss.dispose();
  };
}
