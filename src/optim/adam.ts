// Adam (Kingma and Ba 2015) and AdamW (Loshchilov and Hutter 2019), exactly as torch.optim:
// Adam adds weightDecay·p to the gradient (L2), AdamW shrinks p by (1 − lr·weightDecay)
// before the update. Step counts are per parameter; bias corrections are computed in wasm.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { splitMap } from '../wasm/split.js';
import { SUFFIX } from '../tensor/dtype.js';
import { Optimizer, defined, hyper, knownKeys, type ParamGroup, type Params } from './optimizer.js';
import type { StateCodec } from './state-dict.js';
import { perCall } from '../wasm/hooks.js';
import { describe, tooMany } from '../args.js';

/** Options for {@link Adam} and {@link AdamW}: PyTorch's arguments in camelCase, the defaults of every parameter group. */
export interface AdamOptions {
  /** Learning rate; default 1e-3. */
  lr?: number;
  /** Decay rates of the running means of the gradient and its square; default `[0.9, 0.999]`. */
  betas?: readonly [number, number];
  /** Added to the denominator for stability; default 1e-8. */
  eps?: number;
  /** Weight decay: L2 added to the gradient (Adam, default 0) or decoupled (AdamW, default 0.01). */
  weightDecay?: number;
}

/** One Adam/AdamW parameter group: its tensors and hyper-parameters. */
export interface AdamGroup extends ParamGroup {
  /** This group's decay rates of the two running means. */
  betas: readonly [number, number];
  /** This group's denominator epsilon. */
  eps: number;
  /** This group's weight decay. */
  weightDecay: number;
}

const KEYS = ['lr', 'betas', 'eps', 'weightDecay'] as const;
const CODEC: StateCodec = {
  buffers: ['exp_avg', 'exp_avg_sq'],
  step: true,
  hypers: [
    ['lr', 'lr', 'number'],
    ['betas', 'betas', 'pair'],
    ['eps', 'eps', 'number'],
    ['weightDecay', 'weight_decay', 'number'],
  ],
};

/** Checks one group's options (defaults already merged in). */
function adamGroup(name: string) {
  return (o: Partial<Omit<AdamGroup, 'params'>>, where: string): Omit<AdamGroup, 'params'> => {
    knownKeys(name, where === 'params' ? 'options' : where, o, KEYS);
    const at = (key: string) => (where === 'params' ? key : `${where}.${key}`);
    const betas = o.betas;
    if (!Array.isArray(betas) || betas.length !== 2)
      throw new ArgumentError(`${name}: ${at('betas')} must be [beta1, beta2], got ${describe(betas)}`);
    return {
      lr: hyper(name, at('lr'), o.lr as number),
      betas: [hyper(name, `${at('betas')}[0]`, betas[0], 0, 1), hyper(name, `${at('betas')}[1]`, betas[1], 0, 1)],
      eps: hyper(name, at('eps'), o.eps as number),
      weightDecay: hyper(name, at('weightDecay'), o.weightDecay as number),
    };
  };
}

/** The shared Adam/AdamW machinery; `decoupled` picks AdamW's weight decay. */
abstract class AdamFamily extends Optimizer<AdamGroup> {
  private readonly decoupled: boolean;

  protected constructor(name: 'Adam' | 'AdamW', params: Params<AdamGroup>, opts: AdamOptions, defaultDecay: number) {
    if (opts === null || typeof opts !== 'object') throw new ArgumentError(`${name}: options must be an object, got ${describe(opts)}`);
    knownKeys(name, 'options', opts, KEYS);
    const defaults = { lr: 1e-3, betas: [0.9, 0.999] as const, eps: 1e-8, weightDecay: defaultDecay, ...defined(opts) };
    super(name, params, defaults, adamGroup(name), CODEC);
    this.decoupled = name === 'AdamW';
  }

  /** The defaults' betas (each group may override them). */
  get betas(): readonly [number, number] {
    return this.defaults.betas;
  }
  /** The defaults' eps (each group may override it). */
  get eps(): number {
    return this.defaults.eps;
  }
  /** The defaults' weight decay (each group may override it). */
  get weightDecay(): number {
    return this.defaults.weightDecay;
  }

  /** Number of updates applied to p so far. */
  stepCount(p: Tensor): number {
    return this.steps.get(p) ?? 0;
  }

  protected update(p: Tensor, g: Tensor, group: AdamGroup): void {
    const [m, v] = this.buffers(p, 2).bufs;
    // perCall: a compiled step counts the step and reads the group's hyper-parameters afresh on every replay.
    const scalars = perCall(() => {
      const t = this.stepCount(p) + 1;
      this.steps.set(p, t);
      return [group.lr, group.betas[0], group.betas[1], group.eps, group.weightDecay, t, this.decoupled ? 1 : 0];
    });
    // Elementwise: split across the thread pool when large (16-element-aligned pieces).
    splitMap(`adam_${SUFFIX[p.dtype]}`, p.dtype === 'float32' ? 4 : 8, [p.ptr, g.ptr, m.ptr, v.ptr], p.size, scalars, 4);
  }
}

/**
 * Adam (Kingma and Ba 2015) with PyTorch's update rule and L2 weight decay added to the gradient
 * (default 0). Defaults: lr 1e-3, betas [0.9, 0.999], eps 1e-8.
 */
export class Adam extends AdamFamily {
  constructor(params: Params<AdamGroup>, opts: AdamOptions = {}) {
    if (arguments.length > 2) throw tooMany('optim.Adam', 2, arguments.length);
    super('Adam', params, opts, 0);
  }
}

/**
 * AdamW (Loshchilov and Hutter 2019): Adam with decoupled weight decay, PyTorch's update rule.
 * Defaults: lr 1e-3, betas [0.9, 0.999], eps 1e-8, weightDecay 0.01. `params` is a list of
 * tensors or of parameter groups that override the options.
 *
 * @throws {@link ArgumentError} for an unknown option, a bad hyper-parameter or a repeated parameter.
 * @example
 * ```ts
 * const model = new nn.Linear(4, 1, { seed: 0 });
 * const x = randn([32, 4], { seed: 1 }), y = randn([32, 1], { seed: 2 });
 * const opt = new optim.AdamW(model.parameters(), { lr: 1e-2 });
 * for (let i = 0; i < 100; i++) {
 *   tidy(() => {
 *     opt.zeroGrad();
 *     mseLoss(model.forward(x), y).backward();
 *     opt.step();
 *   });
 * }
 * // parameter groups: no decay on the bias
 * new optim.AdamW([{ params: [model.weight], weightDecay: 0.1 }, { params: [model.bias!], weightDecay: 0 }], { lr: 1e-3 });
 * ```
 */
export class AdamW extends AdamFamily {
  constructor(params: Params<AdamGroup>, opts: AdamOptions = {}) {
    if (arguments.length > 2) throw tooMany('optim.AdamW', 2, arguments.length);
    super('AdamW', params, opts, 0.01);
  }
}
