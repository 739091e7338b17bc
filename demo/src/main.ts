// The demo page: controls, live stats and plot, the drawing pad and the test-digit grid. All
// numeric work happens in the worker (worker.ts); this thread only draws and sends messages.
import type { FromWorker, ModelConfig, ModelInfo, OptimizerKind, ToWorker, TrainConfig } from './protocol.js';
import { TrainingPlot } from './plot.js';
import { Sketch, toDigit } from './sketch.js';
import { DigitGrid } from './digits-grid.js';
import { download, showMessageIn } from './page.js';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  train: $<HTMLButtonElement>('train'),
  pause: $<HTMLButtonElement>('pause'),
  reset: $<HTMLButtonElement>('reset'),
  model: $<HTMLSelectElement>('model'),
  optimizer: $<HTMLSelectElement>('optimizer'),
  lr: $<HTMLInputElement>('lr'),
  lrValue: $<HTMLOutputElement>('lr-value'),
  batch: $<HTMLSelectElement>('batch'),
  feedback: $<HTMLInputElement>('feedback'),
  save: $<HTMLButtonElement>('save'),
  load: $<HTMLInputElement>('load'),
  status: $('status'),
  message: $('message'),
  accuracy: $('accuracy'),
  stepsPerSecond: $('steps-per-second'),
  step: $('step'),
  epoch: $('epoch'),
  loss: $('loss'),
  modelInfo: $('model-info'),
  memory: $('memory'),
  angleStat: $('angle-stat'),
  angle: $('angle'),
  plot: $<HTMLCanvasElement>('loss-plot'),
  draw: $<HTMLCanvasElement>('draw'),
  drawHint: $('draw-hint'),
  prediction: $<HTMLOutputElement>('prediction'),
  confidence: $('confidence'),
  preview: $<HTMLCanvasElement>('preview'),
  clear: $<HTMLButtonElement>('clear'),
  probs: $('probabilities'),
  grid: $('grid'),
  gridSummary: $('grid-summary'),
  showSample: $<HTMLButtonElement>('show-sample'),
  showMistakes: $<HTMLButtonElement>('show-mistakes'),
};

/** The usual starting learning rate of each optimizer (the CLI's defaults). */
const DEFAULT_LR: Record<OptimizerKind, number> = { sgd: 0.1, adam: 1e-3, adamw: 1e-3 };

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'adjoint-trainer' });
const send = (m: ToWorker, transfer: Transferable[] = []) => worker.postMessage(m, transfer);

const plot = new TrainingPlot(el.plot);
const grid = new DigitGrid(el.grid, el.gridSummary, el.showMistakes);
let ready = false,
  running = false,
  step = 0,
  trainCount = 1438;
let info: ModelInfo | null = null;
/** The last test accuracy (below ~30 % the model is still guessing). */
let testAccuracy = 0;
/** A one-off line for the status while paused ("Saved …", "Loaded …"); cleared by the next action. */
let note: string | null = null;
/** Steps/s smoothed over the last second or so (one sample per chunk of ~40 ms). */
let rate = 0;

// ---- Controls -------------------------------------------------------------------------------

const lrOf = () => Number((10 ** Number(el.lr.value)).toPrecision(2));
const fmtLr = (v: number) => (v >= 0.01 ? String(v) : v.toExponential(1).replace('.0e', 'e'));
function setLr(v: number): void {
  el.lr.value = String(Math.log10(v));
  el.lrValue.textContent = fmtLr(lrOf());
}
const trainConfig = (): TrainConfig => ({ optimizer: el.optimizer.value as OptimizerKind, lr: lrOf(), batch: Number(el.batch.value) });
const modelConfig = (): ModelConfig => ({
  model: el.model.value as ModelConfig['model'],
  feedback: el.feedback.checked ? 'alignment' : 'bp',
});
const runLabel = () =>
  `${el.model.value.toUpperCase()} · ${el.optimizer.value} lr ${fmtLr(lrOf())}${el.feedback.checked ? ' · feedback alignment' : ''}`;

const showMessage = (context: string | null, detail = '') => showMessageIn(el.message, context, detail);

function syncButtons(): void {
  el.train.disabled = !ready || running;
  el.pause.disabled = !ready || !running;
  el.reset.disabled = !ready;
  el.save.disabled = !ready;
  el.train.textContent = step > 0 && !running ? 'Resume' : 'Train';
  el.status.classList.toggle('running', running);
  if (!ready) return;
  el.status.textContent = running
    ? 'Training…'
    : (note ?? (step > 0 ? `Paused at step ${step.toLocaleString('en-US')}` : 'Ready: press Train'));
}

function rebuild(): void {
  send({ type: 'build', model: modelConfig(), train: trainConfig() });
}

function resetStats(): void {
  step = 0;
  note = null;
  rate = 0;
  el.step.textContent = '0';
  el.epoch.textContent = '0';
  el.loss.textContent = '–';
  el.stepsPerSecond.textContent = '–';
}

el.train.addEventListener('click', () => {
  showMessage(null);
  note = null;
  send({ type: 'train' });
});
el.pause.addEventListener('click', () => send({ type: 'pause' }));
el.reset.addEventListener('click', () => {
  showMessage(null);
  rebuild();
});
el.model.addEventListener('change', () => {
  showMessage(null);
  rebuild();
});
el.feedback.addEventListener('change', () => {
  showMessage(null);
  rebuild();
});
el.optimizer.addEventListener('change', () => {
  setLr(DEFAULT_LR[el.optimizer.value as OptimizerKind]);
  send({ type: 'configure', train: trainConfig() });
});
el.lr.addEventListener('input', () => {
  el.lrValue.textContent = fmtLr(lrOf());
  send({ type: 'configure', train: trainConfig() });
});
el.batch.addEventListener('change', () => send({ type: 'configure', train: trainConfig() }));
el.save.addEventListener('click', () => send({ type: 'save' }));
el.load.addEventListener('change', async () => {
  const file = el.load.files?.[0];
  el.load.value = '';
  if (!file) return;
  const bytes = await file.arrayBuffer();
  showMessage(null);
  send({ type: 'load', bytes, fileName: file.name }, [bytes]);
});
for (const [button, filter] of [
  [el.showSample, 'sample'],
  [el.showMistakes, 'mistakes'],
] as const) {
  button.addEventListener('click', () => {
    el.showSample.setAttribute('aria-pressed', String(filter === 'sample'));
    el.showMistakes.setAttribute('aria-pressed', String(filter === 'mistakes'));
    grid.setFilter(filter);
  });
}

// ---- Drawing pad and live prediction --------------------------------------------------------

const sketch = new Sketch(el.draw, () => schedulePredict());
let predictId = 0,
  inFlight = false,
  dirty = false,
  frame = 0;

function schedulePredict(): void {
  el.drawHint.hidden = !sketch.empty;
  if (frame === 0)
    frame = requestAnimationFrame(() => {
      frame = 0;
      predict();
    });
}

function predict(): void {
  const pixels = toDigit(sketch.strokes, el.draw.clientWidth / Math.max(1, el.draw.clientHeight));
  drawPreview(pixels);
  if (pixels === null) {
    showProbabilities(null);
    return;
  }
  if (!ready || inFlight) {
    dirty = true;
    return;
  }
  inFlight = true;
  dirty = false;
  send({ type: 'predict', id: ++predictId, pixels }, [pixels.buffer]);
}

function drawPreview(pixels: Float32Array | null): void {
  const ctx = el.preview.getContext('2d')!;
  const img = ctx.createImageData(8, 8);
  for (let k = 0; k < 64; k++) {
    const v = Math.round(255 - 225 * (pixels?.[k] ?? 0));
    img.data.set([v, v, Math.min(255, v + 6), 255], k * 4);
  }
  ctx.putImageData(img, 0, 0);
}

const probRows = Array.from({ length: 10 }, (_, d) => {
  const li = document.createElement('li');
  li.innerHTML = `<span>${d}</span><span class="bar"><i></i></span><span class="pct">–</span>`;
  el.probs.append(li);
  return { li, bar: li.querySelector('i')!, pct: li.querySelector('.pct')! };
});

function showProbabilities(p: Float32Array | null): void {
  let best = -1;
  if (p) for (let d = 0; d < 10; d++) if (best < 0 || p[d] > p[best]) best = d;
  probRows.forEach((row, d) => {
    const v = p ? p[d] : 0;
    row.bar.style.width = `${(v * 100).toFixed(1)}%`;
    row.pct.textContent = p ? `${(v * 100).toFixed(v >= 0.995 || v < 0.0005 ? 0 : 1)}%` : '–';
    row.li.classList.toggle('best', d === best);
  });
  el.prediction.textContent = best >= 0 ? String(best) : '?';
  el.confidence.textContent = p ? `${(p[best] * 100).toFixed(0)}% sure${testAccuracy < 0.3 ? ' (untrained model)' : ''}` : '';
}

el.clear.addEventListener('click', () => sketch.clear());

// ---- Messages from the worker ---------------------------------------------------------------

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

function showModel(m: ModelInfo): void {
  info = m;
  el.model.value = m.model;
  el.feedback.checked = m.feedback === 'alignment';
  el.modelInfo.textContent =
    `${m.layers} · ${m.parameters.toLocaleString('en-US')} parameters` +
    `${m.feedback === 'alignment' ? ' · feedback alignment' : ''} · ${trainCount.toLocaleString('en-US')} training / ${grid.size} test digits`;
}

function onMessage(m: FromWorker): void {
  switch (m.type) {
    case 'ready':
      ready = true;
      trainCount = m.trainCount;
      grid.setData(m.testPixels, m.testLabels);
      syncButtons();
      if (!sketch.empty) schedulePredict();
      return;
    case 'model':
      showModel(m.info);
      if (m.fresh) {
        plot.reset(runLabel());
        resetStats();
      }
      return;
    case 'state':
      running = m.running;
      el.stepsPerSecond.classList.toggle('stale', !running);
      syncButtons();
      return;
    case 'progress':
      step = m.step;
      rate = rate === 0 ? m.stepsPerSecond : 0.85 * rate + 0.15 * m.stepsPerSecond;
      el.step.textContent = m.step.toLocaleString('en-US');
      el.epoch.textContent = m.epoch.toFixed(1);
      el.loss.textContent = Number.isFinite(m.loss) ? m.loss.toFixed(3) : String(m.loss);
      el.stepsPerSecond.textContent = Math.round(rate).toLocaleString('en-US');
      el.memory.textContent = ` · wasm memory ${(m.memoryBytes / 2 ** 20).toFixed(1)} MB`;
      plot.addProgress(m.epoch, m.loss, m.trainAccuracy);
      return;
    case 'eval':
      testAccuracy = m.testAccuracy;
      el.accuracy.textContent = pct(m.testAccuracy);
      plot.addEval(m.epoch, m.testAccuracy);
      grid.setPredictions(m.predictions);
      el.angleStat.hidden = m.alignmentAngle === null;
      el.angle.textContent = m.alignmentAngle === null ? '–' : `${m.alignmentAngle.toFixed(0)}°`;
      if (!sketch.empty) schedulePredict();
      syncButtons();
      return;
    case 'prediction':
      inFlight = false;
      if (m.id === predictId && !sketch.empty) showProbabilities(m.probabilities);
      if (dirty) schedulePredict();
      return;
    case 'weights': {
      download(m.bytes, m.fileName);
      note = `Saved ${m.fileName}`;
      syncButtons();
      return;
    }
    case 'loaded':
      showModel(m.info);
      plot.reset(m.fileName);
      resetStats();
      note = `Loaded ${m.fileName}`;
      syncButtons();
      return;
    case 'error':
      inFlight = false;
      showMessage(`${m.context}: `, m.detail);
      if (info) el.feedback.checked = info.feedback === 'alignment';
      return;
  }
}

worker.addEventListener('message', (e: MessageEvent<FromWorker>) => onMessage(e.data));
worker.addEventListener('error', (e) => {
  e.preventDefault();
  showMessage('The training worker failed: ', e.message || 'it could not be loaded (does this browser support module workers?)');
});

// The first build message carries the form's values (a reload may have restored them).
setLr(el.optimizer.value === 'sgd' && el.lr.value === '-1' ? 0.1 : lrOf());
send({ type: 'build', model: modelConfig(), train: trainConfig() });
syncButtons();
drawPreview(null);
showProbabilities(null);
