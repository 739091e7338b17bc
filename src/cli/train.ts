// The `adjoint train` loop: load data, build the model and optimizer, then per epoch a seeded
// shuffle, one tidy() per step (forward, loss, backward, update: memory stays flat), and
// train/test accuracy in evaluation mode. The step is compile()d: the same bits as eager mode
// without its per-op dispatch; a step a hook watches, and DP-SGD, run eagerly.
import type { Tensor } from '../ops/tensor.js';
import { tidy } from '../tensor/memory.js';
import { noGrad } from '../autodiff/transforms.js';
import { compile, type Compiled } from '../compile/compile.js';
import { crossEntropy, slice } from '../ops/api.js';
import type { Module, Sequential } from '../nn/index.js';
import { setFeedback } from '../nn/linear.js';
import * as optim from '../optim/index.js';
import { dpGradients } from '../optim/dp.js';
import { digits, fashionMnist, batches, batchCount, type Split } from '../data/index.js';
import type { TrainArgs } from './args.js';
import { buildModel, describeModel } from './models.js';
import { Progress, percent, rate, threadsText, type Sink } from './progress.js';
import { backend } from '../wasm/backend.js';

export interface TrainResult {
  model: Sequential;
  trainAccuracy: number;
  testAccuracy: number;
  seconds: number;
  history: EpochRecord[];
  /** Steps run by the compiled update and eagerly (DP-SGD, or a step a hook watched). */
  steps: { compiled: number; eager: number };
}

export interface EpochRecord {
  epoch: number;
  loss: number;
  trainAccuracy: number;
  testAccuracy: number;
  seconds: number;
}

/** Observers of a run (diagnostics, plots: src/cli/compare.ts). Steps count from 0 over the run. */
export interface TrainHooks {
  begin?(model: Module, data: Split, stepsPerEpoch: number): void;
  /** Whether afterBackward wants step `step` (absent: every step). The other steps run compiled, out of a hook's sight. */
  watches?(step: number): boolean;
  /** After the step's backward pass, before the update: the gradients are live. */
  afterBackward?(model: Module, step: number, batch: { x: Tensor; y: Int32Array }): void;
  afterEpoch?(model: Module, record: EpochRecord): void;
}

/** Fraction of rows whose largest logit is the label, in batches without recording. */
export function accuracy(model: Module, x: Tensor, y: Int32Array, batch = 512): number {
  const n = x.shape[0],
    rest = x.shape.slice(1);
  let correct = 0;
  for (let start = 0; start < n; start += batch) {
    const m = Math.min(batch, n - start);
    const logits = tidy(() => noGrad(() => model.forward(slice(x, [start, ...rest.map(() => 0)], [m, ...rest])).toArray()));
    const c = logits.length / m;
    for (let i = 0; i < m; i++) {
      let best = 0;
      for (let j = 1; j < c; j++) if (logits[i * c + j] > logits[i * c + best]) best = j;
      if (best === y[start + i]) correct++;
    }
  }
  return n === 0 ? 0 : correct / n;
}

function makeOptimizer(args: TrainArgs, params: Tensor[]): optim.Optimizer {
  if (args.optimizer === 'sgd') return new optim.SGD(params, { lr: args.lr, momentum: 0.9, nesterov: true });
  if (args.optimizer === 'adamw') return new optim.AdamW(params, { lr: args.lr });
  return new optim.Adam(params, { lr: args.lr });
}

/** "sgd lr 0.1 (linear decay), batch 32, 40 epochs, seed 0": the run's header line and its plots' subtitle. */
export function runSummary(args: TrainArgs): string {
  return `${args.optimizer} lr ${args.lr} (linear decay), batch ${args.batch}, ${args.epochs} epoch${args.epochs === 1 ? '' : 's'}, seed ${args.seed}`;
}

async function loadData(args: TrainArgs): Promise<Split> {
  return args.dataset === 'digits' ? digits({ seed: args.seed }) : fashionMnist(args.data!);
}

/** One run's step: the model, its optimizer, and the compiled update (null for DP-SGD, whose noise seed changes every step). */
interface Stepper {
  model: Module;
  opt: optim.Optimizer;
  compiled: Compiled<[Tensor, Int32Array], Tensor> | null;
  counts: { compiled: number; eager: number };
}

function stepper(model: Module, opt: optim.Optimizer, args: TrainArgs): Stepper {
  const update = (x: Tensor, y: Int32Array): Tensor => {
    const loss = crossEntropy(model.forward(x), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { model, opt, compiled: args.dpClip === null ? compile(update) : null, counts: { compiled: 0, eager: 0 } };
}

/** Step `step` of the run on batch b, inside the caller's tidy(); returns its loss. */
function trainStep(s: Stepper, b: { x: Tensor; y: Int32Array }, args: TrainArgs, step: number, hooks: TrainHooks): number {
  const { model, opt } = s;
  const watched = hooks.afterBackward !== undefined && (hooks.watches?.(step) ?? true);
  if (!watched && s.compiled !== null) {
    s.counts.compiled++;
    return s.compiled(b.x, b.y).item();
  }
  s.counts.eager++;
  if (args.dpClip !== null) {
    // DP-SGD: per-example gradient norms (without per-example gradients for Linear-only models, else vmap), clipped, summed, noised; each step its own noise seed.
    const loss = dpGradients(model, b.x, b.y, 10, { clip: args.dpClip, noise: args.dpNoise, seed: args.seed * 1_000_003 + step });
    hooks.afterBackward?.(model, step, b);
    opt.step();
    opt.zeroGrad();
    return loss;
  }
  const loss = crossEntropy(model.forward(b.x), b.y);
  loss.backward();
  hooks.afterBackward?.(model, step, b);
  opt.step();
  opt.zeroGrad();
  return loss.item();
}

/** Epoch e's updates (its own shuffle seed); returns the mean training loss. */
function epoch(s: Stepper, data: Split, args: TrainArgs, e: number, progress: Progress, hooks: TrainHooks): number {
  const t0 = performance.now();
  let lossSum = 0,
    steps = 0;
  const first = (e - 1) * batchCount(data.xTrain.shape[0], args.batch);
  for (const b of batches(data.xTrain, data.yTrain, { batchSize: args.batch, seed: args.seed * 1000 + e })) {
    lossSum += tidy(() => trainStep(s, b, args, first + steps, hooks));
    steps++;
    progress.tick(steps, lossSum / steps, (performance.now() - t0) / 1000);
  }
  return lossSum / steps;
}

export async function train(args: TrainArgs, out: Sink, hooks: TrainHooks = {}): Promise<TrainResult> {
  const start = performance.now();
  const data = await loadData(args);
  const model = buildModel(args.dataset, args.model, args.seed);
  // Same seed, same initial weights as backprop: only the backward rule differs.
  if (args.feedback !== 'bp') setFeedback(model, args.feedback, args.seed);
  const opt = makeOptimizer(args, model.parameters());
  const s = stepper(model, opt, args);
  const steps = batchCount(data.xTrain.shape[0], args.batch);
  out.write(`training ${args.model} on ${args.dataset}: ${data.xTrain.shape[0]} train / ${data.xTest.shape[0]} test examples\n`);
  out.write(`model ${describeModel(model)}; ${runSummary(args)}, ${threadsText(backend().threads)}\n`);
  if (args.dpClip !== null)
    out.write(
      `DP-SGD: per-example gradients clipped to norm ${args.dpClip}, Gaussian noise σ = ${args.dpNoise} (std ${args.dpNoise * args.dpClip})\n`,
    );
  let trainAccuracy = 0,
    testAccuracy = 0;
  const history: EpochRecord[] = [];
  hooks.begin?.(model, data, steps);
  for (let e = 1; e <= args.epochs; e++) {
    const label = `epoch ${e}/${args.epochs}`;
    const progress = new Progress(out, label, steps);
    // Linear decay: lr·(1 − (e − 1)/E), so the last epoch runs at lr/E.
    opt.lr = args.lr * (1 - (e - 1) / args.epochs);
    model.train();
    const t0 = performance.now();
    const loss = epoch(s, data, args, e, progress, hooks);
    const seconds = (performance.now() - t0) / 1000;
    model.eval();
    trainAccuracy = accuracy(model, data.xTrain, data.yTrain);
    testAccuracy = accuracy(model, data.xTest, data.yTest);
    progress.finish(
      `${label}  ${steps} steps  ${seconds.toFixed(2)} s  ${rate(steps, seconds)} steps/s  loss ${loss.toFixed(4)}  train ${percent(trainAccuracy)}  test ${percent(testAccuracy)}`,
    );
    history.push({ epoch: e, loss, trainAccuracy, testAccuracy, seconds });
    hooks.afterEpoch?.(model, history[history.length - 1]);
  }
  s.compiled?.reset(); // frees its plans
  opt.dispose();
  for (const t of [data.xTrain, data.xTest]) t.dispose();
  return { model, trainAccuracy, testAccuracy, seconds: (performance.now() - start) / 1000, history, steps: s.counts };
}
