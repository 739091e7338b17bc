// The Shakespeare page: controls, live stats and plot, the live sample and the prompt box. All
// numeric work happens in the worker (gpt-worker.ts); this thread only draws and sends messages.
import type { FromGptWorker, GptInfo, GptSize, ToGptWorker } from './gpt-protocol.js';
import { TrainingPlot } from './plot.js';
import { download, showMessageIn } from './page.js';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  train: $<HTMLButtonElement>('train'),
  pause: $<HTMLButtonElement>('pause'),
  reset: $<HTMLButtonElement>('reset'),
  size: $<HTMLSelectElement>('size'),
  save: $<HTMLButtonElement>('save'),
  load: $<HTMLInputElement>('load'),
  status: $('status'),
  message: $('message'),
  loss: $('loss'),
  valLoss: $('val-loss'),
  tokensPerSecond: $('tokens-per-second'),
  step: $('step'),
  lr: $('lr'),
  plot: $<HTMLCanvasElement>('loss-plot'),
  modelInfo: $('model-info'),
  memory: $('memory'),
  sample: $('sample'),
  sampleStep: $('sample-step'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  temperature: $<HTMLSelectElement>('temperature'),
  seed: $<HTMLInputElement>('seed'),
  generate: $<HTMLButtonElement>('generate'),
  generated: $('generated'),
};

/** The published configuration, and a smaller one for slow machines (labelled as such in the page). */
const SIZES: Record<string, GptSize> = {
  published: { layers: 4, heads: 4, width: 128, context: 64, batch: 12 },
  small: { layers: 2, heads: 4, width: 64, context: 32, batch: 12 },
};
const GENERATE_CHARS = 200;

// ?threads=N in the page's address sets the worker's thread count (default: one per core, up to 4).
const threadsParam = new URLSearchParams(location.search).get('threads');
const workerUrl = new URL('./gpt-worker.js', import.meta.url);
if (threadsParam !== null) workerUrl.searchParams.set('threads', threadsParam);
const worker = new Worker(workerUrl, { type: 'module', name: 'adjoint-gpt-trainer' });
const send = (m: ToGptWorker, transfer: Transferable[] = []) => worker.postMessage(m, transfer);

const plot = new TrainingPlot(el.plot, { xLabel: 'step', evals: 'loss' });
let ready = false,
  running = false,
  step = 0,
  generating = false,
  generateId = 0;
/** Training loss smoothed over the last ~10 steps (bias-corrected, as the plot's line). */
let smoothLoss = 0,
  smoothWeight = 0;
/** Milliseconds per step, smoothed over the last few steps (tokens/s is tokens per step over it: a harmonic mean, so one slow step is not outweighed by fast ones). */
let msPerStep = 0;
/** A one-off line for the status while paused ("Saved …", "Loaded …"); cleared by the next action. */
let note: string | null = null;

const showMessage = (context: string | null, detail = '') => showMessageIn(el.message, context, detail);

function syncButtons(): void {
  el.train.disabled = !ready || running;
  el.pause.disabled = !ready || !running;
  el.reset.disabled = !ready;
  el.save.disabled = !ready;
  el.generate.disabled = !ready || generating;
  el.train.textContent = step > 0 && !running ? 'Resume' : 'Train';
  el.status.classList.toggle('running', running);
  if (!ready) return;
  el.status.textContent = running
    ? 'Training…'
    : (note ?? (step > 0 ? `Paused at step ${step.toLocaleString('en-US')}` : 'Ready: press Train'));
}

function resetStats(at: number): void {
  step = at;
  smoothLoss = 0;
  smoothWeight = 0;
  msPerStep = 0;
  el.step.textContent = at.toLocaleString('en-US');
  el.loss.textContent = '–';
  el.valLoss.textContent = '–';
  el.lr.textContent = '–';
  el.tokensPerSecond.textContent = '–';
}

el.train.addEventListener('click', () => {
  showMessage(null);
  note = null;
  send({ type: 'train' });
});
el.pause.addEventListener('click', () => send({ type: 'pause' }));
const rebuild = () => {
  showMessage(null);
  note = null;
  send({ type: 'build', size: SIZES[el.size.value] });
};
el.reset.addEventListener('click', rebuild);
el.size.addEventListener('change', rebuild);
el.save.addEventListener('click', () => send({ type: 'save' }));
el.load.addEventListener('change', async () => {
  const file = el.load.files?.[0];
  el.load.value = '';
  if (!file) return;
  const bytes = await file.arrayBuffer();
  showMessage(null);
  send({ type: 'load', bytes, fileName: file.name }, [bytes]);
});
el.generate.addEventListener('click', () => {
  showMessage(null);
  generating = true;
  syncButtons();
  el.generated.textContent = '…';
  send({
    type: 'generate',
    id: ++generateId,
    prompt: el.prompt.value,
    tokens: GENERATE_CHARS,
    temperature: Number(el.temperature.value),
    seed: Math.max(0, Math.floor(Number(el.seed.value) || 0)),
  });
});

/** The prompt in bold, then the model's continuation. */
function showText(target: HTMLElement, prompt: string, text: string): void {
  const b = document.createElement('b');
  b.textContent = prompt;
  target.replaceChildren(b, document.createTextNode(text));
}

function showModel(m: GptInfo): void {
  el.modelInfo.textContent =
    `${m.layers} layers · ${m.heads} heads · width ${m.width} · context ${m.context} · batch ${m.batch} · ` +
    `${m.parameters.toLocaleString('en-US')} parameters · ${m.vocabSize} characters · ` +
    `${m.trainChars.toLocaleString('en-US')} training / ${m.valChars.toLocaleString('en-US')} validation characters · ` +
    `${m.threads} thread${m.threads === 1 ? '' : 's'}`;
  const kind = Object.entries(SIZES).find(([, s]) => s.layers === m.layers && s.width === m.width && s.context === m.context);
  if (kind) el.size.value = kind[0];
}

function onMessage(m: FromGptWorker): void {
  switch (m.type) {
    case 'model':
      ready = true;
      showModel(m.info);
      plot.reset(m.label);
      resetStats(m.step);
      if (m.label !== 'fresh model') note = `Loaded ${m.label}`;
      syncButtons();
      return;
    case 'state':
      running = m.running;
      el.tokensPerSecond.classList.toggle('stale', !running);
      syncButtons();
      return;
    case 'progress':
      step = m.step;
      if (Number.isFinite(m.loss)) {
        smoothLoss = 0.9 * smoothLoss + 0.1 * m.loss;
        smoothWeight = 0.9 * smoothWeight + 0.1;
      }
      msPerStep = msPerStep === 0 ? m.stepMs : 0.8 * msPerStep + 0.2 * m.stepMs;
      el.step.textContent = m.step.toLocaleString('en-US');
      el.loss.textContent = smoothWeight > 0 ? (smoothLoss / smoothWeight).toFixed(3) : String(m.loss);
      el.lr.textContent = m.lr.toExponential(2);
      el.tokensPerSecond.textContent = Math.round((m.tokensPerStep * 1000) / Math.max(1e-3, msPerStep)).toLocaleString('en-US');
      // On threads of unequal speed (a phone's small cores, a busy core) the pool gives the faster ones more.
      el.memory.textContent =
        ` · wasm memory ${(m.memoryBytes / 2 ** 20).toFixed(1)} MB` +
        (m.shares.length > 1 ? ` · threads' shares ${m.shares.map((x) => Math.round(100 * x)).join(' / ')} %` : '');
      plot.addProgress(m.step, m.loss);
      return;
    case 'eval':
      el.valLoss.textContent = m.valLoss.toFixed(3);
      plot.addEval(m.step, m.valLoss);
      return;
    case 'sample':
      showText(el.sample, '', m.text.replace(/^\n+/, ''));
      el.sampleStep.textContent = `step ${m.step.toLocaleString('en-US')}`;
      return;
    case 'generated':
      if (m.id !== generateId) return;
      generating = false;
      showText(el.generated, m.prompt, m.text);
      el.generated.dataset.step = String(m.step);
      syncButtons();
      return;
    case 'weights': {
      download(m.bytes, m.fileName);
      note = `Saved ${m.fileName}`;
      syncButtons();
      return;
    }
    case 'error':
      if (m.context === 'Could not generate') {
        generating = false;
        el.generated.textContent = '';
        syncButtons();
      }
      showMessage(`${m.context}: `, m.detail);
      return;
  }
}

worker.addEventListener('message', (e: MessageEvent<FromGptWorker>) => onMessage(e.data));
worker.addEventListener('error', (e) => {
  e.preventDefault();
  showMessage('The training worker failed: ', e.message || 'it could not be loaded (does this browser support module workers?)');
});

// The first build carries the form's choice (a reload may have restored it).
send({ type: 'build', size: SIZES[el.size.value] ?? SIZES.published });
syncButtons();
