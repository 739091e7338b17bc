// nn.Sequential: modules applied in order, registered as "0", "1", ... so parameters are
// named "0.weight", "2.bias" exactly as in PyTorch. An options object may follow the modules.
// A Linear directly followed by ReLU or Tanh runs as one fused dense op (Linear.forwardAct):
// same values, one pass fewer each way; the module list and parameter names are unchanged.
// With the checkpoint option the modules run one by one, so segments and the planner's
// messages count modules, as the user wrote them.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { Module } from './module.js';
import { Linear } from './linear.js';
import { ReLU, Tanh } from './layers.js';
import type { Activation } from '../ops/dense.js';
import { BYTES } from '../tensor/dtype.js';
import { recordDraws, replayDraws } from '../tensor/replay.js';
import { modes, withMode } from '../ops/modes.js';
import { checkpoint } from '../autodiff/checkpoint.js';
import { checkPlan, planSegments, type CheckpointPlan, type SegmentPlan } from '../autodiff/segments.js';
import { describe, optionsArg, tooMany } from '../args.js';

/** Activation modules a preceding Linear absorbs. Exact classes, the Linear's too: a subclass may change forward. */
const FUSABLE = new Map<unknown, Activation>([
  [ReLU, 'relu'],
  [Tanh, 'tanh'],
]);

/** The steps forward() runs: the modules, with each Linear → activation pair as one step. */
function fuse(layers: readonly Module[]): Layer[] {
  const steps: Layer[] = [];
  for (let i = 0; i < layers.length; i++) {
    const m = layers[i],
      act = FUSABLE.get(layers[i + 1]?.constructor);
    if (m instanceof Linear && m.constructor === Linear && act !== undefined) {
      steps.push({ forward: (x: Tensor) => m.forwardAct(x, act) });
      i++;
    } else steps.push(m);
  }
  return steps;
}

/** Options for {@link Sequential}, passed as the last constructor argument. */
export interface SequentialOptions {
  /** Activation checkpointing: ⌈√L⌉ segments ('sqrt'), k segments, or a memory budget (see planSegments). */
  checkpoint?:
    | 'sqrt'
    | number
    | {
        /** Activation-memory budget in bytes. */
        maxBytes: number;
      };
}

/**
 * Runs its modules in order, as `torch.nn.Sequential`; parameters are named `0.weight`, `0.bias`, `2.weight`, ….
 * An options object may follow the modules: `new nn.Sequential(m1, m2, { checkpoint: 'sqrt' })`.
 */
export class Sequential extends Module {
  /** The modules, in the order forward() runs them. */
  readonly layers: readonly Module[];
  /** The options it was built with. */
  readonly options: SequentialOptions;
  /** What forward() runs (fixed at construction: checkpoint plans are keyed by the list). */
  private readonly steps: readonly Layer[];

  constructor(...items: (Module | SequentialOptions)[]) {
    super();
    const last = items[items.length - 1];
    // Only a plain object counts as options, so a stray Tensor or array is reported, not swallowed.
    const hasOptions = typeof last === 'object' && last !== null && Object.getPrototypeOf(last) === Object.prototype;
    const mods = hasOptions ? items.slice(0, -1) : items;
    mods.forEach((m, i) => {
      if (!(m instanceof Module))
        throw new ArgumentError(`Sequential: argument ${i} must be a Module (an options object may only come last), got ${describe(m)}`);
      this.registerModule(String(i), m);
    });
    this.layers = mods as Module[];
    this.options = hasOptions ? { ...optionsArg('nn.Sequential', last as SequentialOptions, ['checkpoint']) } : {};
    this.steps = this.options.checkpoint === undefined ? fuse(this.layers) : this.layers;
    if (this.options.checkpoint !== undefined) checkPlan(this.options.checkpoint, 'Sequential');
  }

  /** The number of modules. */
  get length(): number {
    return this.layers.length;
  }

  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Sequential.forward', 1, arguments.length);
    // Frees each intermediate once consumed; with the checkpoint option, runs segments through checkpoint().
    return sequentialForward(this.steps, x, this.options.checkpoint);
  }

  /** Frees every layer's parameters and what a layer owns besides (a Linear's feedback matrix). */
  override dispose(): void {
    for (const m of this.layers) m.dispose();
    super.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// Running a chain of layers, under a checkpoint plan when one is given.

export interface Layer {
  forward(x: Tensor): Tensor;
}

/** Applies layers in order, disposing each intermediate handle once the next layer has consumed it. */
function chain(layers: readonly Layer[], x: Tensor): Tensor {
  let h = x;
  for (const m of layers) {
    const next = m.forward(h);
    // Only the graph's saved views keep an intermediate alive now, and backward frees those as it goes.
    if (h !== x && next !== h) h.dispose();
    h = next;
  }
  return h;
}

/** Plans per layer chain and input signature, measured on the first call. */
const plans = new WeakMap<readonly Layer[], Map<string, SegmentPlan>>();

/** Output bytes of each layer for input x, from a run under noGrad that frees as it goes. */
function measure(layers: readonly Layer[], x: Tensor): number[] {
  const bytes: number[] = [];
  withMode('record', false, () => {
    let h = x;
    for (const m of layers) {
      const next = m.forward(h);
      bytes.push(next.size * BYTES[next.dtype]);
      if (h !== x && next !== h) h.dispose();
      h = next;
    }
    if (h !== x) h.dispose();
  });
  return bytes;
}

/**
 * layers applied to x, intermediates freed as soon as they are consumed; with a plan (and while
 * recording), split into segments run through checkpoint(). The plan is made on the first call
 * for each input shape from the layers' measured output bytes; that measuring run's random
 * draws are replayed by the real one, so the RNG streams advance exactly once per call.
 */
export function sequentialForward(layers: readonly Layer[], x: Tensor, plan?: CheckpointPlan): Tensor {
  if (plan === undefined || !modes.record || layers.length === 0) return chain(layers, x);
  let byShape = plans.get(layers);
  if (byShape === undefined) plans.set(layers, (byShape = new Map()));
  const key = `${x.dtype}[${x.shape}]`;
  const known = byShape.get(key);
  if (known !== undefined) return runSegments(layers, x, known);
  const [bytes, draws] = recordDraws(() => measure(layers, x));
  const made = planSegments(bytes, plan);
  byShape.set(key, made);
  return replayDraws(draws, () => runSegments(layers, x, made));
}

function runSegments(layers: readonly Layer[], x: Tensor, plan: SegmentPlan): Tensor {
  let h = x;
  for (const s of plan.segments) {
    const part = layers.slice(s.start, s.end);
    const run = (input: Tensor): Tensor => chain(part, input);
    Object.defineProperty(run, 'name', { value: `layers ${s.start}..${s.end - 1}` });
    const next = s.checkpoint ? checkpoint(run)(h) : run(h);
    if (h !== x && next !== h) h.dispose();
    h = next;
  }
  return h;
}
