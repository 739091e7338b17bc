// The one workload every runtime runs (Node, Deno, Bun, Chromium, Firefox, workerd): a 64-32-10
// tanh MLP trained with SGD for a fixed number of steps from fixed seeds, using only the
// public API of the built bundle. It returns the loss after every step and the SHA-256 (via
// crypto.subtle, present in all six runtimes) of the final weights' bytes; the runner
// (test/runtimes/run.mjs) requires every runtime to report exactly the same values.
import * as adj from '../../dist/index.js';

export const CONFIG = Object.freeze({ steps: 40, batch: 64, hidden: 32, lr: 0.1, seed: 7 });

/** The embedded digits when the bundle exports them (`data.digits`), else a seeded synthetic set. */
function dataset() {
  if (typeof adj.data?.digits === 'function') {
    const d = adj.data.digits({ testFraction: 0.2, seed: 0 });
    d.xTest.dispose();
    return { source: 'digits', x: d.xTrain, y: Int32Array.from(d.yTrain) };
  }
  // 10 classes around random centres: x = centre[label] + 0.7·noise, all generated in wasm.
  const n = 640;
  const y = Int32Array.from({ length: n }, (_, i) => (i * 7) % 10);
  const x = adj.tidy(() => {
    const centres = adj.randn([10, 64], { seed: 11 });
    return adj.gather(centres, y, 0).add(adj.randn([n, 64], { seed: 12 }).mul(0.7));
  });
  return { source: 'synthetic', x, y };
}

function initParams(cfg) {
  const { hidden } = cfg;
  const leaf = (t) => {
    t.requiresGrad = true;
    return t;
  };
  return adj.tidy(() => [
    leaf(adj.randn([64, hidden], { seed: cfg.seed }).mul(1 / 8)),
    leaf(adj.zeros([hidden])),
    leaf(adj.randn([hidden, 10], { seed: cfg.seed + 1 }).mul(1 / Math.sqrt(hidden))),
    leaf(adj.zeros([10])),
  ]);
}

function forward([w1, b1, w2, b2], x) {
  return x.matmul(w1).add(b1).tanh().matmul(w2).add(b2);
}

/**
 * The optimizer: optim.SGD with momentum (its fused wasm kernel) when the bundle has it, else
 * plain SGD written with ops. `update(params)` returns the parameters to use next.
 */
function optimizer(params, cfg) {
  if (typeof adj.optim?.SGD === 'function') {
    const opt = new adj.optim.SGD(params, { lr: cfg.lr, momentum: 0.9 });
    return {
      name: 'optim.SGD(momentum=0.9)',
      update: (ps) => (opt.step(), opt.zeroGrad(), ps),
      dispose: () => opt.dispose(),
    };
  }
  const update = (ps) => {
    const next = adj.tidy(() => adj.noGrad(() => ps.map((p) => adj.keep(p.sub(p.grad.mul(cfg.lr))))));
    for (const p of next) p.requiresGrad = true;
    for (const p of ps) p.dispose();
    return next;
  };
  return { name: 'manual SGD', update, dispose: () => {} };
}

/** Loss and gradients on rows [start, start+batch) of x. */
function lossAndGrads(params, x, y, start, cfg) {
  return adj.tidy(() => {
    const xb = adj.slice(x, [start, 0], [cfg.batch, x.shape[1]]);
    const loss = adj.crossEntropy(forward(params, xb), y.subarray(start, start + cfg.batch));
    loss.backward();
    return loss.item();
  });
}

async function sha256Hex(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A short GPT run (a 1-layer GPT, 3 AdamW steps on a fixed text, then 40 sampled characters
 * with the key/value cache): its losses, weights digest and sample must agree in every runtime.
 */
async function gptRun() {
  const text = 'to be, or not to be, that is the question: whether tis nobler in the mind to suffer '.repeat(4);
  const tok = adj.data.CharTokenizer.fromText(text);
  const ids = tok.encode(text);
  const model = new adj.nn.GPT({ vocabSize: tok.vocabSize, layers: 1, heads: 2, width: 16, context: 16, seed: 1 });
  const opt = new adj.optim.AdamW(model.parameters(), { lr: 3e-3, betas: [0.9, 0.99], weightDecay: 0.1 });
  const batches = adj.data.lmBatches(ids, { batchSize: 4, blockSize: 16, seed: 3 });
  const losses = [];
  for (let i = 0; i < 3; i++) {
    losses.push(
      adj.tidy(() => {
        const b = batches.next().value; // int32 tensors, disposed with the tidy
        const loss = adj.crossEntropy(model.forward(b.x).reshape([-1, tok.vocabSize]), b.y.reshape([-1]));
        loss.backward();
        adj.clipGradNorm(model.parameters(), 1);
        opt.step();
        opt.zeroGrad();
        return loss.item();
      }),
    );
  }
  const sample = tok.decode(model.generate(tok.encode('to be'), { tokens: 40, topK: 5, seed: 2 }));
  const weights = adj.io.saveSafetensors(model.stateDict());
  const result = { losses, sample, digest: await sha256Hex(weights) };
  opt.dispose();
  model.dispose();
  return result;
}

/** Where we are running, as "name version". */
export function runtimeName() {
  const g = globalThis;
  if (g.Deno?.version) return `deno ${g.Deno.version.deno}`;
  if (g.Bun?.version) return `bun ${g.Bun.version}`;
  if (g.process?.versions?.node && typeof g.window === 'undefined') return `node ${g.process.versions.node}`;
  return g.navigator?.userAgent ?? 'unknown';
}

/**
 * Trains and reports. `initOptions` go to init() (workerd passes { module } there).
 * Result: { runtime, data, optimizer, steps, losses, lossDigest, digest, weightBytes, liveTensors,
 * kernels } (kernels: backend().kernels, 'default' or 'relaxed'), plus `weights` (the final
 * weights as numbers) with { weights: true }: the relaxed-SIMD runs are compared by closeness.
 */
export async function trainDigits(initOptions = {}, cfg = CONFIG, { weights = false } = {}) {
  await adj.init(initOptions);
  const before = adj.memory().tensors;
  const { source, x, y } = dataset();
  let params = initParams(cfg);
  const opt = optimizer(params, cfg);
  const batches = Math.floor(x.shape[0] / cfg.batch);
  const losses = [];
  for (let i = 0; i < cfg.steps; i++) {
    losses.push(lossAndGrads(params, x, y, (i % batches) * cfg.batch, cfg));
    params = opt.update(params);
  }
  const parts = params.map((p) => new Uint8Array(p.toArray().buffer));
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((o, p) => (bytes.set(p, o), o + p.length), 0);
  const lossBytes = new Uint8Array(Float64Array.from(losses).buffer);
  const result = {
    runtime: runtimeName(),
    data: source,
    optimizer: opt.name,
    steps: cfg.steps,
    losses,
    lossDigest: await sha256Hex(lossBytes),
    digest: await sha256Hex(bytes),
    weightBytes: bytes.length,
    liveTensors: 0,
    gpt: typeof adj.nn?.GPT === 'function' ? await gptRun() : null,
    kernels: typeof adj.backend === 'function' ? adj.backend().kernels : 'default',
  };
  if (weights) result.weights = params.flatMap((p) => Array.from(p.toArray()));
  opt.dispose();
  for (const p of params) p.dispose();
  x.dispose();
  result.liveTensors = adj.memory().tensors - before;
  return result;
}
