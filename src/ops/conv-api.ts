// Public convolution, pooling and dropout ops: argument checking (ShapeError / DtypeError /
// ArgumentError naming the op, the argument and what was expected), then apply(). The
// primitive entry points the VJP rules use (conv2dInputGrad, maxPool2dGrad, …) are here too.
import { ShapeError, DtypeError, ArgumentError } from '../errors.js';
import { Tensor } from './tensor.js';
import { seedOf } from './create.js';
import { apply } from './apply.js';
import { k } from './launch.js';
import { add, mul, reshape, tensorArg, floatArg } from './api.js';
import { composite } from './composite.js';
import { seedArgs } from '../wasm/hooks.js';
import { describe, optionsArg, boolArg, tooMany } from '../args.js';

export type Pair = readonly [number, number];
export interface ConvParams {
  readonly stride: Pair;
  readonly padding: Pair;
}
export interface PoolParams {
  readonly kernel: Pair;
  readonly stride: Pair;
}
/** Options for {@link conv2d} (PyTorch's `stride` and `padding`). */
export interface Conv2dOptions {
  /** Step between windows: one number for both axes, or [sh, sw]. Default 1. */
  stride?: number | readonly number[];
  /** Zeros added on each side: one number, or [ph, pw]. Default 0. */
  padding?: number | readonly number[];
}
/** Options for {@link dropout}. */
export interface DropoutOptions {
  /** Seed of the mask; omitted, the next of a fixed sequence (reproducible runs). */
  seed?: number;
  /** false (evaluation): dropout is the identity. Default true. */
  training?: boolean;
}

const conv = (p: ConvParams): ConvParams => ({ stride: p.stride, padding: p.padding });
const pool = (p: PoolParams): PoolParams => ({ kernel: p.kernel, stride: p.stride });

/** The conv2d primitive on checked operands (no bias). */
export const conv2dRaw = (x: Tensor, w: Tensor, p: ConvParams): Tensor => apply('conv2d', [x, w], conv(p));
/** VJP of conv2d w.r.t. its input: g [N, O, Ho, Wo] and w → [N, C, ...size]. */
export const conv2dInputGrad = (g: Tensor, w: Tensor, p: ConvParams, size: Pair): Tensor =>
  apply('conv2dInputGrad', [g, w], { ...conv(p), size });
/** VJP of conv2d w.r.t. its filter: x and g [N, O, Ho, Wo] → [O, C, ...kernel]. */
export const conv2dFilterGrad = (x: Tensor, g: Tensor, p: ConvParams, kernel: Pair): Tensor =>
  apply('conv2dFilterGrad', [x, g], { ...conv(p), kernel });
export const maxPool2dGrad = (x: Tensor, g: Tensor, p: PoolParams): Tensor => apply('maxPool2dGrad', [x, g], pool(p));
export const maxPool2dGather = (x: Tensor, v: Tensor, p: PoolParams): Tensor => apply('maxPool2dGather', [x, v], pool(p));
export const avgPool2dRaw = (x: Tensor, p: PoolParams): Tensor => apply('avgPool2d', [x], pool(p));
export const avgPool2dGrad = (g: Tensor, p: PoolParams, size: Pair): Tensor => apply('avgPool2dGrad', [g], { ...pool(p), size });

/** A number or a pair of integers ≥ min, as a pair; otherwise an ArgumentError naming op and argument. */
function pairArg(op: string, name: string, v: unknown, min: number): Pair {
  const pair = typeof v === 'number' ? [v, v] : Array.isArray(v) && v.length === 2 ? v : null;
  if (pair === null || pair.some((d) => !Number.isInteger(d) || d < min)) {
    const what = min === 0 ? 'non-negative' : 'positive';
    throw new ArgumentError(`${op}: ${name} must be a ${what} integer or a pair of them, got ${describe(v)}`);
  }
  return [pair[0], pair[1]];
}

function nchw(op: string, x: Tensor, what: string, layout: string): void {
  if (x.shape.length !== 4) throw new ShapeError(`${op}: ${what} must be 4-D ${layout}, got [${x.shape}]`);
}

/** Every window of extent k (after padding) fits in the input, or a ShapeError. */
function checkFits(op: string, x: Tensor, [kh, kw]: Pair, [ph, pw]: Pair): void {
  const [H, W] = [x.shape[2], x.shape[3]];
  if (H + 2 * ph < kh || W + 2 * pw < kw) {
    const padded = ph || pw ? ` (padded by ${ph}×${pw})` : '';
    throw new ShapeError(`${op}: window ${kh}×${kw} is larger than the input ${H}×${W}${padded} of [${x.shape}]`);
  }
}

/**
 * 2-D cross-correlation (PyTorch's conv2d): x [N, C, H, W], w [O, C, kh, kw], optional bias
 * b [O] → [N, O, Ho, Wo], Ho = ⌊(H + 2·padding − kh) / stride⌋ + 1. The options may also come
 * third when there is no bias: conv2d(x, w, { stride: 2 }).
 */
export function conv2d(x: Tensor, w: Tensor, b?: Tensor | null | Conv2dOptions, opts: Conv2dOptions = {}): Tensor {
  if (arguments.length > 4) throw tooMany('conv2d', 4, arguments.length);
  const isOptions = typeof b === 'object' && b !== null && Object.getPrototypeOf(b) === Object.prototype;
  if (isOptions) opts = b as Conv2dOptions;
  optionsArg('conv2d', opts, ['stride', 'padding']);
  tensorArg('conv2d', x, 'input');
  tensorArg('conv2d', w, 'weight');
  nchw('conv2d', x, 'input', '[N, C, H, W]');
  nchw('conv2d', w, 'weight', '[O, C, kh, kw]');
  if (x.dtype !== w.dtype) throw new DtypeError(`conv2d: dtypes differ: input is ${x.dtype}, weight is ${w.dtype}`);
  const [O, C, kh, kw] = w.shape;
  if (x.shape[1] !== C) throw new ShapeError(`conv2d: input has ${x.shape[1]} channels but weight [${w.shape}] expects ${C}`);
  if (kh < 1 || kw < 1) throw new ShapeError(`conv2d: weight [${w.shape}] has an empty ${kh}×${kw} kernel`);
  const stride = pairArg('conv2d', 'stride', opts.stride ?? 1, 1),
    padding = pairArg('conv2d', 'padding', opts.padding ?? 0, 0);
  checkFits('conv2d', x, [kh, kw], padding);
  const bias = isOptions || b === undefined || b === null ? null : tensorArg('conv2d', b, 'bias');
  if (bias !== null) {
    if (bias.shape.length !== 1 || bias.shape[0] !== O)
      throw new ShapeError(`conv2d: bias must be [${O}] for weight [${w.shape}], got [${bias.shape}]`);
    if (bias.dtype !== x.dtype) throw new DtypeError(`conv2d: bias is ${bias.dtype}, input is ${x.dtype}`);
  }
  return composite(() => {
    const y = conv2dRaw(x, w, { stride, padding });
    return bias === null ? y : add(y, reshape(bias, [O, 1, 1]));
  });
}

function poolArgs(op: string, x: Tensor, kernel: unknown, stride: unknown): PoolParams {
  tensorArg(op, x, 'input');
  nchw(op, x, 'input', '[N, C, H, W]');
  const kp = pairArg(op, 'kernel size', kernel, 1);
  const p = { kernel: kp, stride: pairArg(op, 'stride', stride ?? kernel, 1) };
  checkFits(op, x, kp, [0, 0]);
  return p;
}

/**
 * Max over each k×k window (stride defaults to k; no padding). The gradient goes to the
 * window's first maximum in row-major order, or to its last NaN (a NaN counts as the maximum
 * and replaces an earlier one), as in PyTorch.
 */
export function maxPool2d(x: Tensor, k: number | readonly number[], stride?: number | readonly number[]): Tensor {
  if (arguments.length > 3) throw tooMany('maxPool2d', 3, arguments.length);
  return apply('maxPool2d', [x], poolArgs('maxPool2d', x, k, stride));
}

/** Mean over each k×k window (stride defaults to k; no padding). */
export function avgPool2d(x: Tensor, k: number | readonly number[], stride?: number | readonly number[]): Tensor {
  if (arguments.length > 3) throw tooMany('avgPool2d', 3, arguments.length);
  return avgPool2dRaw(x, poolArgs('avgPool2d', x, k, stride));
}

/**
 * Inverted dropout: each element is zeroed with probability p and the rest scaled by 1/(1 − p),
 * by a mask drawn in wasm from the counter-based generator (same seed → same mask everywhere).
 * With training = false or p = 0 it is the identity (a view of x).
 */
export function dropout(x: Tensor, p: number, options?: DropoutOptions): Tensor {
  if (arguments.length > 3) throw tooMany('dropout', 3, arguments.length);
  floatArg('dropout', x, 'input');
  const { seed, training: t } = optionsArg('dropout', options, ['seed', 'training']);
  const training = boolArg('dropout', 'training', t, true);
  if (typeof p !== 'number' || !(p >= 0 && p < 1)) throw new ArgumentError(`dropout: p must be a number in [0, 1), got ${describe(p)}`);
  if (!training || p === 0) return reshape(x, x.shape);
  return dropoutDrawn(x, p, () => seed, seed != null); // null draws an automatic seed, as undefined (seedOf)
}

/**
 * Dropout (training, 0 < p < 1, arguments checked) with the mask's seed from draw(): undefined
 * takes the next automatic seed. perCall: a compiled step calls draw() again on every replay, so
 * a counter behind it (nn.Dropout's) advances and each step gets a fresh mask, as in eager mode.
 */
export function dropoutDrawn(x: Tensor, p: number, draw: () => number | undefined, given = false): Tensor {
  // p is an ordinary kernel argument, outside the seed's per-call tail: a compiled step compares
  // it between traces, so a p that changes per call is caught (seedArgs: the same for the seed).
  const seed = seedArgs(given, () => seedOf(draw(), 'dropout'));
  return composite(() => {
    const mask = Tensor.empty(x.shape, x.dtype);
    k('dropout_mask', x.dtype)(mask.ptr, mask.size, p, ...seed);
    return mul(x, mask);
  });
}
