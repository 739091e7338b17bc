// StepLR, LinearLR, CosineAnnealingLR and LambdaLR with PyTorch's rules and defaults. Each
// getLr() is PyTorch's chainable form (it updates the groups' current lr, so schedulers
// compose), written operation for operation like torch/optim/lr_scheduler.py so the doubles
// agree; closedFormLr() is the form SequentialLR uses when it switches to a scheduler.
import { ArgumentError } from '../errors.js';
import type { Optimizer } from './optimizer.js';
import { LRScheduler, between, cos, integer, options, pow } from './scheduler-base.js';
import { tooMany } from '../args.js';

const lrs = (opt: Optimizer) => opt.paramGroups.map((g) => g.lr);

/** Options for {@link StepLR} (PyTorch's arguments in camelCase). */
export interface StepLROptions {
  /** Decay every stepSize steps. */
  stepSize: number;
  /** Multiplicative factor (default 0.1). */
  gamma?: number;
}

/** lr = baseLr · gamma^⌊epoch / stepSize⌋. */
export class StepLR extends LRScheduler {
  /** Decay every `stepSize` steps. */
  readonly stepSize: number;
  /** The multiplicative factor. */
  readonly gamma: number;

  constructor(optimizer: Optimizer, opts: StepLROptions) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.StepLR', 2, arguments.length);
    super('StepLR', optimizer);
    const o = options('StepLR', opts, ['stepSize', 'gamma']);
    this.stepSize = integer('StepLR', 'stepSize', o.stepSize, 1);
    this.gamma = between('StepLR', 'gamma', o.gamma ?? 0.1, 0, Number.MAX_VALUE);
    this.start();
  }

  protected getLr(): number[] {
    if (this.lastEpoch === 0 || this.lastEpoch % this.stepSize !== 0) return lrs(this.optimizer);
    return this.optimizer.paramGroups.map((g) => g.lr * this.gamma);
  }

  protected override closedFormLr(): number[] {
    return this.baseLrs.map((b) => b * pow(this.gamma, Math.floor(this.lastEpoch / this.stepSize)));
  }
}

/** Options for {@link LinearLR} (PyTorch's arguments in camelCase). */
export interface LinearLROptions {
  /** Factor at step 0, in (0, 1] (default 1/3). */
  startFactor?: number;
  /** Factor from step totalIters on, in [0, 1] (default 1). */
  endFactor?: number;
  /** Steps to go from startFactor to endFactor (default 5). */
  totalIters?: number;
}

/** lr = baseLr · (start + (end − start) · min(epoch, totalIters) / totalIters). */
export class LinearLR extends LRScheduler {
  /** Factor of the base lr at step 0. */
  readonly startFactor: number;
  /** Factor of the base lr from step `totalIters` on. */
  readonly endFactor: number;
  /** Steps from `startFactor` to `endFactor`. */
  readonly totalIters: number;

  constructor(optimizer: Optimizer, opts: LinearLROptions = {}) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.LinearLR', 2, arguments.length);
    super('LinearLR', optimizer);
    const o = options('LinearLR', opts, ['startFactor', 'endFactor', 'totalIters']);
    this.startFactor = between('LinearLR', 'startFactor', o.startFactor ?? 1 / 3, 0, 1, true);
    this.endFactor = between('LinearLR', 'endFactor', o.endFactor ?? 1, 0, 1);
    this.totalIters = integer('LinearLR', 'totalIters', o.totalIters ?? 5, 1);
    this.start();
  }

  protected getLr(): number[] {
    const { startFactor: s, endFactor: e, totalIters: n } = this;
    if (this.lastEpoch === 0) return this.optimizer.paramGroups.map((g) => g.lr * s);
    if (this.lastEpoch > n) return lrs(this.optimizer);
    return this.optimizer.paramGroups.map((g) => g.lr * (1 + (e - s) / (n * s + (this.lastEpoch - 1) * (e - s))));
  }

  protected override closedFormLr(): number[] {
    const { startFactor: s, endFactor: e, totalIters: n } = this;
    return this.baseLrs.map((b) => b * (s + ((e - s) * Math.min(n, this.lastEpoch)) / n));
  }
}

/** Options for {@link CosineAnnealingLR} (PyTorch's arguments in camelCase). */
export interface CosineAnnealingLROptions {
  /** Half-period in steps: the lr reaches etaMin at step tMax. */
  tMax: number;
  /** Lowest lr (default 0). */
  etaMin?: number;
}

/** lr = etaMin + (baseLr − etaMin) · (1 + cos(π · epoch / tMax)) / 2 (Loshchilov and Hutter 2017, without restarts). */
export class CosineAnnealingLR extends LRScheduler {
  /** Half-period in steps. */
  readonly tMax: number;
  /** The lowest learning rate. */
  readonly etaMin: number;

  constructor(optimizer: Optimizer, opts: CosineAnnealingLROptions) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.CosineAnnealingLR', 2, arguments.length);
    super('CosineAnnealingLR', optimizer);
    const o = options('CosineAnnealingLR', opts, ['tMax', 'etaMin']);
    this.tMax = integer('CosineAnnealingLR', 'tMax', o.tMax, 1);
    this.etaMin = between('CosineAnnealingLR', 'etaMin', o.etaMin ?? 0, 0, Number.MAX_VALUE);
    this.start();
  }

  protected getLr(): number[] {
    const { tMax: T, etaMin: eta, lastEpoch: e } = this;
    const groups = this.optimizer.paramGroups;
    if (e === 0) return lrs(this.optimizer);
    if (this.stepCount === 1 && e > 0) return this.baseLrs.map((b) => eta + ((b - eta) * (1 + cos((e * Math.PI) / T))) / 2);
    // Python's modulo: non-negative for a positive divisor. Here the recursion's denominator would be 0.
    if ((((e - 1 - T) % (2 * T)) + 2 * T) % (2 * T) === 0) {
      return this.baseLrs.map((b, i) => groups[i].lr + ((b - eta) * (1 - cos(Math.PI / T))) / 2); // zip(base_lrs, groups)
    }
    return groups.map((g) => ((1 + cos((Math.PI * e) / T)) / (1 + cos((Math.PI * (e - 1)) / T))) * (g.lr - eta) + eta);
  }

  protected override closedFormLr(): number[] {
    const { tMax: T, etaMin: eta } = this;
    return this.baseLrs.map((b) => eta + ((b - eta) * (1 + cos((Math.PI * this.lastEpoch) / T))) / 2);
  }
}

/** The factor of the base learning rate at step `epoch`. */
export type LrLambda = (epoch: number) => number;

/** Options for {@link LambdaLR}. */
export interface LambdaLROptions {
  /** Factor of the base lr at each step: one function, or one per parameter group. */
  lrLambda: LrLambda | readonly LrLambda[];
}

/** lr = baseLr · lrLambda(epoch). */
export class LambdaLR extends LRScheduler {
  /** One factor function per parameter group. */
  readonly lrLambdas: readonly LrLambda[];

  constructor(optimizer: Optimizer, opts: LambdaLROptions) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.LambdaLR', 2, arguments.length);
    super('LambdaLR', optimizer);
    const o = options('LambdaLR', opts, ['lrLambda']);
    const n = optimizer.paramGroups.length;
    const fns = Array.isArray(o.lrLambda) ? [...o.lrLambda] : Array.from({ length: n }, () => o.lrLambda as LrLambda);
    if (fns.length !== n)
      throw new ArgumentError(`LambdaLR: expected ${n} lrLambda functions (one per parameter group), got ${fns.length}`);
    fns.forEach((f, i) => {
      if (typeof f !== 'function')
        throw new ArgumentError(
          `LambdaLR: lrLambda${Array.isArray(o.lrLambda) ? `[${i}]` : ''} must be a function of the step, got ${typeof f}`,
        );
    });
    this.lrLambdas = fns;
    this.start();
  }

  protected getLr(): number[] {
    return this.baseLrs.map((b, i) => {
      const f = this.lrLambdas[i](this.lastEpoch);
      if (typeof f !== 'number' || Number.isNaN(f))
        throw new ArgumentError(`LambdaLR: lrLambda(${this.lastEpoch}) returned ${String(f)}, expected a number`);
      return b * f;
    });
  }
}
