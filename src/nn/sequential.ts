// nn.Sequential: modules applied in order, registered as "0", "1", ... so parameters are
// named "0.weight", "2.bias" exactly as in PyTorch. An options object may follow the modules.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { Module } from './module.js';
import { sequentialForward, checkPlan } from '../autodiff/checkpoint.js';

export interface SequentialOptions {
  /** Activation checkpointing: ⌈√L⌉ segments ('sqrt'), k segments, or a memory budget (see planSegments). */
  checkpoint?: 'sqrt' | number | { maxBytes: number };
}

export class Sequential extends Module {
  readonly layers: readonly Module[];
  readonly options: SequentialOptions;

  constructor(...items: (Module | SequentialOptions)[]) {
    super();
    const last = items[items.length - 1];
    // Only a plain object counts as options, so a stray Tensor or array is reported, not swallowed.
    const hasOptions = typeof last === 'object' && last !== null && Object.getPrototypeOf(last) === Object.prototype;
    const mods = hasOptions ? items.slice(0, -1) : items;
    mods.forEach((m, i) => {
      if (!(m instanceof Module)) throw new ArgumentError(`Sequential: argument ${i} must be a Module (an options object may only come last), got ${typeof m}`);
      this.registerModule(String(i), m);
    });
    this.layers = mods as Module[];
    this.options = hasOptions ? { ...(last as SequentialOptions) } : {};
    if (this.options.checkpoint !== undefined) checkPlan(this.options.checkpoint, 'Sequential');
  }

  get length(): number {
    return this.layers.length;
  }

  forward(x: Tensor): Tensor {
    // Frees each intermediate once consumed; with the checkpoint option, runs segments through checkpoint().
    return sequentialForward(this.layers, x, this.options.checkpoint);
  }

  /** Frees every layer's parameters and what a layer owns besides (a Linear's feedback matrix). */
  override dispose(): void {
    for (const m of this.layers) m.dispose();
    super.dispose();
  }
}
