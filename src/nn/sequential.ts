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
import { sequentialForward, checkPlan, type Layer } from '../autodiff/checkpoint.js';
import { describe } from '../args.js';

/** Activation modules a preceding Linear absorbs. Exact classes, the Linear's too: a subclass may change forward. */
const FUSABLE = new Map<unknown, Activation>([[ReLU, 'relu'], [Tanh, 'tanh']]);

/** The steps forward() runs: the modules, with each Linear → activation pair as one step. */
function fuse(layers: readonly Module[]): Layer[] {
  const steps: Layer[] = [];
  for (let i = 0; i < layers.length; i++) {
    const m = layers[i], act = FUSABLE.get(layers[i + 1]?.constructor);
    if (m instanceof Linear && m.constructor === Linear && act !== undefined) {
      steps.push({ forward: (x: Tensor) => m.forwardAct(x, act) });
      i++;
    } else steps.push(m);
  }
  return steps;
}

export interface SequentialOptions {
  /** Activation checkpointing: ⌈√L⌉ segments ('sqrt'), k segments, or a memory budget (see planSegments). */
  checkpoint?: 'sqrt' | number | { maxBytes: number };
}

export class Sequential extends Module {
  readonly layers: readonly Module[];
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
      if (!(m instanceof Module)) throw new ArgumentError(`Sequential: argument ${i} must be a Module (an options object may only come last), got ${describe(m)}`);
      this.registerModule(String(i), m);
    });
    this.layers = mods as Module[];
    this.options = hasOptions ? { ...(last as SequentialOptions) } : {};
    this.steps = this.options.checkpoint === undefined ? fuse(this.layers) : this.layers;
    if (this.options.checkpoint !== undefined) checkPlan(this.options.checkpoint, 'Sequential');
  }

  get length(): number {
    return this.layers.length;
  }

  forward(x: Tensor): Tensor {
    // Frees each intermediate once consumed; with the checkpoint option, runs segments through checkpoint().
    return sequentialForward(this.steps, x, this.options.checkpoint);
  }

  /** Frees every layer's parameters and what a layer owns besides (a Linear's feedback matrix). */
  override dispose(): void {
    for (const m of this.layers) m.dispose();
    super.dispose();
  }
}
