// OneCycleLR as torch.optim.lr_scheduler.OneCycleLR (Smith and Topin 2017, "Super-Convergence"):
// the lr rises from maxLr/divFactor to maxLr over pctStart of the steps, then falls to
// initialLr/finalDivFactor (threePhase: back to the initial lr first, then down); the momentum
// (SGD's momentum, Adam's beta1) moves the opposite way between maxMomentum and baseMomentum.
import { AdjointError, ArgumentError } from '../errors.js';
import type { Optimizer } from './optimizer.js';
import { LRScheduler, between, cos, integer, options } from './scheduler-base.js';
import { describe, tooMany } from '../args.js';

/** Options for {@link OneCycleLR}: PyTorch's arguments in camelCase (`maxLr`, `totalSteps`, `pctStart`, …). */
export interface OneCycleLROptions {
  /** Peak lr: one number, or one per parameter group. */
  maxLr: number | readonly number[];
  /** Steps in the cycle; or give epochs and stepsPerEpoch. */
  totalSteps?: number;
  /** Number of epochs (with `stepsPerEpoch`, instead of `totalSteps`). */
  epochs?: number;
  /** Steps per epoch (with `epochs`, instead of `totalSteps`). */
  stepsPerEpoch?: number;
  /** Fraction of the cycle spent raising the lr (default 0.3). */
  pctStart?: number;
  /** 'cos' (default) or 'linear'. */
  annealStrategy?: 'cos' | 'linear';
  /** Cycle momentum (or Adam's beta1) inversely to the lr (default true). */
  cycleMomentum?: boolean;
  /** Lowest momentum, at the peak lr (default 0.85); one number or one per group. */
  baseMomentum?: number | readonly number[];
  /** Highest momentum, at the start and end (default 0.95); one number or one per group. */
  maxMomentum?: number | readonly number[];
  /** initialLr = maxLr / divFactor (default 25). */
  divFactor?: number;
  /** minLr = initialLr / finalDivFactor (default 1e4). */
  finalDivFactor?: number;
  /** Three phases as in the paper instead of fastai's two (default false). */
  threePhase?: boolean;
}

type Level = 'initial' | 'max' | 'min';
type Mom = 'max' | 'base';
interface Phase {
  endStep: number;
  startLr: Level;
  endLr: Level;
  startMomentum: Mom;
  endMomentum: Mom;
}

const KEYS = [
  'maxLr',
  'totalSteps',
  'epochs',
  'stepsPerEpoch',
  'pctStart',
  'annealStrategy',
  'cycleMomentum',
  'baseMomentum',
  'maxMomentum',
  'divFactor',
  'finalDivFactor',
  'threePhase',
];

/** One value per group from a number or an array (PyTorch's _format_param). */
function perGroup(name: string, v: number | readonly number[], n: number): number[] {
  const list = Array.isArray(v) ? [...v] : Array.from({ length: n }, () => v as number);
  if (list.length !== n) throw new ArgumentError(`OneCycleLR: ${name} must have one value per parameter group (${n}), got ${list.length}`);
  list.forEach((x, i) => between('OneCycleLR', Array.isArray(v) ? `${name}[${i}]` : name, x, 0, Number.MAX_VALUE));
  return list;
}

function phases(total: number, pct: number, three: boolean): Phase[] {
  if (three) {
    return [
      { endStep: pct * total - 1, startLr: 'initial', endLr: 'max', startMomentum: 'max', endMomentum: 'base' },
      { endStep: 2 * pct * total - 2, startLr: 'max', endLr: 'initial', startMomentum: 'base', endMomentum: 'max' },
      { endStep: total - 1, startLr: 'initial', endLr: 'min', startMomentum: 'max', endMomentum: 'max' },
    ];
  }
  return [
    { endStep: pct * total - 1, startLr: 'initial', endLr: 'max', startMomentum: 'max', endMomentum: 'base' },
    { endStep: total - 1, startLr: 'max', endLr: 'min', startMomentum: 'base', endMomentum: 'max' },
  ];
}

/**
 * The 1cycle policy (Smith and Topin 2019), as PyTorch's `OneCycleLR`: the lr rises from `maxLr / divFactor` to `maxLr`, then anneals to far below; momentum cycles the other way.
 * Step it after every batch.
 */
export class OneCycleLR extends LRScheduler {
  /** Steps in the cycle. */
  readonly totalSteps: number;
  private readonly phases: Phase[];
  private readonly anneal: (start: number, end: number, pct: number) => number;
  private readonly lr: Record<Level, number[]>;
  private readonly momentum: Record<Mom, number[]> | null;
  private readonly useBeta1: boolean;

  constructor(optimizer: Optimizer, opts: OneCycleLROptions) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.OneCycleLR', 2, arguments.length);
    super('OneCycleLR', optimizer);
    const o = options('OneCycleLR', opts, KEYS);
    if (o.totalSteps !== undefined) this.totalSteps = integer('OneCycleLR', 'totalSteps', o.totalSteps, 1);
    else if (o.epochs !== undefined && o.stepsPerEpoch !== undefined) {
      this.totalSteps = integer('OneCycleLR', 'epochs', o.epochs, 1) * integer('OneCycleLR', 'stepsPerEpoch', o.stepsPerEpoch, 1);
    } else throw new ArgumentError('OneCycleLR: give either totalSteps or both epochs and stepsPerEpoch');
    const pct = between('OneCycleLR', 'pctStart', o.pctStart ?? 0.3, 0, 1);
    this.phases = phases(this.totalSteps, pct, o.threePhase ?? false);
    // A phase of length exactly 0 that a step can land in (the first, at step 0, or the last, at
    // step totalSteps: pctStart 1) would divide by zero there, at the end of a run: refuse it now.
    this.phases.reduce((start, ph, k) => {
      if (ph.endStep === start && (k === 0 || k === this.phases.length - 1))
        throw new ArgumentError(
          `OneCycleLR: phase ${k + 1} has no steps (pctStart ${pct} of totalSteps ${this.totalSteps}); use more steps or another pctStart`,
        );
      return ph.endStep;
    }, 0);
    const strategy = o.annealStrategy ?? 'cos';
    if (strategy !== 'cos' && strategy !== 'linear')
      throw new ArgumentError(`OneCycleLR: annealStrategy must be 'cos' or 'linear', got ${describe(strategy)}`);
    this.anneal = strategy === 'cos' ? (s, e, p) => e + ((s - e) / 2) * (cos(Math.PI * p) + 1) : (s, e, p) => (e - s) * p + s;
    const groups = optimizer.paramGroups,
      n = groups.length;
    const div = between('OneCycleLR', 'divFactor', o.divFactor ?? 25, 0, Number.MAX_VALUE, true);
    const finalDiv = between('OneCycleLR', 'finalDivFactor', o.finalDivFactor ?? 1e4, 0, Number.MAX_VALUE, true);
    const max = perGroup('maxLr', o.maxLr, n),
      initial = max.map((m) => m / div);
    this.lr = { initial, max, min: initial.map((i) => i / finalDiv) };
    groups.forEach((g, i) => (g.initialLr = initial[i]));
    this.useBeta1 = 'betas' in optimizer.defaults;
    this.momentum = null;
    if (o.cycleMomentum ?? true) {
      if (!this.useBeta1 && !('momentum' in optimizer.defaults))
        throw new ArgumentError(
          `OneCycleLR: cycleMomentum needs an optimizer with momentum or betas; ${optimizer.name} has neither (pass cycleMomentum: false)`,
        );
      this.momentum = { max: perGroup('maxMomentum', o.maxMomentum ?? 0.95, n), base: perGroup('baseMomentum', o.baseMomentum ?? 0.85, n) };
      groups.forEach((g, i) => this.setMomentum(g as unknown as Record<string, unknown>, this.momentum!.max[i]));
    }
    this.start();
  }

  private setMomentum(g: Record<string, unknown>, m: number): void {
    if (this.useBeta1) g.betas = [m, (g.betas as readonly number[])[1]];
    else g.momentum = m;
  }

  protected getLr(): number[] {
    const step = this.lastEpoch;
    if (step > this.totalSteps) throw new ArgumentError(`OneCycleLR: stepped ${step} times, but totalSteps is ${this.totalSteps}`);
    const n = this.lr.max.length;
    if (this.optimizer.paramGroups.length !== n)
      throw new AdjointError(
        `OneCycleLR.step(): the optimizer has ${this.optimizer.paramGroups.length} parameter groups but the schedule was built for ${n} ` +
          '(a group added with addParamGroup afterwards has no maxLr); build OneCycleLR after adding every group',
      );
    return this.optimizer.paramGroups.map((g, i) => {
      let start = 0;
      for (let k = 0; k < this.phases.length; k++) {
        const ph = this.phases[k];
        if (step <= ph.endStep || k === this.phases.length - 1) {
          if (ph.endStep === start)
            throw new ArgumentError(
              `OneCycleLR: phase ${k + 1} has no steps (pctStart · totalSteps = ${ph.endStep + 1}); use more steps or another pctStart`,
            );
          const pct = (step - start) / (ph.endStep - start);
          if (this.momentum !== null)
            this.setMomentum(
              g as unknown as Record<string, unknown>,
              this.anneal(this.momentum[ph.startMomentum][i], this.momentum[ph.endMomentum][i], pct),
            );
          return this.anneal(this.lr[ph.startLr][i], this.lr[ph.endLr][i], pct);
        }
        start = ph.endStep;
      }
      throw new ArgumentError('OneCycleLR: internal: no phase for this step');
    });
  }
}
