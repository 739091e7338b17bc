// nn.Conv2d (NCHW, weight [out, in, kh, kw]) with PyTorch's default initialisation:
// U(−1/√fanIn, 1/√fanIn) for weight and bias, fanIn = in·kh·kw. Pooling layers wrap the ops.
import { ArgumentError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { conv2d, maxPool2d, avgPool2d } from '../ops/conv-api.js';
import { Module, checkInput } from './module.js';
import { Stream, count, dtypeOf, fanInBound } from './init.js';
import { describe, optionsArg, tooMany } from '../args.js';

/** A window extent or step: one number for both axes, or `[height, width]`. */
export type Size = number | readonly [number, number];

/** Options for {@link Conv2d} (PyTorch's arguments). */
export interface Conv2dOptions {
  /** Step between windows; default 1. */
  stride?: Size;
  /** Zeros added on each side of the height and width axes; default 0. */
  padding?: Size;
  /** Whether the layer has a bias `[outChannels]`; default true. */
  bias?: boolean;
  /** Seed of the initialisation; omitted, the next of a fixed sequence. */
  seed?: number;
  /** Parameter dtype; default `'float32'`. */
  dtype?: DType;
}

function pair(op: string, name: string, v: Size, min: number): [number, number] {
  const p: [number, number] = typeof v === 'number' ? [v, v] : Array.isArray(v) ? [v[0], v[1]] : [NaN, NaN];
  if ((Array.isArray(v) && v.length !== 2) || !p.every((d) => Number.isInteger(d) && d >= min))
    throw new ArgumentError(`${op}: ${name} must be an integer ≥ ${min} or a pair of them, got ${describe(v)}`);
  return p;
}

/**
 * 2-D convolution (PyTorch's `nn.Conv2d`, cross-correlation): input `[N, inChannels, H, W]` → `[N, outChannels, Ho, Wo]`, Ho = ⌊(H + 2·padding − kh) / stride⌋ + 1.
 * Parameters `weight [outChannels, inChannels, kh, kw]` and `bias [outChannels]`, initialised as PyTorch does.
 */
export class Conv2d extends Module {
  /** The filters, shape `[outChannels, inChannels, kh, kw]`. */
  readonly weight: Tensor;
  /** The bias, shape `[outChannels]`, or null when built with `bias: false`. */
  readonly bias: Tensor | null;
  /** The window `[kh, kw]`. */
  readonly kernelSize: [number, number];
  /** The step between windows `[sh, sw]`. */
  readonly stride: [number, number];
  /** The zero padding `[ph, pw]` on each side. */
  readonly padding: [number, number];
  /** The parameters' dtype; inputs must have it too. */
  readonly dtype: DType;

  /**
   * @param inChannels - Channels of the input (axis 1).
   * @param outChannels - Channels of the output (number of filters).
   * @param kernelSize - The window: `k` or `[kh, kw]`.
   * @param options - `stride`, `padding`, `bias`, `seed`, `dtype`.
   */
  constructor(
    readonly inChannels: number,
    readonly outChannels: number,
    kernelSize: Size,
    options?: Conv2dOptions,
  ) {
    if (arguments.length > 4) throw tooMany('nn.Conv2d', 4, arguments.length);
    super();
    const opts = optionsArg('Conv2d', options, ['stride', 'padding', 'bias', 'seed', 'dtype']);
    count('Conv2d', 'inChannels', inChannels);
    count('Conv2d', 'outChannels', outChannels);
    this.kernelSize = pair('Conv2d', 'kernelSize', kernelSize, 1);
    this.stride = pair('Conv2d', 'stride', opts.stride ?? 1, 1);
    this.padding = pair('Conv2d', 'padding', opts.padding ?? 0, 0);
    this.dtype = dtypeOf('Conv2d', opts.dtype);
    const [kh, kw] = this.kernelSize;
    const bound = fanInBound(inChannels * kh * kw);
    const rng = new Stream(opts.seed, 'Conv2d');
    this.weight = this.registerParameter('weight', rng.uniform([outChannels, inChannels, kh, kw], bound, this.dtype));
    this.bias = (opts.bias ?? true) ? this.registerParameter('bias', rng.uniform([outChannels], bound, this.dtype)) : null;
  }

  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Conv2d.forward', 1, arguments.length);
    // Rank first: for an unbatched [C, H, W] image (which PyTorch accepts) a message about axis 1 misleads.
    if (x instanceof Tensor && x.shape.length !== 4) {
      const hint = x.shape.length === 3 ? ' (one image: x.unsqueeze(0))' : '';
      throw new ShapeError(`Conv2d: input must be 4-D [N, ${this.inChannels}, H, W], got [${x.shape}]${hint}`);
    }
    checkInput('Conv2d', x, this.dtype, 1, this.inChannels, 'channels (axis 1 of NCHW)');
    return conv2d(x, this.weight, this.bias ?? undefined, { stride: this.stride, padding: this.padding });
  }
}

/** Max pooling over k×k windows (stride defaults to k). */
export class MaxPool2d extends Module {
  /**
   * @param kernelSize - The window: `k` or `[kh, kw]`.
   * @param stride - The step between windows; default: the window.
   */
  constructor(
    readonly kernelSize: Size,
    readonly stride?: Size,
  ) {
    if (arguments.length > 2) throw tooMany('nn.MaxPool2d', 2, arguments.length);
    super();
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.MaxPool2d.forward', 1, arguments.length);
    return maxPool2d(x, this.kernelSize, this.stride);
  }
}

/** Average pooling over k×k windows (stride defaults to k). */
export class AvgPool2d extends Module {
  /**
   * @param kernelSize - The window: `k` or `[kh, kw]`.
   * @param stride - The step between windows; default: the window.
   */
  constructor(
    readonly kernelSize: Size,
    readonly stride?: Size,
  ) {
    if (arguments.length > 2) throw tooMany('nn.AvgPool2d', 2, arguments.length);
    super();
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.AvgPool2d.forward', 1, arguments.length);
    return avgPool2d(x, this.kernelSize, this.stride);
  }
}
