// nn.Linear: y = x·Wᵀ + b with PyTorch's layout (W is [out, in]) and default initialisation
// (kaiming_uniform_ with a = √5, i.e. U(−1/√in, 1/√in), and the same bound for the bias).
// The product runs as one GEMM with B transposed in place, never materialising Wᵀ.
import type { Tensor } from '../tensor/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { add, reshape, composite } from '../ops/api.js';
import { Module, checkInput } from './module.js';
import { Stream, count, dtypeOf, fanInBound } from './init.js';
import { type Feedback, checkFeedback, feedbackProduct, drawFeedback, feedbackStream } from './feedback.js';

/** How the adjoint flows back to the input: 'bp' (Wᵀ), 'alignment' (fixed random B), 'sign' (sign(W)); see feedback.ts. */
export type { Feedback } from './feedback.js';

export interface LinearOptions {
  bias?: boolean;
  seed?: number;
  dtype?: DType;
  feedback?: Feedback;
}

export class Linear extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | null;
  readonly dtype: DType;
  private mode: Feedback = 'bp';
  /** 'alignment' only: the fixed B [out, in]. Not a parameter: not learned, not in stateDict(). */
  private fixedB: Tensor | null = null;

  constructor(readonly inFeatures: number, readonly outFeatures: number, opts: LinearOptions = {}) {
    super();
    count('Linear', 'inFeatures', inFeatures);
    count('Linear', 'outFeatures', outFeatures);
    this.dtype = dtypeOf('Linear', opts.dtype);
    const feedback = checkFeedback('Linear', opts.feedback);
    const rng = new Stream(opts.seed, 'Linear');
    const bound = fanInBound(inFeatures);
    this.weight = this.registerParameter('weight', rng.uniform([outFeatures, inFeatures], bound, this.dtype));
    this.bias = (opts.bias ?? true) ? this.registerParameter('bias', rng.uniform([outFeatures], bound, this.dtype)) : null;
    // B continues the layer's stream after W and b: the same seed gives the same W with or without it.
    this.setFeedback(feedback, rng);
  }

  get feedback(): Feedback {
    return this.mode;
  }

  /** The fixed feedback matrix B [out, in] in 'alignment' mode (null otherwise). */
  get feedbackMatrix(): Tensor | null {
    return this.fixedB;
  }

  /**
   * Switches the backward rule. 'alignment' draws a new B from `seed` (a number, or the stream
   * to continue); the other modes free it. The weights are untouched.
   */
  setFeedback(mode: Feedback, seed?: number | Stream): this {
    this.mode = checkFeedback('Linear.setFeedback', mode);
    this.fixedB?.dispose();
    this.fixedB = null;
    if (mode === 'alignment') {
      const rng = seed instanceof Stream ? seed : feedbackStream(seed, 'Linear.setFeedback');
      this.fixedB = drawFeedback(rng, this.outFeatures, this.inFeatures, this.dtype);
    }
    return this;
  }

  /** Frees the parameters and B. */
  override dispose(): void {
    super.dispose();
    this.fixedB?.dispose();
    this.fixedB = null;
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

  /** x·Wᵀ; its backward pass sends g·W to x ('bp'), g·B ('alignment') or g·sign(W)/√(3·in) ('sign'). */
  protected project(x: Tensor): Tensor {
    return feedbackProduct(x, this.weight, this.mode, this.fixedB);
  }
}
