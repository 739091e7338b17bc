// nn.Linear: y = x·Wᵀ + b with PyTorch's layout (W is [out, in]) and default initialisation
// (kaiming_uniform_ with a = √5, i.e. U(−1/√in, 1/√in), and the same bound for the bias).
// The product runs as one GEMM with B transposed in place, never materialising Wᵀ; with a bias
// (and plain backpropagation) it is the fused dense op, whose GEMM epilogue adds the bias and
// applies an activation that follows (see forwardAct and nn.Sequential).
import type { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { ArgumentError } from '../errors.js';
import { add, reshape, relu, tanh, sigmoid, composite } from '../ops/api.js';
import { dense, type Activation } from '../ops/dense.js';
import { Module, checkInput } from './module.js';
import { Stream, count, dtypeOf, fanInBound } from './init.js';
import { type Feedback, FEEDBACK_MODES, checkFeedback, feedbackProduct, drawFeedback, feedbackStream, moduleArg } from './feedback.js';
import { optionsArg, tooMany } from '../args.js';

/** How the adjoint flows back to the input: 'bp' (Wᵀ), 'alignment' (fixed random B), 'sign' (sign(W)); see feedback.ts. */
export type { Feedback } from './feedback.js';

const ACTIVATIONS: Record<Activation, (t: Tensor) => Tensor> = { none: (t) => t, relu, tanh, sigmoid };

/** Options for {@link Linear}. */
export interface LinearOptions {
  /** Whether the layer has a bias `b [out]`; default `true`. */
  bias?: boolean;
  /** Seed of the initialisation (and of the feedback matrix); omitted, the next of a fixed sequence. */
  seed?: number;
  /** Parameter dtype; default `'float32'`. */
  dtype?: DType;
  /** The backward rule for the input's gradient: `'bp'` (default, backpropagation through Wᵀ), `'alignment'` (a fixed random matrix, Lillicrap et al. 2016) or `'sign'`. */
  feedback?: Feedback;
}

/**
 * A fully connected layer `y = x·Wᵀ + b` over the last axis, with PyTorch's layout (W is `[out, in]`) and initialisation U(−1/√in, 1/√in).
 * Input `[..., inFeatures]` → output `[..., outFeatures]`; parameter names `weight` and `bias`.
 *
 * @throws {@link ShapeError} when the input's last axis is not `inFeatures`; {@link DtypeError} when its dtype differs from the layer's.
 * @example
 * ```ts
 * const layer = new nn.Linear(4, 2, { seed: 0 });
 * const y = layer.forward(randn([8, 4], { seed: 1 }));  // shape [8, 2]
 * layer.weight.shape;                                  // [2, 4]
 * ```
 */
export class Linear extends Module {
  /** The weight `W`, shape `[outFeatures, inFeatures]` (a parameter). */
  readonly weight: Tensor;
  /** The bias `b`, shape `[outFeatures]`, or null when built with `bias: false`. */
  readonly bias: Tensor | null;
  /** The parameters' dtype; inputs must have it too. */
  readonly dtype: DType;
  private mode: Feedback = 'bp';
  /** 'alignment' only: the fixed B [out, in]. Not a parameter: not learned, not in stateDict(). */
  private fixedB: Tensor | null = null;

  /**
   * @param inFeatures - Size of the input's last axis.
   * @param outFeatures - Size of the output's last axis.
   * @param options - `bias` (default true), `seed`, `dtype` (default `'float32'`), `feedback` (default `'bp'`).
   */
  constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    options?: LinearOptions,
  ) {
    if (arguments.length > 3) throw tooMany('nn.Linear', 3, arguments.length);
    super();
    const opts = optionsArg('Linear', options, ['bias', 'seed', 'dtype', 'feedback']);
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

  /** The current backward rule for the input's gradient (see {@link LinearOptions.feedback}). */
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

  /** `x·Wᵀ + b` for `x [..., inFeatures]` (a 1-D input gives a 1-D output). */
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Linear.forward', 1, arguments.length);
    return this.forwardAct(x, 'none');
  }

  /**
   * act(forward(x)): one dense op (GEMM with a bias + activation epilogue, one-pass backward)
   * when the layer has a bias and sends g·W back; otherwise the product, the bias add and the
   * activation op in turn. Both give the same values bit for bit (the bias is added to the
   * finished sum either way); nn.Sequential calls this for a Linear followed by ReLU or Tanh.
   * @internal
   */
  forwardAct(x: Tensor, act: Activation): Tensor {
    checkInput('Linear', x, this.dtype, -1, this.inFeatures, 'last axis (in_features)');
    if (x.shape.length === 1) return composite(() => reshape(this.forwardAct(reshape(x, [1, this.inFeatures]), act), [this.outFeatures]));
    if (this.bias !== null && this.mode === 'bp') return dense(x, this.weight, this.bias, act);
    return composite(() => {
      const y = this.project(x);
      return ACTIVATIONS[act](this.bias === null ? y : add(y, this.bias));
    });
  }

  /** x·Wᵀ; its backward pass sends g·W to x ('bp'), g·B ('alignment') or g·sign(W)/√(3·in) ('sign'). */
  protected project(x: Tensor): Tensor {
    return feedbackProduct(x, this.weight, this.mode, this.fixedB);
  }
}

/** Every Linear in `model` (itself included) with its dotted name, depth first. */
export function linearLayers(model: Module<unknown>, prefix = ''): [string, Linear][] {
  const out: [string, Linear][] = model instanceof Linear ? [[prefix, model]] : [];
  for (const [n, c] of model.namedChildren()) out.push(...linearLayers(c, prefix === '' ? n : `${prefix}.${n}`));
  return out;
}

/**
 * Switches every Linear of `model` to `mode`. 'alignment' draws each layer's B, in order, from
 * one stream of `seed` (same seed, same matrices); 'bp' and 'sign' free them. The weights are
 * untouched, so a model switched after construction starts from the same point as its
 * backprop twin. Returns the layers switched.
 */
export function setFeedback(model: Module, mode: Feedback, seed?: number): [string, Linear][] {
  if (arguments.length > 3) throw tooMany('setFeedback', 3, arguments.length);
  moduleArg('setFeedback', model);
  if (mode === undefined)
    throw new ArgumentError(`setFeedback: mode must be one of ${FEEDBACK_MODES.map((m) => `'${m}'`).join(', ')}, got undefined`);
  checkFeedback('setFeedback', mode);
  const rng = mode === 'alignment' ? feedbackStream(seed, 'setFeedback') : null;
  const layers = linearLayers(model);
  for (const [, l] of layers) l.setFeedback(mode, rng ?? undefined);
  return layers;
}
