// Stochastic gradient descent with momentum, dampening, L2 weight decay and Nesterov
// momentum (Sutskever et al. 2013), exactly as torch.optim.SGD: on the first step the
// momentum buffer is the gradient itself, later b ← μ·b + (1 − dampening)·g.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { splitMap } from '../wasm/split.js';
import { SUFFIX } from '../tensor/dtype.js';
import { Optimizer, hyper, type Params } from './optimizer.js';
import { perCall } from '../wasm/hooks.js';

export interface SGDOptions {
  lr: number;
  momentum?: number;
  weightDecay?: number;
  nesterov?: boolean;
  dampening?: number;
}

const NESTEROV = 1;
const FIRST = 2;

export class SGD extends Optimizer {
  lr: number;
  readonly momentum: number;
  readonly weightDecay: number;
  readonly nesterov: boolean;
  readonly dampening: number;

  constructor(params: Params, opts: SGDOptions) {
    super('SGD', params);
    if (opts === undefined || opts.lr === undefined) throw new ArgumentError('SGD: options.lr is required, e.g. new optim.SGD(params, { lr: 0.1 })');
    this.lr = hyper('SGD', 'lr', opts.lr);
    this.momentum = hyper('SGD', 'momentum', opts.momentum ?? 0);
    this.weightDecay = hyper('SGD', 'weightDecay', opts.weightDecay ?? 0);
    this.dampening = hyper('SGD', 'dampening', opts.dampening ?? 0, -Infinity);
    this.nesterov = opts.nesterov ?? false;
    if (this.nesterov && (this.momentum <= 0 || this.dampening !== 0)) {
      throw new ArgumentError('SGD: nesterov requires momentum > 0 and dampening = 0');
    }
  }

  protected update(p: Tensor, g: Tensor): void {
    let buf = 0, flags = this.nesterov ? NESTEROV : 0;
    if (this.momentum !== 0) {
      const { bufs, fresh } = this.buffers(p, 1);
      buf = bufs[0].ptr;
      if (fresh) flags |= FIRST;
    }
    // perCall: a compiled step reads lr afresh on every replay (a schedule may change it).
    const scalars = perCall(() => [this.lr, this.momentum, this.dampening, this.weightDecay, flags]);
    // Elementwise: split across the thread pool when large (16-element-aligned pieces).
    splitMap(`sgd_${SUFFIX[p.dtype]}`, p.dtype === 'float32' ? 4 : 8, [p.ptr, g.ptr, buf], p.size, scalars, 2);
  }
}
