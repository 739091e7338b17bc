// nn.Linear: y = x·Wᵀ + b with PyTorch's layout (W is [out, in]) and default initialisation
// (kaiming_uniform_ with a = √5, i.e. U(−1/√in, 1/√in), and the same bound for the bias).
// The product runs as one GEMM with B transposed in place, never materialising Wᵀ.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { add, matmulT, reshape, composite } from '../ops/api.js';
import { Module, checkInput } from './module.js';
import { Stream, count, dtypeOf, fanInBound } from './init.js';

/** How the weight's gradient signal flows back to the input: 'bp' is backpropagation (Wᵀ). */
export type Feedback = 'bp' | 'alignment';

export interface LinearOptions {
  bias?: boolean;
  seed?: number;
  dtype?: DType;
  feedback?: Feedback;
}

export class Linear extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | null;
  readonly feedback: Feedback;
  readonly dtype: DType;

  constructor(readonly inFeatures: number, readonly outFeatures: number, opts: LinearOptions = {}) {
    super();
    count('Linear', 'inFeatures', inFeatures);
    count('Linear', 'outFeatures', outFeatures);
    this.dtype = dtypeOf('Linear', opts.dtype);
    this.feedback = opts.feedback ?? 'bp';
    if (this.feedback !== 'bp') {
      // HOOK(feedback alignment): the 'alignment' mode (Lillicrap et al. 2016) lands with its own
      // issue: draw a fixed random B [out, in] here (not a parameter) and use it in project().
      throw new ArgumentError(`Linear: feedback ${JSON.stringify(this.feedback)} is not supported yet; use 'bp'`);
    }
    const rng = new Stream(opts.seed, 'Linear');
    const bound = fanInBound(inFeatures);
    this.weight = this.registerParameter('weight', rng.uniform([outFeatures, inFeatures], bound, this.dtype));
    this.bias = (opts.bias ?? true) ? this.registerParameter('bias', rng.uniform([outFeatures], bound, this.dtype)) : null;
  }

  forward(x: Tensor): Tensor {
    checkInput('Linear', x, this.dtype, -1, this.inFeatures, 'last axis (in_features)');
    if (x.shape.length === 1) return composite(() => reshape(this.forward(reshape(x, [1, this.inFeatures])), [this.outFeatures]));
    const y = this.project(x);
    if (this.bias === null) return y;
    const out = add(y, this.bias);
    y.dispose();
    return out;
  }

  /** x·Wᵀ. HOOK(feedback alignment): wrap in a customVjp whose input cotangent is g·B instead of g·W. */
  protected project(x: Tensor): Tensor {
    return matmulT(x, this.weight, false, true);
  }
}
