// Stochastic gradient descent with momentum, dampening, L2 weight decay and Nesterov
// momentum (Sutskever et al. 2013), exactly as torch.optim.SGD: on the first step the
// momentum buffer is the gradient itself, later b ← μ·b + (1 − dampening)·g.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { splitMap } from '../wasm/split.js';
import { SUFFIX } from '../tensor/dtype.js';
import { Optimizer, defined, hyper, knownKeys, type ParamGroup, type Params } from './optimizer.js';
import type { StateCodec } from './state-dict.js';
import { perCall, guard } from '../wasm/hooks.js';
import { describe, tooMany } from '../args.js';

/** Options for {@link SGD}: PyTorch's arguments in camelCase, the defaults of every parameter group. */
export interface SGDOptions {
  /** Learning rate (required). */
  lr: number;
  /** Momentum factor μ; default 0 (plain SGD). */
  momentum?: number;
  /** L2 penalty added to the gradient; default 0. */
  weightDecay?: number;
  /** Nesterov momentum (needs momentum > 0 and dampening 0); default false. */
  nesterov?: boolean;
  /** Dampening of the gradient in the momentum buffer; default 0. */
  dampening?: number;
}

/** One SGD parameter group: its tensors and hyper-parameters. */
export interface SGDGroup extends ParamGroup {
  /** This group's momentum factor. */
  momentum: number;
  /** This group's dampening. */
  dampening: number;
  /** This group's L2 penalty. */
  weightDecay: number;
  /** Whether this group uses Nesterov momentum. */
  nesterov: boolean;
}

const NESTEROV = 1;
const FIRST = 2;
const KEYS = ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov'] as const;
const CODEC: StateCodec = {
  buffers: ['momentum_buffer'],
  step: false,
  hypers: [
    ['lr', 'lr', 'number'],
    ['momentum', 'momentum', 'number'],
    ['dampening', 'dampening', 'number'],
    ['weightDecay', 'weight_decay', 'number'],
    ['nesterov', 'nesterov', 'bool'],
  ],
};

/** Checks one group's options (defaults already merged in). */
function sgdGroup(o: Partial<Omit<SGDGroup, 'params'>>, where: string): Omit<SGDGroup, 'params'> {
  knownKeys('SGD', where === 'params' ? 'options' : where, o, KEYS);
  if (o.lr === undefined)
    throw new ArgumentError('SGD: options.lr is required, e.g. new optim.SGD(params, { lr: 0.1 }) (or an lr in every parameter group)');
  const at = (name: string) => (where === 'params' ? name : `${where}.${name}`);
  const g = {
    lr: hyper('SGD', at('lr'), o.lr),
    momentum: hyper('SGD', at('momentum'), o.momentum ?? 0),
    dampening: hyper('SGD', at('dampening'), o.dampening ?? 0, -Infinity),
    weightDecay: hyper('SGD', at('weightDecay'), o.weightDecay ?? 0),
    nesterov: o.nesterov ?? false,
  };
  if (typeof g.nesterov !== 'boolean') throw new ArgumentError(`SGD: ${at('nesterov')} must be true or false, got ${describe(g.nesterov)}`);
  if (g.nesterov && (g.momentum <= 0 || g.dampening !== 0))
    throw new ArgumentError(
      `SGD: ${at('nesterov')} requires momentum > 0 and dampening = 0, got momentum ${g.momentum} and dampening ${g.dampening}`,
    );
  return g;
}

/**
 * Stochastic gradient descent with momentum, dampening, L2 weight decay and Nesterov momentum, exactly as `torch.optim.SGD`.
 * `params` is a list of tensors or of parameter groups that override the options.
 *
 * @throws {@link ArgumentError} when `lr` is missing, an option is unknown or a hyper-parameter is out of range.
 */
export class SGD extends Optimizer<SGDGroup> {
  constructor(params: Params<SGDGroup>, opts: SGDOptions) {
    if (arguments.length > 2) throw tooMany('optim.SGD', 2, arguments.length);
    if (opts === null || typeof opts !== 'object')
      throw new ArgumentError('SGD: options.lr is required, e.g. new optim.SGD(params, { lr: 0.1 })');
    knownKeys('SGD', 'options', opts, KEYS);
    const defaults = { momentum: 0, dampening: 0, weightDecay: 0, nesterov: false, ...defined(opts) } as Omit<SGDGroup, 'params'>;
    super('SGD', params, defaults, sgdGroup, CODEC);
  }

  /** The defaults' momentum (each group may override it). */
  get momentum(): number {
    return this.defaults.momentum;
  }
  /** The defaults' weight decay (each group may override it). */
  get weightDecay(): number {
    return this.defaults.weightDecay;
  }
  /** The defaults' Nesterov flag (each group may override it). */
  get nesterov(): boolean {
    return this.defaults.nesterov;
  }
  /** The defaults' dampening (each group may override it). */
  get dampening(): number {
    return this.defaults.dampening;
  }

  protected update(p: Tensor, g: Tensor, group: SGDGroup): void {
    // Momentum on or off decides whether a buffer exists, and Nesterov the kernel's branch: a
    // compiled step traces again when either changes.
    guard(() => group.momentum !== 0);
    guard(() => group.nesterov);
    let buf = 0,
      flags = group.nesterov ? NESTEROV : 0;
    if (group.momentum !== 0) {
      const { bufs, fresh } = this.buffers(p, 1);
      buf = bufs[0].ptr;
      if (fresh) flags |= FIRST;
    }
    // perCall: a compiled step reads the group's lr (and momentum) afresh on every replay (a schedule may change them).
    const scalars = perCall(() => [group.lr, group.momentum, group.dampening, group.weightDecay, flags]);
    // Elementwise: split across the thread pool when large (16-element-aligned pieces).
    splitMap(`sgd_${SUFFIX[p.dtype]}`, p.dtype === 'float32' ? 4 : 8, [p.ptr, g.ptr, buf], p.size, scalars, 2);
  }
}
