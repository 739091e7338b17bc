// The demo's training worker (a module Web Worker): owns the adjoint engine, the digits, the
// model and the optimizer. Training runs in chunks of ~CHUNK_MS so that messages from the page
// (pause, a new learning rate, "predict this drawing") are handled between chunks; the page's
// thread never runs a kernel, so it stays responsive whatever the model costs.
import { init, tidy, noGrad, crossEntropy, softmax, slice, tensor, memory, alignmentAngles, nn, optim, data, io } from '../../src/index.js';
import type { Tensor } from '../../src/index.js';
import type { FromWorker, ModelConfig, ModelInfo, ModelKind, ToWorker, TrainConfig } from './protocol.js';
import { errorText, inbox } from './worker-inbox.js';

/** Training time per chunk: long enough to amortise the message round trip, short enough to feel live. */
const CHUNK_MS = 40;
/** Test-set evaluation interval while training (359 images: a few ms for the MLP). */
const EVAL_MS = 400;
const SEED = 0;
/** Test images used to measure feedback alignment's angle to backprop. */
const PROBE = 128;

const scope = self as unknown as {
  postMessage(m: FromWorker, t?: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
};
const post = (m: FromWorker, transfer: Transferable[] = []) => scope.postMessage(m, transfer);

interface State {
  split: data.Split;
  probe: { x: Tensor; y: Int32Array };
  model: nn.Sequential;
  modelConfig: ModelConfig;
  opt: optim.Optimizer;
  train: TrainConfig;
  running: boolean;
  step: number;
  /** Examples seen since the model was built: the epoch shown is examples / training-set size. */
  examples: number;
  /** The shuffle seed of the current pass over the data, one per pass, as the CLI does. */
  pass: number;
  batches: Generator<data.Batch, void, undefined> | null;
  lastEval: number;
  lastProgress: number;
}
let st: State | null = null;

/**
 * The CLI's digits models (src/cli/models.ts), with `feedback` passed to every Linear layer.
 * Layer i is seeded with seed·100 + i there too, so a demo model starts from the CLI's weights.
 */
function buildModel({ model, feedback }: ModelConfig, seed = SEED): nn.Sequential {
  const s = (i: number) => ({ seed: seed * 100 + i });
  const fc = (i: number, o: number, k: number) => new nn.Linear(i, o, { ...s(k), feedback });
  return model === 'mlp'
    ? new nn.Sequential(fc(64, 512, 0), new nn.ReLU(), new nn.Dropout(0.5, s(2)), fc(512, 10, 3))
    : new nn.Sequential(
        new nn.Unflatten(1, [1, 8, 8]),
        new nn.Conv2d(1, 16, 3, { padding: 1, ...s(1) }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Conv2d(16, 32, 3, { padding: 1, ...s(4) }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Flatten(),
        fc(32 * 2 * 2, 10, 8),
      );
}

/** As the CLI: SGD with Nesterov momentum 0.9; Adam and AdamW with PyTorch's defaults. */
function makeOptimizer(params: Tensor[], { optimizer, lr }: TrainConfig): optim.Optimizer {
  if (optimizer === 'sgd') return new optim.SGD(params, { lr, momentum: 0.9, nesterov: true });
  return optimizer === 'adamw' ? new optim.AdamW(params, { lr }) : new optim.Adam(params, { lr });
}

function describe(model: nn.Sequential, config: ModelConfig): ModelInfo {
  return {
    ...config,
    layers: model.layers.map((m) => m.constructor.name).join(' → '),
    parameters: model.parameters().reduce((a, p) => a + p.size, 0),
  };
}

/** Replaces the model and optimizer with fresh ones; keeps the old pair if construction throws. */
function rebuild(s: State, config: ModelConfig, train: TrainConfig): void {
  const model = buildModel(config);
  s.batches?.return();
  s.opt.dispose();
  s.model.dispose();
  Object.assign(s, {
    model,
    modelConfig: config,
    train,
    opt: makeOptimizer(model.parameters(), train),
    running: false,
    step: 0,
    examples: 0,
    pass: 0,
    batches: null,
  });
  post({ type: 'state', running: false });
  post({ type: 'model', info: describe(model, config), fresh: true });
  evaluate(s);
}

function configure(s: State, train: TrainConfig): void {
  if (train.optimizer !== s.train.optimizer) {
    s.opt.dispose();
    s.opt = makeOptimizer(s.model.parameters(), train);
  }
  s.opt.lr = train.lr;
  if (train.batch !== s.train.batch) {
    // The new size starts a new pass over the shuffled data.
    s.batches?.return();
    s.batches = null;
  }
  s.train = train;
}

function nextBatch(s: State): data.Batch {
  for (;;) {
    s.batches ??= data.batches(s.split.xTrain, s.split.yTrain, { batchSize: s.train.batch, seed: SEED * 1000 + ++s.pass });
    const r = s.batches.next();
    if (!r.done) return r.value;
    s.batches = null;
  }
}

function argmaxRows(values: ArrayLike<number>, rows: number): Int32Array {
  const c = values.length / rows;
  const out = new Int32Array(rows);
  for (let i = 0; i < rows; i++) {
    let best = 0;
    for (let j = 1; j < c; j++) if (values[i * c + j] > values[i * c + best]) best = j;
    out[i] = best;
  }
  return out;
}

/** One chunk of steps (one tidy() per step, so memory stays flat), then a progress message. */
function trainChunk(s: State): void {
  const t0 = performance.now();
  let lossSum = 0,
    correct = 0,
    seen = 0,
    steps = 0;
  s.model.train();
  while (performance.now() - t0 < CHUNK_MS) {
    const b = nextBatch(s);
    const [loss, predicted] = tidy(() => {
      const logits = s.model.forward(b.x);
      const l = crossEntropy(logits, b.y);
      l.backward();
      s.opt.step();
      s.opt.zeroGrad();
      return [l.item(), argmaxRows(logits.toArray(), b.y.length)] as const;
    });
    for (let i = 0; i < predicted.length; i++) if (predicted[i] === b.y[i]) correct++;
    lossSum += loss * b.y.length;
    seen += b.y.length;
    s.examples += b.y.length;
    s.step++;
    steps++;
    if (!Number.isFinite(loss)) break;
  }
  const now = performance.now();
  const loss = lossSum / seen;
  post({
    type: 'progress',
    step: s.step,
    epoch: s.examples / s.split.yTrain.length,
    loss,
    trainAccuracy: correct / seen,
    stepsPerSecond: (steps * 1000) / Math.max(1, now - s.lastProgress),
    memoryBytes: memory().wasmBytes,
  });
  s.lastProgress = now;
  if (!Number.isFinite(loss)) {
    pause(s);
    post({
      type: 'error',
      context: 'Training stopped',
      detail: `the loss became ${loss} at step ${s.step}: the learning rate is too high for this optimizer. Lower it and press Reset.`,
    });
  }
}

function evaluate(s: State): void {
  s.model.eval();
  const logits = tidy(() => noGrad(() => s.model.forward(s.split.xTest).toArray()));
  const predictions = argmaxRows(logits, s.split.yTest.length);
  let correct = 0;
  for (let i = 0; i < predictions.length; i++) if (predictions[i] === s.split.yTest[i]) correct++;
  s.lastEval = performance.now();
  post(
    {
      type: 'eval',
      step: s.step,
      epoch: s.examples / s.split.yTrain.length,
      testAccuracy: correct / predictions.length,
      predictions,
      alignmentAngle: s.modelConfig.feedback === 'alignment' ? signalAngle(s) : null,
    },
    [predictions.buffer],
  );
}

/**
 * The angle between the error signal feedback alignment sends back into the network and the one
 * backpropagation would send (the Linear nearest the output that passes one back): about 90°
 * at the start, falling as the forward weights come to align with the fixed feedback matrix.
 */
function signalAngle(s: State): number | null {
  const angles = tidy(() => alignmentAngles(s.model, s.probe.x, (out) => crossEntropy(out, s.probe.y)));
  const signals = angles.map((a) => a.signal).filter((v): v is number => v !== null && Number.isFinite(v));
  return signals.length > 0 ? signals[signals.length - 1] : null;
}

// Zero-delay scheduling: a MessageChannel task is not clamped to 4 ms like nested setTimeouts.
// At most one tick is pending, so pausing and resuming quickly never starts a second loop.
const tick = new MessageChannel();
let scheduled = false;
function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  tick.port2.postMessage(null);
}
tick.port1.onmessage = () => {
  scheduled = false;
  const s = st;
  if (s === null || !s.running) return;
  try {
    trainChunk(s);
    if (s.running && performance.now() - s.lastEval >= EVAL_MS) evaluate(s);
  } catch (e) {
    pause(s);
    post({ type: 'error', context: 'Training failed', detail: errorText(e) });
  }
  if (s.running) schedule();
};

function start(s: State): void {
  if (s.running) return;
  s.running = true;
  s.lastProgress = performance.now();
  post({ type: 'state', running: true });
  schedule();
}

function pause(s: State): void {
  if (!s.running) return;
  s.running = false;
  // Evaluated first, so the page shows the final accuracy by the time its buttons change.
  evaluate(s);
  post({ type: 'state', running: false });
}

function predict(s: State, id: number, pixels: Float32Array): void {
  s.model.eval();
  const out = tidy(() => noGrad(() => softmax(s.model.forward(tensor(pixels, { shape: [1, 64] }))).toArray()));
  const probabilities = Float32Array.from(out);
  post({ type: 'prediction', id, probabilities }, [probabilities.buffer]);
}

function save(s: State): void {
  const bytes = io.saveSafetensors(s.model.stateDict(), { producer: 'adjoint demo', model: s.modelConfig.model, step: String(s.step) });
  const buffer = bytes.slice().buffer;
  post({ type: 'weights', bytes: buffer, fileName: `adjoint-digits-${s.modelConfig.model}-step${s.step}.safetensors` }, [buffer]);
}

/** The architecture a state dict belongs to, from its first weight's rank. */
function kindOf(record: Record<string, Tensor>): ModelKind | null {
  if (record['0.weight']?.shape.length === 2) return 'mlp';
  if (record['1.weight']?.shape.length === 4) return 'cnn';
  return null;
}

function load(s: State, bytes: ArrayBuffer, fileName: string): void {
  const record = io.loadSafetensors(new Uint8Array(bytes));
  try {
    const kind = kindOf(record) ?? s.modelConfig.model;
    // Builds first, so a file that does not fit leaves the current model untouched.
    const model = buildModel({ model: kind, feedback: s.modelConfig.feedback });
    try {
      model.loadStateDict(record);
    } catch (e) {
      model.dispose();
      throw e;
    }
    const config: ModelConfig = { model: kind, feedback: s.modelConfig.feedback };
    s.batches?.return();
    s.opt.dispose();
    s.model.dispose();
    Object.assign(s, {
      model,
      modelConfig: config,
      opt: makeOptimizer(model.parameters(), s.train),
      step: 0,
      examples: 0,
      pass: 0,
      batches: null,
    });
    post({ type: 'loaded', fileName, info: describe(model, config) });
    evaluate(s);
  } finally {
    for (const t of Object.values(record)) t.dispose();
  }
}

function handle(s: State, m: ToWorker): void {
  switch (m.type) {
    case 'build':
      try {
        return rebuild(s, m.model, m.train);
      } catch (e) {
        // The old model is still in place (and still training if it was): tell the page which.
        post({ type: 'model', info: describe(s.model, s.modelConfig), fresh: false });
        throw e;
      }
    case 'configure':
      return configure(s, m.train);
    case 'train':
      return start(s);
    case 'pause':
      return pause(s);
    case 'predict':
      return predict(s, m.id, m.pixels);
    case 'save':
      return save(s);
    case 'load':
      return load(s, m.bytes, m.fileName);
  }
}

const contexts: Record<ToWorker['type'], string> = {
  build: 'Could not build the model',
  configure: 'Could not apply the setting',
  train: 'Could not train',
  pause: 'Could not pause',
  predict: 'Could not predict',
  save: 'Could not save the weights',
  load: 'Could not load the weights',
};

const messages = inbox<ToWorker, State>(handle, contexts, (context, detail) => post({ type: 'error', context, detail }));
scope.onmessage = (e) => messages.receive(e.data);

async function boot(): Promise<void> {
  await init();
  const split = data.digits({ testFraction: 0.2, seed: SEED });
  const build = messages.take('build');
  const train: TrainConfig = build?.train ?? { optimizer: 'sgd', lr: 0.1, batch: 32 };
  let modelConfig: ModelConfig = build?.model ?? { model: 'mlp', feedback: 'bp' };
  let model: nn.Sequential;
  try {
    model = buildModel(modelConfig);
  } catch (e) {
    // e.g. feedback alignment where this build of the library lacks it: start with backprop.
    post({ type: 'error', context: 'Could not build the model', detail: errorText(e) });
    modelConfig = { ...modelConfig, feedback: 'bp' };
    model = buildModel(modelConfig);
  }
  const testPixels = split.xTest.toArray() as Float32Array;
  post({ type: 'ready', testPixels, testLabels: split.yTest.slice(), trainCount: split.yTrain.length }, [testPixels.buffer]);
  const n = Math.min(PROBE, split.yTest.length);
  const probe = { x: slice(split.xTest, [0, 0], [n, 64]), y: split.yTest.slice(0, n) };
  st = {
    split,
    probe,
    model,
    modelConfig,
    train,
    opt: makeOptimizer(model.parameters(), train),
    running: false,
    step: 0,
    examples: 0,
    pass: 0,
    batches: null,
    lastEval: 0,
    lastProgress: 0,
  };
  post({ type: 'model', info: describe(model, modelConfig), fresh: true });
  evaluate(st);
  messages.open(st);
}

boot().catch((e) => post({ type: 'error', context: 'The engine did not start', detail: errorText(e) }));
