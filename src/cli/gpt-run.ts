// One GPT training run on a text, as the published tiny-Shakespeare CPU setup (nanoGPT; with biases unless bias: false): AdamW (betas
// 0.9/0.99, weight decay 0.1 on matrices only), lr 1e-3 with linear warm-up over 100 steps then
// cosine decay toward 1e-4 (nanoGPT's get_lr, lr_decay_iters = steps), gradient-norm clipping at 1.0. The whole step (forward,
// backward, clip, AdamW) is one compile()d function of the batch's int32 tensors, so from the
// fourth step on it replays a fixed kernel schedule. No Node APIs here: the CLI, the benchmark
// and the demo's Web Worker all drive this.
import { ArgumentError } from '../errors.js';
import { tidy } from '../tensor/memory.js';
import { noGrad } from '../autodiff/transforms.js';
import { crossEntropy, reshape } from '../ops/api.js';
import type { Tensor } from '../ops/tensor.js';
import { compile, type Compiled } from '../compile/compile.js';
import { kernel } from '../wasm/module.js';
import { GPT, type TokenIds } from '../nn/gpt.js';
import * as optim from '../optim/index.js';
import { clipGradNorm } from '../optim/clip.js';
import { CharTokenizer, splitText, lmBatches, type LmBatch } from '../data/text.js';

export interface GptRunConfig {
  layers: number;
  heads: number;
  width: number;
  context: number;
  batch: number;
  steps: number;
  seed: number;
  lr?: number;
  minLr?: number;
  warmup?: number;
  /** Linear/LayerNorm biases; default true (false is nanoGPT's published model, train.py's bias = False; docs/gpt.md says why the default differs). */
  bias?: boolean;
}

/**
 * lr at step s (0-based) of `steps`: nanoGPT's get_lr with lr_decay_iters = steps, i.e. warm-up
 * lr·(s+1)/(warmup+1), then cosine from lr over steps − warmup steps toward minLr (cos in wasm).
 */
export function gptLr(s: number, steps: number, lr = 1e-3, minLr = 1e-4, warmup = 100): number {
  if (s < warmup) return (lr * (s + 1)) / (warmup + 1);
  const ratio = Math.min(1, (s - warmup) / Math.max(1, steps - warmup));
  return minLr + 0.5 * (1 + kernel('cos_scalar')(Math.PI * ratio)) * (lr - minLr);
}

export class GptRun {
  readonly tokenizer: CharTokenizer;
  readonly model: GPT;
  readonly optimizer: optim.AdamW;
  readonly train: Int32Array;
  readonly val: Int32Array;
  /** Steps taken so far. */
  step = 0;
  private readonly batches: Generator<LmBatch, never>;
  private readonly valBatches: Generator<LmBatch, never>;
  /** One training step of a batch (x, y), compiled: returns the mean loss as a tensor [] (see trainStep). */
  readonly stepFn: Compiled<[Tensor, Tensor], Tensor>;

  constructor(
    text: string,
    readonly config: GptRunConfig,
    tokenizer = CharTokenizer.fromText(text),
  ) {
    this.tokenizer = tokenizer;
    const ids = tokenizer.encode(text);
    ({ train: this.train, val: this.val } = splitText(ids, 0.9));
    const c = config;
    // Checked here, not at the first validation draw: that comes after training, and a run
    // that trained for minutes would then end without its --save.
    for (const [name, part] of [
      ['training', this.train],
      ['validation', this.val],
    ] as const) {
      if (part.length < c.context + 1) {
        throw new ArgumentError(
          `the ${name} split has ${part.length} characters, but a window of context ${c.context} needs ${c.context + 1}: use more text or a smaller --context`,
        );
      }
    }
    this.model = new GPT({
      vocabSize: tokenizer.vocabSize,
      layers: c.layers,
      heads: c.heads,
      width: c.width,
      context: c.context,
      bias: c.bias ?? true,
      seed: c.seed,
    });
    const params = this.model.parameters();
    this.optimizer = new optim.AdamW(
      [
        { params: params.filter((p) => p.shape.length >= 2), weightDecay: 0.1 },
        { params: params.filter((p) => p.shape.length < 2), weightDecay: 0 },
      ],
      { lr: c.lr ?? 1e-3, betas: [0.9, 0.99] },
    );
    this.stepFn = compile((x: Tensor, y: Tensor) => {
      const m = this.model;
      const l = crossEntropy(reshape(m.forward(x), [-1, m.vocabSize]), reshape(y, [-1]));
      l.backward();
      clipGradNorm(params, 1.0);
      this.optimizer.step();
      this.optimizer.zeroGrad();
      return l;
    });
    this.batches = lmBatches(this.train, { batchSize: c.batch, blockSize: c.context, seed: c.seed * 2 + 1 });
    this.valBatches = lmBatches(this.val, { batchSize: c.batch, blockSize: c.context, seed: c.seed * 2 + 2 });
  }

  /** Tokens per training step. */
  get tokensPerStep(): number {
    return this.config.batch * this.config.context;
  }

  /** One update (forward, backward, clip, AdamW); returns the batch's mean loss. */
  trainStep(): number {
    const c = this.config;
    this.optimizer.lr = gptLr(this.step, c.steps, c.lr, c.minLr, c.warmup);
    const loss = tidy(() => {
      const b = this.batches.next().value;
      return this.stepFn(b.x, b.y).item();
    });
    this.step++;
    return loss;
  }

  /** Mean loss over `n` random validation batches (the stream continues between calls). */
  evalRandom(n = 20): number {
    let s = 0;
    for (let i = 0; i < n; i++) {
      s += tidy(() => {
        const b = this.valBatches.next().value;
        return this.loss(b.x, reshape(b.y, [-1]), 'mean');
      });
    }
    return s / n;
  }

  /**
   * Mean loss per character over the whole validation split: consecutive non-overlapping windows
   * of `context` characters, each predicting the next `context` (the incomplete tail dropped).
   */
  evalFull(windowsPerBatch = 64): number {
    const T = this.config.context,
      n = Math.floor((this.val.length - 1) / T);
    let total = 0;
    for (let s = 0; s < n; s += windowsPerBatch) {
      const b = Math.min(windowsPerBatch, n - s);
      const x = this.val.subarray(s * T, (s + b) * T),
        y = this.val.subarray(s * T + 1, (s + b) * T + 1);
      total += this.loss({ ids: x, shape: [b, T] }, y, 'sum');
    }
    return total / (n * T);
  }

  private loss(x: TokenIds, y: Int32Array | Tensor, reduction: 'mean' | 'sum'): number {
    const m = this.model,
      wasTraining = m.training;
    m.eval();
    try {
      return tidy(() => noGrad(() => crossEntropy(reshape(m.forward(x), [-1, m.vocabSize]), y, { reduction }).item()));
    } finally {
      m.train(wasTraining);
    }
  }

  dispose(): void {
    this.stepFn.reset();
    this.optimizer.dispose();
    this.model.dispose();
  }
}
