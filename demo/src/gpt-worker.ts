// The Shakespeare page's training worker (a module Web Worker): fetches the vendored text, and
// trains the character-level GPT with the CLI's own run (src/cli/gpt-run.ts: AdamW groups,
// warm-up and cosine schedule over 2,000 steps, clipping at 1.0), so the tab and
// `adjoint train --dataset shakespeare --model gpt` take the same steps from the same seed. The
// run owns the batches, so this file never touches data.lmBatches' batch type. Steps run in
// chunks of ~CHUNK_MS; messages (pause, generate, save) are handled between chunks.
import { init, backend, memory, data, io } from '../../src/index.js';
import { GptRun } from '../../src/cli/gpt-run.js';
import type { FromGptWorker, GptInfo, GptSize, ToGptWorker } from './gpt-protocol.js';
import { errorText, inbox } from './worker-inbox.js';

/** Training time per chunk; one step of the published model takes longer, so a chunk is one step there. */
const CHUNK_MS = 60;
/** Steps of the published schedule (warm-up 100, cosine to 1e-4 at step 2,000, then 1e-4). */
const STEPS = 2000;
/** Validation every EVAL_EVERY steps over VAL_BATCHES random batches (the CLI: 20 every 250). */
const EVAL_EVERY = 50;
const VAL_BATCHES = 5;
/** The live sample: every SAMPLE_EVERY steps, SAMPLE_CHARS characters after a newline. */
const SAMPLE_EVERY = 50;
const SAMPLE_CHARS = 200;
const SAMPLE_PROMPT = '\n';
const SAMPLE_TEMPERATURE = 0.8;
const SEED = 0;

const scope = self as unknown as {
  postMessage(m: FromGptWorker, t?: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToGptWorker>) => void) | null;
  crossOriginIsolated?: boolean;
};
const post = (m: FromGptWorker, transfer: Transferable[] = []) => scope.postMessage(m, transfer);

interface State {
  text: string;
  run: GptRun;
  running: boolean;
}
let st: State | null = null;

function newRun(text: string, size: GptSize, tokenizer?: data.CharTokenizer, bias?: boolean): GptRun {
  return new GptRun(text, { ...size, steps: STEPS, seed: SEED, bias }, tokenizer);
}

function info(r: GptRun): GptInfo {
  const c = r.config;
  return {
    layers: c.layers,
    heads: c.heads,
    width: c.width,
    context: c.context,
    batch: c.batch,
    vocabSize: r.tokenizer.vocabSize,
    parameters: r.model.parameters().reduce((a, p) => a + p.size, 0),
    trainChars: r.train.length,
    valChars: r.val.length,
    threads: backend().threads,
  };
}

/** Makes `run` the current one (the old run is disposed) and shows its loss and sample at its step. */
function install(s: State, run: GptRun, label: string): void {
  pause(s, false);
  s.run.dispose();
  s.run = run;
  post({ type: 'model', info: info(run), step: run.step, label });
  evaluate(s);
  liveSample(s);
}

function evaluate(s: State): void {
  post({ type: 'eval', step: s.run.step, valLoss: s.run.evalRandom(VAL_BATCHES) });
}

function generate(run: GptRun, prompt: string, tokens: number, temperature: number, seed: number): string {
  const ids = run.tokenizer.encode(prompt.length > 0 ? prompt : SAMPLE_PROMPT);
  return run.tokenizer.decode(run.model.generate(ids, { tokens, temperature, seed }));
}

function liveSample(s: State): void {
  const text = generate(s.run, SAMPLE_PROMPT, SAMPLE_CHARS, SAMPLE_TEMPERATURE, s.run.step);
  post({ type: 'sample', step: s.run.step, prompt: SAMPLE_PROMPT, text });
}

/** Steps for about CHUNK_MS (at least one), one progress message each. */
function trainChunk(s: State): void {
  const r = s.run,
    t0 = performance.now();
  let steps = 0;
  while (steps === 0 || performance.now() - t0 < CHUNK_MS) {
    const a = performance.now();
    const loss = r.trainStep();
    steps++;
    post({
      type: 'progress',
      step: r.step,
      loss,
      lr: r.optimizer.lr,
      stepMs: performance.now() - a,
      tokensPerStep: r.tokensPerStep,
      memoryBytes: memory().wasmBytes,
      shares: backend().shares,
    });
    if (!Number.isFinite(loss)) {
      pause(s);
      post({ type: 'error', context: 'Training stopped', detail: `the loss became ${loss} at step ${r.step}` });
      return;
    }
    if (r.step % EVAL_EVERY === 0) evaluate(s);
    if (r.step % SAMPLE_EVERY === 0) liveSample(s);
    if (r.step % EVAL_EVERY === 0 || r.step % SAMPLE_EVERY === 0) return;
  }
}

// Zero-delay scheduling, as the digits worker: one pending tick at most.
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
  } catch (e) {
    pause(s);
    post({ type: 'error', context: 'Training failed', detail: errorText(e) });
  }
  if (s.running) schedule();
};

function start(s: State): void {
  if (s.running) return;
  s.running = true;
  post({ type: 'state', running: true });
  schedule();
}

function pause(s: State, report = true): void {
  if (!s.running) return;
  s.running = false;
  if (report) liveSample(s);
  post({ type: 'state', running: false });
}

function save(s: State): void {
  const r = s.run,
    m = r.model;
  // The CLI's metadata (src/cli/gpt.ts), so `adjoint sample --load` reads this file, plus the step.
  const config = { vocabSize: m.vocabSize, layers: m.layers, heads: m.heads, width: m.width, context: m.context, bias: m.bias };
  const bytes = io.saveSafetensors(m.stateDict(), {
    format: 'pt',
    producer: 'adjoint demo',
    model: 'gpt',
    config: JSON.stringify(config),
    vocab: JSON.stringify(r.tokenizer.vocab),
    batch: String(r.config.batch),
    step: String(r.step),
  });
  const buffer = bytes.slice().buffer;
  post({ type: 'weights', bytes: buffer, fileName: `adjoint-gpt-shakespeare-step${r.step}.safetensors` }, [buffer]);
}

/** The safetensors header's __metadata__ (string → string), or {} when it has none. */
function metadataOf(bytes: Uint8Array): Record<string, string> {
  if (bytes.length < 8) return {};
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > bytes.length - 8) return {};
  try {
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as { __metadata__?: Record<string, string> };
    return header.__metadata__ ?? {};
  } catch {
    return {}; // loadSafetensors below explains what is wrong with the file
  }
}

function load(s: State, buffer: ArrayBuffer, fileName: string): void {
  const bytes = new Uint8Array(buffer);
  const record = io.loadSafetensors(bytes);
  try {
    const meta = metadataOf(bytes);
    if (meta.config === undefined || meta.vocab === undefined)
      throw new Error('this file has no GPT config/vocab metadata (save it here or with adjoint train --model gpt --save)');
    const c = JSON.parse(meta.config) as Partial<GptSize> & { bias?: boolean };
    const size: GptSize = {
      layers: c.layers ?? 4,
      heads: c.heads ?? 4,
      width: c.width ?? 128,
      context: c.context ?? 64,
      batch: Number(meta.batch ?? s.run.config.batch),
    };
    // Built first, so a file that does not fit leaves the current run untouched.
    // Files saved before the bias flag existed have biases.
    const run = newRun(s.text, size, new data.CharTokenizer(JSON.parse(meta.vocab) as string[]), c.bias ?? true);
    try {
      run.model.loadStateDict(record);
    } catch (e) {
      run.dispose();
      throw e;
    }
    run.step = Number(meta.step ?? 0) || 0;
    install(s, run, fileName);
  } finally {
    for (const t of Object.values(record)) t.dispose();
  }
}

function handle(s: State, m: ToGptWorker): void {
  switch (m.type) {
    case 'build':
      return install(s, newRun(s.text, m.size), 'fresh model');
    case 'train':
      return start(s);
    case 'pause':
      return pause(s);
    case 'generate': {
      const text = generate(s.run, m.prompt, m.tokens, m.temperature, m.seed);
      return post({ type: 'generated', id: m.id, step: s.run.step, prompt: m.prompt, text });
    }
    case 'save':
      return save(s);
    case 'load':
      return load(s, m.bytes, m.fileName);
  }
}

const contexts: Record<ToGptWorker['type'], string> = {
  build: 'Could not build the model',
  train: 'Could not train',
  pause: 'Could not pause',
  generate: 'Could not generate',
  save: 'Could not save the weights',
  load: 'Could not load the weights',
};

const messages = inbox<ToGptWorker, State>(handle, contexts, (context, detail) => post({ type: 'error', context, detail }));
scope.onmessage = (e) => messages.receive(e.data);

/** The vendored text, gunzipped by data.shakespeare (fflate), fetched next to this script. */
async function fetchText(): Promise<string> {
  const url = new URL('tinyshakespeare.txt.gz', import.meta.url);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url.pathname}: HTTP ${res.status}`);
  return data.shakespeare(new Uint8Array(await res.arrayBuffer()));
}

async function boot(): Promise<void> {
  // Threads need SharedArrayBuffer: only where the page is cross-origin isolated (COOP/COEP).
  // The page's ?threads=N (passed on in this script's URL) overrides the default of one per core, up to 4.
  const asked = Number(new URL(import.meta.url).searchParams.get('threads'));
  const threads =
    scope.crossOriginIsolated === true ? (asked >= 1 ? Math.floor(asked) : Math.min(4, navigator.hardwareConcurrency || 1)) : 1;
  const [text] = await Promise.all([fetchText(), init(threads > 1 ? { threads } : {})]);
  const build = messages.take('build');
  const run = newRun(text, build?.size ?? { layers: 4, heads: 4, width: 128, context: 64, batch: 12 });
  st = { text, run, running: false };
  post({ type: 'model', info: info(run), step: 0, label: 'fresh model' });
  evaluate(st);
  liveSample(st);
  messages.open(st);
}

boot().catch((e) => post({ type: 'error', context: 'The engine did not start', detail: errorText(e) }));
