// Trains the GPT of model.mjs on tiny Shakespeare with the published CPU recipe (shortened by
// STEPS) and prints a sample. Run from the adjoint repository after `npm run build`:
//   node examples/gpt/train.mjs [steps]
import { init, data, optim, crossEntropy, reshape, clipGradNorm, tidy, noGrad, softmax, tensor, rand } from 'adjoint';
import { GPT } from './model.mjs';

const STEPS = Number(process.argv[2] ?? 300),
  BATCH = 12,
  CONTEXT = 64;
await init();
const text = await data.shakespeare();
const tok = data.CharTokenizer.fromText(text);
const { train } = data.splitText(tok.encode(text), 0.9);
const model = new GPT({ vocabSize: tok.vocabSize, context: CONTEXT });
const params = model.parameters();
const opt = new optim.AdamW(
  [
    { params: params.filter((p) => p.shape.length >= 2), weightDecay: 0.1 },
    { params: params.filter((p) => p.shape.length < 2), weightDecay: 0 },
  ],
  { lr: 1e-3, betas: [0.9, 0.99] },
);
// nanoGPT's schedule: 100 warm-up steps, then cosine decay over the remaining steps toward 1e-4.
const lrAt = (s) =>
  s < 100 ? (1e-3 * (s + 1)) / 101 : 1e-4 + 0.5 * (1 + Math.cos(Math.PI * Math.min(1, (s - 100) / Math.max(1, STEPS - 100)))) * 9e-4;
const batches = data.lmBatches(train, { batchSize: BATCH, blockSize: CONTEXT, seed: 1 });
for (let s = 0; s < STEPS; s++) {
  opt.lr = lrAt(s);
  const loss = tidy(() => {
    const b = batches.next().value; // x, y: int32 tensors [12, 64], disposed with the tidy
    const l = crossEntropy(reshape(model.forward(b.x), [-1, tok.vocabSize]), reshape(b.y, [-1]));
    l.backward();
    clipGradNorm(params, 1);
    opt.step();
    opt.zeroGrad();
    return l.item();
  });
  if ((s + 1) % 50 === 0) console.log(`step ${s + 1}/${STEPS}  loss ${loss.toFixed(4)}`);
}

// Sampling without a cache (nn.GPT.generate has one): the whole window each token.
const ids = Array.from(tok.encode('ROMEO:'));
const u = rand([200], { seed: 2, dtype: 'float64' }).toArray();
noGrad(() => {
  for (let i = 0; i < 200; i++) {
    const window = ids.slice(-CONTEXT);
    const p = tidy(() => {
      const logits = model
        .forward({ ids: window, shape: [1, window.length] })
        .toArray()
        .slice(-tok.vocabSize);
      return softmax(
        tensor(
          logits.map((v) => v / 0.8),
          { dtype: 'float64' },
        ),
      ).toArray();
    });
    let c = 0,
      next = p.length - 1;
    for (let j = 0; j < p.length; j++)
      if (u[i] < (c += p[j])) {
        next = j;
        break;
      }
    ids.push(next);
  }
});
console.log(tok.decode(ids));
