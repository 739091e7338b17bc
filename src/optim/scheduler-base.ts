// What every learning-rate scheduler shares, as torch.optim.lr_scheduler.LRScheduler: the
// first scheduler on an optimizer records each group's initialLr; base learning rates; the
// epoch counter (lastEpoch, -1 before the constructor's initial step, which is not a user step);
// step() sets every group's lr from getLr(). PyTorch warns when a scheduler steps before its
// optimizer has (the first value of the schedule would be skipped); we throw instead.
// Numbers follow PyTorch's formulas operation for operation, and cos/pow run in wasm, so a
// schedule has the same bits in every runtime.
import { AdjointError, ArgumentError } from '../errors.js';
import { kernel } from '../wasm/module.js';
import { Optimizer } from './optimizer.js';
import { describe, tooMany } from '../args.js';

/** cos(x) in wasm (never the engine's Math.cos). */
export const cos = (x: number): number => kernel('cos_scalar')(x);
/** x^y in wasm. */
export const pow = (x: number, y: number): number => kernel('pow_scalar')(x, y);

/** A scheduler's resumable state: plain numbers, so it fits JSON or safetensors' __metadata__. */
export interface SchedulerState {
  /** Steps taken (PyTorch's `last_epoch`). */
  lastEpoch: number;
  /** `step()` calls including the constructor's (PyTorch's `_step_count`). */
  stepCount: number;
  /** Each group's learning rate when the scheduler started. */
  baseLrs: number[];
  /** Each group's learning rate after the last step. */
  lastLr: number[];
  [extra: string]: unknown;
}

/** Checks an integer option ≥ lo. */
export function integer(op: string, name: string, v: unknown, lo: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < lo)
    throw new ArgumentError(`${op}: ${name} must be an integer ≥ ${lo}, got ${describe(v)}`);
  return v;
}

/** Checks a finite number option in [lo, hi]. */
export function between(op: string, name: string, v: unknown, lo: number, hi: number, loOpen = false): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v > hi || (loOpen ? v <= lo : v < lo)) {
    throw new ArgumentError(`${op}: ${name} must be a number in ${loOpen ? '(' : '['}${lo}, ${hi}], got ${describe(v)}`);
  }
  return v;
}

/** The options object, with unknown keys refused. */
export function options<T extends object>(op: string, o: T | undefined, known: readonly string[]): T {
  if (o === null || typeof o !== 'object') throw new ArgumentError(`${op}: options must be an object, got ${describe(o)}`);
  for (const key of Object.keys(o))
    if (!known.includes(key)) throw new ArgumentError(`${op}: unknown option '${key}' (expected ${known.join(', ')})`);
  return o;
}

/** The base class of learning-rate schedulers, as `torch.optim.lr_scheduler.LRScheduler`: the constructor sets the first rate, each `step()` (after `optimizer.step()`) the next. */
export abstract class LRScheduler {
  /** The optimizer whose groups' `lr` it sets. */
  readonly optimizer: Optimizer;
  /** Steps taken: 0 after the constructor, then 1, 2, … (PyTorch's last_epoch). */
  lastEpoch = -1;
  /** Each group's initialLr when the scheduler started. */
  baseLrs: number[] = [];
  /** step() calls including the constructor's initial one (PyTorch's _step_count). */
  protected stepCount = 0;
  /** True while the constructor's initial step runs. */
  protected isInitial = false;
  /** Each group's learning rate after the last step. */
  protected lastLr: number[] = [];
  /** The optimizer's step count when the scheduler started (to warn about a schedule stepped first). */
  protected optimizerCallsAtStart = 0;

  /**
   * @param name - The class name, used in error messages.
   * @param optimizer - The optimizer to schedule.
   */
  protected constructor(
    readonly name: string,
    optimizer: Optimizer,
  ) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.LRScheduler', 2, arguments.length);
    if (new.target === LRScheduler || typeof name !== 'string')
      throw new ArgumentError('optim.lrScheduler.LRScheduler is the abstract base class: construct StepLR, LinearLR, CosineAnnealingLR, …');
    if (!(optimizer instanceof Optimizer))
      throw new ArgumentError(`${name}: the first argument must be an optimizer (e.g. new optim.AdamW(...)), got ${describe(optimizer)}`);
    this.optimizer = optimizer;
  }

  /** Records initialLr and base learning rates, then takes the initial step (subclasses call it last). */
  protected start(): void {
    for (const g of this.optimizer.paramGroups) g.initialLr ??= g.lr;
    this.baseLrs = this.optimizer.paramGroups.map((g) => g.initialLr!);
    this.initialStep();
  }

  /** Step counts reset, then one step that sets the schedule's first value. */
  initialStep(): void {
    this.stepCount = 0;
    this.optimizerCallsAtStart = this.optimizer.stepCalls;
    this.isInitial = true;
    try {
      this.step();
    } finally {
      this.isInitial = false;
    }
  }

  /** Advances the schedule by one and sets every group's lr. */
  step(): void {
    if (arguments.length > 0) throw tooMany('LRScheduler.step', 0, arguments.length);
    this.checkOrder();
    this.stepCount++;
    this.updateLr(null);
  }

  /** Throws on the first user step when the optimizer has not stepped since the scheduler started. */
  protected checkOrder(): void {
    if (this.stepCount === 1 && this.optimizer.stepCalls === this.optimizerCallsAtStart) {
      throw new AdjointError(
        `${this.name}.step() was called before ${this.optimizer.name}.step(): call ${this.optimizer.name}.step() first, then ${this.name}.step() ` +
          '(PyTorch order; otherwise the first value of the schedule is skipped)',
      );
    }
  }

  /** Sets lastEpoch (to `epoch`, using the closed form where there is one, or to lastEpoch + 1) and the groups' lr. */
  updateLr(epoch: number | null): void {
    let values: number[];
    if (epoch === null) {
      this.lastEpoch++;
      values = this.getLr();
    } else {
      this.lastEpoch = epoch;
      values = this.closedFormLr() ?? this.getLr();
    }
    // values may be shorter than the groups: a group added (addParamGroup) after the scheduler
    // was built has no base lr, and like PyTorch's zip the forms that start from base lrs leave
    // its lr alone instead of setting it to undefined (a NaN update).
    values.forEach((v, i) => (this.optimizer.paramGroups[i].lr = v));
    this.lastLr = this.optimizer.paramGroups.map((g) => g.lr);
  }

  /** The learning rate of each group after the last step. */
  getLastLr(): number[] {
    if (arguments.length > 0) throw tooMany('LRScheduler.getLastLr', 0, arguments.length);
    return [...this.lastLr];
  }

  /** The next learning rate of each group (PyTorch's chainable form). */
  protected abstract getLr(): number[];

  /** The learning rates at lastEpoch straight from base rates, where a closed form exists. */
  protected closedFormLr(): number[] | null {
    return null;
  }

  /** The resumable state: load it into a scheduler built with the same options on an optimizer whose own state is loaded. */
  stateDict(): SchedulerState {
    if (arguments.length > 0) throw tooMany('LRScheduler.stateDict', 0, arguments.length);
    return { lastEpoch: this.lastEpoch, stepCount: this.stepCount, baseLrs: [...this.baseLrs], lastLr: [...this.lastLr] };
  }

  /**
   * Restores a {@link LRScheduler.stateDict} into a scheduler built with the same options on the same optimizer.
   * @throws {@link ArgumentError} when `state` does not match the optimizer's parameter groups.
   */
  loadStateDict(state: SchedulerState): void {
    if (arguments.length > 1) throw tooMany('LRScheduler.loadStateDict', 1, arguments.length);
    if (state === null || typeof state !== 'object')
      throw new ArgumentError(`${this.name}.loadStateDict: expected an object from stateDict(), got ${describe(state)}`);
    const n = this.optimizer.paramGroups.length;
    const list = (key: 'baseLrs' | 'lastLr') => {
      const v = state[key];
      if (!Array.isArray(v) || v.length !== n || v.some((x) => typeof x !== 'number')) {
        throw new ArgumentError(`${this.name}.loadStateDict: ${key} must hold one number per parameter group (${n}), got ${describe(v)}`);
      }
      return [...v];
    };
    const baseLrs = list('baseLrs'),
      lastLr = list('lastLr');
    // Both read before either is written: a bad stepCount must not leave lastEpoch loaded.
    const lastEpoch = integer(`${this.name}.loadStateDict`, 'lastEpoch', state.lastEpoch, -1),
      stepCount = integer(`${this.name}.loadStateDict`, 'stepCount', state.stepCount, 0);
    this.lastEpoch = lastEpoch;
    this.stepCount = stepCount;
    this.baseLrs = baseLrs;
    this.lastLr = lastLr;
  }
}
