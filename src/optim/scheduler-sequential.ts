// SequentialLR as torch.optim.lr_scheduler.SequentialLR: schedulers take turns at milestone
// steps, e.g. a LinearLR warm-up then CosineAnnealingLR decay. At a milestone the next scheduler
// restarts at its step 0 (closed form); in between, the current one steps as usual.
import { ArgumentError } from '../errors.js';
import type { Optimizer } from './optimizer.js';
import { LRScheduler, integer, options, type SchedulerState } from './scheduler-base.js';
import { describe, tooMany } from '../args.js';

/** Options for {@link SequentialLR}. */
export interface SequentialLROptions {
  /** The schedulers, in order, all on this optimizer. */
  schedulers: readonly LRScheduler[];
  /** The steps at which the next scheduler takes over (one fewer than schedulers, increasing). */
  milestones: readonly number[];
}

/** Number of milestones ≤ x (Python's bisect_right on a sorted list). */
function bisectRight(a: readonly number[], x: number): number {
  let i = 0;
  while (i < a.length && a[i] <= x) i++;
  return i;
}

/** Runs several schedulers one after another, switching at `milestones` (PyTorch's `SequentialLR`), e.g. a linear warm-up then cosine annealing. */
export class SequentialLR extends LRScheduler {
  /** The schedulers, in order. */
  readonly schedulers: readonly LRScheduler[];
  /** The steps at which the next scheduler takes over. */
  readonly milestones: readonly number[];

  constructor(optimizer: Optimizer, opts: SequentialLROptions) {
    if (arguments.length > 2) throw tooMany('optim.lrScheduler.SequentialLR', 2, arguments.length);
    super('SequentialLR', optimizer);
    const o = options('SequentialLR', opts, ['schedulers', 'milestones']);
    const { schedulers, milestones } = o;
    if (!Array.isArray(schedulers) || schedulers.length === 0)
      throw new ArgumentError('SequentialLR: schedulers must be a non-empty array of schedulers');
    schedulers.forEach((s, i) => {
      if (!(s instanceof LRScheduler)) throw new ArgumentError(`SequentialLR: schedulers[${i}] is not a scheduler`);
      if (s.optimizer !== optimizer)
        throw new ArgumentError(
          `SequentialLR: schedulers[${i}] (${s.name}) belongs to another optimizer; all must share the SequentialLR's`,
        );
    });
    if (!Array.isArray(milestones) || milestones.length !== schedulers.length - 1) {
      throw new ArgumentError(
        `SequentialLR: expected ${schedulers.length - 1} milestones for ${schedulers.length} schedulers, got ${Array.isArray(milestones) ? milestones.length : describe(milestones)}`,
      );
    }
    // Its constructor's initial step would step the nested one's first scheduler before the
    // optimizer has stepped (PyTorch warns there and starts the schedule one step late).
    if (schedulers[0] instanceof SequentialLR)
      throw new ArgumentError(
        'SequentialLR: schedulers[0] is a SequentialLR, which cannot come first; list its schedulers and milestones in this one instead',
      );
    milestones.forEach((m, i) => {
      integer('SequentialLR', `milestones[${i}]`, m, i === 0 ? 1 : milestones[i - 1] + 1);
    });
    this.schedulers = [...schedulers];
    this.milestones = [...milestones];
    this.lastEpoch = 0;
    // Back to the initial lr, undo the step each scheduler's constructor took, and start the first.
    for (const g of optimizer.paramGroups) g.lr = g.initialLr!;
    undo(this);
    this.schedulers[0].initialStep();
    this.baseLrs = [...this.schedulers[0].baseLrs];
    this.lastLr = this.schedulers[0].getLastLr();
    this.stepCount = 1;
    this.optimizerCallsAtStart = optimizer.stepCalls;
  }

  override step(): void {
    this.checkOrder();
    this.stepCount++;
    this.lastEpoch++;
    const idx = bisectRight(this.milestones, this.lastEpoch);
    const s = this.schedulers[idx];
    if (idx > 0 && this.milestones[idx - 1] === this.lastEpoch) s.updateLr(0);
    else s.step();
    this.lastLr = s.getLastLr();
  }

  protected getLr(): number[] {
    return this.lastLr;
  }

  override stateDict(): SchedulerState {
    return { ...super.stateDict(), schedulers: this.schedulers.map((s) => s.stateDict()) };
  }

  /** Restores a `stateDict()` of this scheduler and of each scheduler it runs. */
  override loadStateDict(state: SchedulerState): void {
    const before = this.stateDict(); // a state that fails part-way is rolled back: all or nothing
    try {
      super.loadStateDict(state);
      const subs = state.schedulers;
      if (!Array.isArray(subs) || subs.length !== this.schedulers.length) {
        throw new ArgumentError(
          `SequentialLR.loadStateDict: expected the states of ${this.schedulers.length} schedulers, got ${Array.isArray(subs) ? subs.length : describe(subs)}`,
        );
      }
      subs.forEach((s, i) => this.schedulers[i].loadStateDict(s as SchedulerState));
    } catch (e) {
      super.loadStateDict(before);
      (before.schedulers as SchedulerState[]).forEach((s, i) => this.schedulers[i].loadStateDict(s));
      throw e;
    }
  }
}

/** Steps every (nested) scheduler's epoch back by one. */
function undo(s: LRScheduler): void {
  if (s instanceof SequentialLR) {
    for (const inner of s.schedulers) undo(inner);
  } else {
    s.lastEpoch -= 1;
  }
}
