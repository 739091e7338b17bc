// `adjoint compare --feedback bp,alignment --plot cmp.svg`: trains the same model on the same
// data, seed and batch order once per feedback rule and plots them side by side, with the
// alignment angle over time. Also the training monitor `train --diagnostics` / `--plot` share:
// per-epoch gradient statistics and warnings, and alignment angles every few steps.
import { access, open, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Tensor } from '../ops/tensor.js';
import { keep } from '../tensor/memory.js';
import { crossEntropy, slice } from '../ops/api.js';
import type { Module } from '../nn/module.js';
import { FEEDBACK_MODES, type Feedback } from '../nn/feedback.js';
import { linearLayers } from '../nn/linear.js';
import {
  gradientStats,
  gradientWarnings,
  formatGradientStats,
  alignmentAngles,
  type AlignmentAngle,
  type GradientStat,
} from '../nn/diagnostics.js';
import { init } from '../wasm/init.js';
import { parseTrainArgs, UsageError, type TrainArgs } from './args.js';
import { runSummary, train, type EpochRecord, type TrainHooks } from './train.js';
import { percent, type Sink } from './progress.js';
import { renderSvg, COLORS, type Panel, type Series } from './plot.js';

/** Training examples the alignment angle is measured on (the first rows of the training split). */
const PROBE = 256;

export interface AngleSample {
  /** Position in epochs (step / steps per epoch). */
  epoch: number;
  angles: AlignmentAngle[];
}

/** Watches a run through TrainHooks: gradient statistics per epoch, alignment angles every few steps. */
export class Monitor {
  readonly angles: AngleSample[] = [];
  private probe: { x: Tensor; y: Int32Array } | null = null;
  private perEpoch = 1;
  private stats: GradientStat[] = [];

  constructor(
    private readonly out: Sink,
    private readonly opts: { diagnostics: boolean; angles: boolean },
  ) {}

  hooks(): TrainHooks {
    return {
      begin: (model, data, steps) => {
        this.perEpoch = steps;
        const fa = linearLayers(model).some(([, l]) => l.feedback !== 'bp');
        if (!fa || !(this.opts.angles || this.opts.diagnostics)) return;
        const n = Math.min(PROBE, data.xTrain.shape[0]),
          rest = data.xTrain.shape.slice(1);
        this.probe = { x: keep(slice(data.xTrain, [0, ...rest.map(() => 0)], [n, ...rest])), y: data.yTrain.slice(0, n) };
      },
      watches: (step) => this.statsAt(step) || this.anglesAt(step),
      afterBackward: (model, step) => this.afterBackward(model, step),
      afterEpoch: (_model, record) => this.afterEpoch(record),
    };
  }

  /** --diagnostics reads the gradients at each epoch's last step. */
  private statsAt(step: number): boolean {
    return this.opts.diagnostics && (step + 1) % this.perEpoch === 0;
  }

  /** Angles: three samples per epoch (and the first step), plus each epoch's last step for --diagnostics. */
  private anglesAt(step: number): boolean {
    return this.probe !== null && (step % Math.max(1, Math.round(this.perEpoch / 3)) === 0 || this.statsAt(step));
  }

  private afterBackward(model: Module, step: number): void {
    if (this.statsAt(step)) this.stats = gradientStats(model);
    if (this.probe !== null && this.anglesAt(step)) {
      const { x, y } = this.probe;
      this.angles.push({ epoch: step / this.perEpoch, angles: alignmentAngles(model, x, (o) => crossEntropy(o, y)) });
    }
  }

  private afterEpoch(record: EpochRecord): void {
    if (!this.opts.diagnostics) return;
    this.out.write(`  gradients at the last step of epoch ${record.epoch}:\n${formatGradientStats(this.stats, '    ')}\n`);
    const a = this.angles[this.angles.length - 1];
    if (a !== undefined) this.out.write(`  alignment with backprop (${PROBE}-example probe): ${describeAngles(a.angles)}\n`);
    for (const w of gradientWarnings(this.stats)) this.out.write(`  warning: ${w}\n`);
  }

  dispose(): void {
    this.probe?.x.dispose();
    this.probe = null;
  }
}

const deg = (v: number): string => `${v.toFixed(1)}°`;

/** "0.weight update: 47.9°, signal sent back by 3: 55.4°" (the weight angle of the top layer is 0 by construction and left out). */
function describeAngles(rows: readonly AlignmentAngle[]): string {
  const parts: string[] = [];
  for (const r of rows) {
    if (r.signal !== null) parts.push(`signal sent back by ${r.layer}: ${deg(r.signal)}`);
    if (!(r.weight < 0.05)) parts.push(`${r.layer}.weight update: ${deg(r.weight)}`);
  }
  return parts.join(', ');
}

const MODE_NAMES: Record<Feedback, string> = { bp: 'backprop', alignment: 'feedback alignment', sign: 'sign-symmetric' };

/** The --plot path: FILE.svg that can be written. */
export async function checkPlotPath(file: string): Promise<void> {
  if (!file.endsWith('.svg')) throw new UsageError(`--plot expects a FILE.svg path, got ${JSON.stringify(file)}`);
  await checkWritable('--plot', file);
}

/**
 * That `file` can be written, found before training rather than after it: its directory exists,
 * it is not a directory, and the file opens for writing. A file that did not exist is created
 * and removed again (permission bits alone miss read-only mounts, /proc, and root's rights).
 */
export async function checkWritable(flag: string, file: string): Promise<void> {
  const dir = dirname(resolve(file));
  await access(dir).catch(() => {
    throw new UsageError(`${flag}: directory ${dir} does not exist`);
  });
  const existing = await stat(file).catch(() => null);
  if (existing?.isDirectory()) throw new UsageError(`${flag}: ${file} is a directory`);
  try {
    const h = await open(file, existing === null ? 'wx' : 'r+');
    await h.close();
    if (existing === null) await unlink(file);
  } catch (e) {
    throw new UsageError(`${flag}: cannot write ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** The angle curves of one run: per FA layer its signal angle, and its weight-update angle unless identically 0. */
function angleSeries(mode: Feedback, samples: readonly AngleSample[], color: (i: number) => string): Series[] {
  const layers = samples[0]?.angles.map((r) => r.layer) ?? [];
  const out: Series[] = [];
  layers.forEach((layer, i) => {
    const sig = samples.map((s) => [s.epoch, s.angles[i].signal ?? NaN] as const);
    const wt = samples.map((s) => [s.epoch, s.angles[i].weight] as const);
    if (sig.some(([, v]) => Number.isFinite(v)))
      out.push({ label: `${MODE_NAMES[mode]}: signal sent back by ${layer}`, color: color(out.length), points: sig });
    if (wt.some(([, v]) => v >= 0.05))
      out.push({ label: `${MODE_NAMES[mode]}: update of ${layer}.weight`, color: color(out.length), points: wt, dashed: true });
  });
  return out;
}

const pct = (v: number): string => `${Math.round(v * 100) / 100}%`;
const ANGLE_REF = [{ y: 90, label: '90° = orthogonal' }];

function anglePanel(series: Series[], epochs: number): Panel {
  return {
    title: 'Alignment with backprop',
    xLabel: 'epoch',
    yLabel: 'angle to the true gradient (degrees)',
    series,
    yRange: [0, 100],
    xRange: [0, epochs],
    refs: ANGLE_REF,
  };
}

/** `train --plot`: loss, train/test accuracy, and the alignment angles when the model uses feedback alignment. */
export function trainPlot(args: TrainArgs, history: readonly EpochRecord[], angles: readonly AngleSample[]): string {
  const panels: Panel[] = [
    {
      title: 'Training loss',
      xLabel: 'epoch',
      yLabel: 'cross-entropy (mean over epoch)',
      log: true,
      series: [{ label: 'train loss', color: COLORS[0], points: history.map((h) => [h.epoch, h.loss]) }],
    },
    {
      title: 'Accuracy',
      xLabel: 'epoch',
      yLabel: 'accuracy',
      yFormat: pct,
      series: [
        { label: 'train', color: COLORS[0], points: history.map((h) => [h.epoch, 100 * h.trainAccuracy]), dashed: true },
        { label: 'test', color: COLORS[1], points: history.map((h) => [h.epoch, 100 * h.testAccuracy]) },
      ],
    },
  ];
  if (angles.length > 0)
    panels.push(
      anglePanel(
        angleSeries(args.feedback, angles, (i) => COLORS[2 + i]),
        args.epochs,
      ),
    );
  const last = history[history.length - 1];
  return renderSvg(
    `${args.model} on ${args.dataset}, ${MODE_NAMES[args.feedback]}`,
    panels,
    subtitle(args, last ? `test accuracy ${percent(last.testAccuracy)}` : ''),
  );
}

interface Run {
  mode: Feedback;
  history: EpochRecord[];
  angles: AngleSample[];
}

function subtitle(args: TrainArgs, tail: string): string {
  return `${runSummary(args)}${tail ? ` · ${tail}` : ''}`;
}

/** `compare --plot`: loss and test accuracy per feedback rule, and every FA run's alignment angles. */
function comparePlot(args: TrainArgs, runs: readonly Run[]): string {
  const color = (m: Feedback) => COLORS[FEEDBACK_MODES.indexOf(m)];
  const angleColors = ['#d62728', '#ff7f0e', '#2ca02c', '#17becf'];
  let k = 0;
  const angles = runs.flatMap((r) => angleSeries(r.mode, r.angles, () => angleColors[k++ % angleColors.length]));
  const panels: Panel[] = [
    {
      title: 'Training loss',
      xLabel: 'epoch',
      yLabel: 'cross-entropy (mean over epoch)',
      log: true,
      series: runs.map((r) => ({ label: MODE_NAMES[r.mode], color: color(r.mode), points: r.history.map((h) => [h.epoch, h.loss]) })),
    },
    {
      title: 'Test accuracy',
      xLabel: 'epoch',
      yLabel: 'test accuracy',
      yFormat: pct,
      series: runs.map((r) => ({
        label: MODE_NAMES[r.mode],
        color: color(r.mode),
        points: r.history.map((h) => [h.epoch, 100 * h.testAccuracy]),
      })),
    },
  ];
  if (angles.length > 0) panels.push(anglePanel(angles, args.epochs));
  const accs = runs.map((r) => `${MODE_NAMES[r.mode]} ${percent(r.history[r.history.length - 1].testAccuracy)}`).join(', ');
  return renderSvg(
    `${args.model} on ${args.dataset}: ${runs.map((r) => MODE_NAMES[r.mode]).join(' vs ')}`,
    panels,
    subtitle(args, `test ${accs}`),
  );
}

/** Takes `--feedback a,b` out of argv: the modes to compare (default bp,alignment) and the rest. */
function splitFeedback(argv: readonly string[]): { modes: Feedback[]; rest: string[] } {
  const rest: string[] = [];
  let list = 'bp,alignment';
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i];
    if (w === '--feedback' || w.startsWith('--feedback=')) {
      const v = w === '--feedback' ? argv[++i] : w.slice('--feedback='.length);
      if (v === undefined || v.startsWith('--')) throw new UsageError('--feedback needs a value');
      list = v;
    } else rest.push(w);
  }
  const modes = list.split(',').map((m) => m.trim());
  for (const m of modes) {
    if (!(FEEDBACK_MODES as readonly string[]).includes(m))
      throw new UsageError(`--feedback takes a comma-separated list of ${FEEDBACK_MODES.join(', ')}, got ${JSON.stringify(m)}`);
  }
  if (new Set(modes).size !== modes.length) throw new UsageError(`--feedback lists a rule twice: ${JSON.stringify(list)}`);
  return { modes: modes as Feedback[], rest };
}

/** Runs `adjoint compare` (the words after `compare`); resolves to the exit code. */
export async function compare(argv: readonly string[], io: { stdout: Sink; stderr: Sink }): Promise<number> {
  const { modes, rest } = splitFeedback(argv);
  const args = parseTrainArgs(rest);
  if (args.save !== null) throw new UsageError('compare does not take --save (train one rule with adjoint train --save)');
  if (args.plot !== null) await checkPlotPath(args.plot);
  await init({ threads: args.threads });
  const runs: Run[] = [];
  for (const mode of modes) {
    io.stdout.write(`${runs.length ? '\n' : ''}== ${MODE_NAMES[mode]} (--feedback ${mode}) ==\n`);
    const monitor = new Monitor(io.stdout, { diagnostics: args.diagnostics, angles: true });
    const result = await train({ ...args, feedback: mode }, io.stdout, monitor.hooks());
    monitor.dispose();
    result.model.dispose();
    runs.push({ mode, history: result.history, angles: monitor.angles });
  }
  io.stdout.write('\nfeedback             test accuracy  final alignment with backprop\n');
  for (const r of runs) {
    const a = r.angles[r.angles.length - 1];
    io.stdout.write(
      `${MODE_NAMES[r.mode].padEnd(21)}${percent(r.history[r.history.length - 1].testAccuracy).padStart(13)}  ${a ? describeAngles(a.angles) : '—'}\n`,
    );
  }
  if (args.plot !== null) {
    await writeFile(args.plot, comparePlot(args, runs));
    io.stdout.write(`wrote ${args.plot}\n`);
  }
  io.stdout.write(`test accuracy: ${runs.map((r) => `${r.mode} ${percent(r.history[r.history.length - 1].testAccuracy)}`).join(', ')}\n`);
  return 0;
}
