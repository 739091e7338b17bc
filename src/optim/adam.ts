// Adam (Kingma and Ba 2015) and AdamW (Loshchilov and Hutter 2019), exactly as torch.optim:
// Adam adds weightDecay·p to the gradient (L2), AdamW shrinks p by (1 − lr·weightDecay)
// before the update. Step counts are per parameter; bias corrections are computed in wasm.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { splitMap } from '../wasm/split.js';
import { SUFFIX } from '../tensor/dtype.js';
import { Optimizer, hyper, type Params } from './optimizer.js';
import { perCall } from '../wasm/hooks.js';
import { describe } from '../args.js';

export interface AdamOptions {
  lr?: number;
  betas?: readonly [number, number];
  eps?: number;
  weightDecay?: number;
}

/** The shared Adam/AdamW machinery; `decoupled` picks AdamW's weight decay. */
abstract class AdamFamily extends Optimizer {
  lr: number;
  readonly betas: readonly [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private readonly decoupled: boolean;
  private readonly steps = new Map<Tensor, number>();

  protected constructor(name: 'Adam' | 'AdamW', params: Params, opts: AdamOptions, defaultDecay: number) {
    super(name, params);
    if (opts === null || typeof opts !== 'object') throw new ArgumentError(`${name}: options must be an object, got ${describe(opts)}`);
    const betas = opts.betas ?? [0.9, 0.999];
    if (!Array.isArray(betas) || betas.length !== 2) throw new ArgumentError(`${name}: betas must be [beta1, beta2], got ${String(betas)}`);
    this.lr = hyper(name, 'lr', opts.lr ?? 1e-3);
    this.betas = [hyper(name, 'betas[0]', betas[0], 0, 1), hyper(name, 'betas[1]', betas[1], 0, 1)];
    this.eps = hyper(name, 'eps', opts.eps ?? 1e-8);
    this.weightDecay = hyper(name, 'weightDecay', opts.weightDecay ?? defaultDecay);
    this.decoupled = name === 'AdamW';
  }

  /** Number of updates applied to p so far. */
  stepCount(p: Tensor): number {
    return this.steps.get(p) ?? 0;
  }

  protected update(p: Tensor, g: Tensor): void {
    const [m, v] = this.buffers(p, 2).bufs;
    const [b1, b2] = this.betas;
    // perCall: a compiled step counts the step and reads lr afresh on every replay.
    const scalars = perCall(() => {
      const t = this.stepCount(p) + 1;
      this.steps.set(p, t);
      return [this.lr, b1, b2, this.eps, this.weightDecay, t, this.decoupled ? 1 : 0];
    });
    // Elementwise: split across the thread pool when large (16-element-aligned pieces).
    splitMap(`adam_${SUFFIX[p.dtype]}`, p.dtype === 'float32' ? 4 : 8, [p.ptr, g.ptr, m.ptr, v.ptr], p.size, scalars, 4);
  }

  override dispose(): void {
    super.dispose();
    this.steps.clear();
  }
}

/** Adam with L2 weight decay (default 0). */
export class Adam extends AdamFamily {
  constructor(params: Params, opts: AdamOptions = {}) {
    super('Adam', params, opts, 0);
  }
}

/** Adam with decoupled weight decay; weightDecay defaults to 0.01 as in PyTorch. */
export class AdamW extends AdamFamily {
  constructor(params: Params, opts: AdamOptions = {}) {
    super('AdamW', params, opts, 0.01);
  }
}
