// The public Tensor: the data handle of src/tensor/tensor.ts plus every op as a method
// (x.add(y), x.matmul(w).relu().sum(), x.backward()). It lives in the ops layer because its
// methods are the ops; every handle is created here (Tensor.empty, Tensor.lazy, view), so
// `instanceof Tensor` holds for all of them.
import { BYTES, type DType } from '../tensor/dtype.js';
import { Storage, TensorBase, emptyStorage, type Pending } from '../tensor/tensor.js';
import type { Node } from './node.js';
import * as ops from './api.js';
import { scaledDotProductAttention } from './attention-api.js';
import { backward, type BackwardOptions } from './backward.js';
import { tooMany, describe } from '../args.js';
import { ArgumentError } from '../errors.js';

/** An operand: a tensor, or a number (lifted to a scalar of the other operand's dtype). */
export type TensorLike = Tensor | number;
type Axis = ops.Axis;

/**
 * An n-dimensional array in wasm memory, with every op as a method and reverse mode via {@link Tensor.backward}.
 * Create one with {@link tensor}, {@link zeros}, {@link randn} and friends; free it with `dispose()` or {@link tidy}.
 *
 * @example
 * ```ts
 * const w = randn([3, 2], { seed: 0, requiresGrad: true });
 * const loss = tensor([[1, 2, 3]]).matmul(w).relu().sum();
 * loss.backward();
 * w.grad!.shape; // [3, 2]
 * ```
 */
export class Tensor extends TensorBase<Tensor, Node> {
  private constructor(shape: readonly number[], dtype: DType, storage: Storage, size?: number) {
    super(shape, dtype, storage, size);
  }

  /** A new tensor of the given shape with uninitialised memory. @internal */
  static empty(shape: readonly number[], dtype: DType): Tensor {
    const [own, storage, n] = emptyStorage(shape, dtype);
    return new Tensor(own, dtype, storage, n);
  }

  /** A tensor whose memory is allocated and filled (by `pending`, reading `source`) on first use of its pointer. @internal */
  static lazy(shape: readonly number[], dtype: DType, pending: Pending, source: Storage): Tensor {
    const own = Object.freeze(shape.slice());
    return new Tensor(own, dtype, Storage.lazy(own.reduce((a, b) => a * b, 1) * BYTES[dtype], pending, source));
  }

  protected make(shape: readonly number[], storage: Storage): Tensor {
    return new Tensor(shape, this.dtype, storage);
  }

  /**
   * Runs reverse mode from this tensor; a non-scalar needs a seed of its own shape. Options:
   * createGraph (the gradients are differentiable again), retainGraph, inputs (the leaves whose
   * .grad is written).
   */
  backward(seed?: Tensor | number, opts?: BackwardOptions): void {
    backward(this, seed, opts);
  }

  /** A handle on the same values that records no gradient (same as {@link stopGradient}). */
  detach(): Tensor {
    return ops.detach(this);
  }
  /** A copy converted to `dtype`; see {@link astype}. */
  astype(dtype: DType): Tensor {
    return ops.astype(this, dtype);
  }

  /** `this + b`, broadcasting; see {@link add}. */
  add(b: TensorLike): Tensor {
    return ops.add(this, b);
  }
  /** `this − b`, broadcasting; see {@link sub}. */
  sub(b: TensorLike): Tensor {
    return ops.sub(this, b);
  }
  /** `this · b`, broadcasting; see {@link mul}. */
  mul(b: TensorLike): Tensor {
    return ops.mul(this, b);
  }
  /** `this / b`, broadcasting; see {@link div}. */
  div(b: TensorLike): Tensor {
    return ops.div(this, b);
  }
  /** `this ** b`, broadcasting; see {@link pow}. */
  pow(b: TensorLike): Tensor {
    return ops.pow(this, b);
  }
  /** Elementwise larger of `this` and `b`; see {@link maximum}. */
  maximum(b: TensorLike): Tensor {
    return ops.maximum(this, b);
  }
  /** Elementwise smaller of `this` and `b`; see {@link minimum}. */
  minimum(b: TensorLike): Tensor {
    return ops.minimum(this, b);
  }

  /** Elementwise `−x`. */
  neg(): Tensor {
    return ops.neg(this);
  }
  /** Elementwise `eˣ`. */
  exp(): Tensor {
    return ops.exp(this);
  }
  /** Elementwise natural logarithm. */
  log(): Tensor {
    return ops.log(this);
  }
  /** Elementwise square root. */
  sqrt(): Tensor {
    return ops.sqrt(this);
  }
  /** Elementwise absolute value. */
  abs(): Tensor {
    return ops.abs(this);
  }
  /** Elementwise `x²`. */
  square(): Tensor {
    return ops.square(this);
  }
  /** Elementwise sine. */
  sin(): Tensor {
    return ops.sin(this);
  }
  /** Elementwise cosine. */
  cos(): Tensor {
    return ops.cos(this);
  }
  /** Elementwise hyperbolic tangent. */
  tanh(): Tensor {
    return ops.tanh(this);
  }
  /** Elementwise logistic sigmoid. */
  sigmoid(): Tensor {
    return ops.sigmoid(this);
  }
  /** Elementwise `max(x, 0)`. */
  relu(): Tensor {
    return ops.relu(this);
  }
  /** Elementwise `log(1 + eˣ)`. */
  softplus(): Tensor {
    return ops.softplus(this);
  }
  /** Elementwise leaky ReLU with `slope` (default 0.01); see {@link leakyRelu}. */
  leakyRelu(slope?: number): Tensor {
    return ops.leakyRelu(this, slope);
  }
  /** GELU, by default the tanh approximation; see {@link gelu}. */
  gelu(options?: ops.GeluOptions): Tensor {
    return ops.gelu(this, options);
  }
  /** Elementwise error function. */
  erf(): Tensor {
    return ops.erf(this);
  }
  /** Values limited to `[lo, hi]`; see {@link clamp}. */
  clamp(lo: number, hi: number): Tensor {
    return ops.clamp(this, lo, hi);
  }

  /** Sum over `axis` (all axes when omitted); see {@link sum}. */
  sum(axis?: Axis, keepdims?: boolean): Tensor {
    return ops.sum(this, axis, keepdims);
  }
  /** Mean over `axis` (all axes when omitted); see {@link mean}. */
  mean(axis?: Axis, keepdims?: boolean): Tensor {
    return ops.mean(this, axis, keepdims);
  }
  /** Maximum over `axis` (all axes when omitted); see {@link max}. */
  max(axis?: Axis, keepdims?: boolean): Tensor {
    return ops.max(this, axis, keepdims);
  }
  /** `log Σ exp` over `axis`, computed stably; see {@link logsumexp}. */
  logsumexp(axis?: Axis, keepdims?: boolean): Tensor {
    return ops.logsumexp(this, axis, keepdims);
  }

  /** The same data in another shape (one -1 allowed); see {@link reshape}. */
  reshape(shape: readonly number[]): Tensor {
    return ops.reshape(this, shape);
  }
  /** PyTorch's view: reshape, which never copies (the result shares this tensor's memory) and is differentiable. */
  view(shape: readonly number[]): Tensor {
    if (!Array.isArray(shape)) throw new ArgumentError(`view: shape must be an array of integers, got ${describe(shape)}`);
    return ops.reshape(this, shape);
  }
  /** Axes permuted by `perm` (default: reversed); see {@link transpose}. */
  transpose(perm?: readonly number[]): Tensor {
    return ops.transpose(this, perm);
  }
  /** Broadcast to `shape`; see {@link broadcastTo}. */
  broadcastTo(shape: readonly number[]): Tensor {
    return ops.broadcastTo(this, shape);
  }
  /** The block at `begin` of extent `size`; see {@link slice}. */
  slice(begin: readonly number[], size: readonly number[]): Tensor {
    return ops.slice(this, begin, size);
  }
  /** Entries `indices` along `axis` (default 0); see {@link gather}. */
  gather(indices: Int32Array | readonly number[] | Tensor, axis?: number): Tensor {
    return ops.gather(this, indices, axis);
  }
  /** `this` followed by `others` joined along `axis` (default 0); see {@link concat}. */
  concat(others: readonly Tensor[], axis?: number): Tensor {
    return ops.concat([this, ...ops.tensorList('concat', 'others', others)], axis);
  }

  /** Axes reordered by `dims` (PyTorch's `permute`); see {@link permute}. */
  permute(...dims: (number | readonly number[])[]): Tensor {
    return ops.permute(this, ...dims);
  }
  /** A new axis of size 1 inserted at `dim`; see {@link unsqueeze}. */
  unsqueeze(dim: number): Tensor {
    return ops.unsqueeze(this, dim);
  }
  /** Axes of size 1 removed (all, or `dim`); see {@link squeeze}. */
  squeeze(dim?: number | readonly number[]): Tensor {
    return ops.squeeze(this, dim);
  }
  /** Axes `start..end` (default all) merged into one; see {@link flatten}. */
  flatten(start?: number, end?: number): Tensor {
    return ops.flatten(this, start, end);
  }
  /** Pieces along `axis` of size `sizeOrSizes` (or the given sizes); see {@link split}. */
  split(sizeOrSizes: number | readonly number[], axis?: number): Tensor[] {
    return ops.split(this, sizeOrSizes, axis);
  }
  /** `n` nearly equal pieces along `axis`; see {@link chunk}. */
  chunk(n: number, axis?: number): Tensor[] {
    return ops.chunk(this, n, axis);
  }
  /** The transpose of a 2-D tensor. */
  get T(): Tensor {
    return ops.matrixT(this);
  }
  /** The lower triangle (diagonal offset `k`, default 0), the rest zero; see {@link tril}. */
  tril(k?: number): Tensor {
    return ops.tril(this, k);
  }
  /** The upper triangle (diagonal offset `k`, default 0), the rest zero; see {@link triu}. */
  triu(k?: number): Tensor {
    return ops.triu(this, k);
  }

  /** `this = b` as 0/1 (not differentiable); see {@link eq}. */
  eq(b: TensorLike): Tensor {
    return ops.eq(this, b);
  }
  /** `this ≠ b` as 0/1 (not differentiable); see {@link ne}. */
  ne(b: TensorLike): Tensor {
    return ops.ne(this, b);
  }
  /** `this < b` as 0/1 (not differentiable); see {@link lt}. */
  lt(b: TensorLike): Tensor {
    return ops.lt(this, b);
  }
  /** `this ≤ b` as 0/1 (not differentiable); see {@link le}. */
  le(b: TensorLike): Tensor {
    return ops.le(this, b);
  }
  /** `this > b` as 0/1 (not differentiable); see {@link gt}. */
  gt(b: TensorLike): Tensor {
    return ops.gt(this, b);
  }
  /** `this ≥ b` as 0/1 (not differentiable); see {@link ge}. */
  ge(b: TensorLike): Tensor {
    return ops.ge(this, b);
  }
  /** cond ≠ 0 ? this : other (torch.Tensor.where). */
  where(cond: Tensor, other: TensorLike): Tensor {
    return ops.where(cond, this, other);
  }
  /** `value` where `mask` is nonzero, `this` elsewhere; see {@link maskedFill}. */
  maskedFill(mask: Tensor, value: number): Tensor {
    return ops.maskedFill(this, mask, value);
  }
  /** Index of the largest entry along `axis`, as int32; see {@link argmax}. */
  argmax(axis?: number, keepdims?: boolean): Tensor {
    return ops.argmax(this, axis, keepdims);
  }

  /** Matrix product `this · b` (1-D, 2-D, batched); see {@link matmul}. */
  matmul(b: Tensor): Tensor {
    return ops.matmul(this, b);
  }
  /** Softmax along `axis` (default -1); see {@link softmax}. */
  softmax(axis?: number): Tensor {
    return ops.softmax(this, axis);
  }
  /** Log-softmax along `axis` (default -1); see {@link logSoftmax}. */
  logSoftmax(axis?: number): Tensor {
    return ops.logSoftmax(this, axis);
  }
  // The neural ops as methods too, with this tensor as their first argument (API.md: every op is a method).
  /** {@link crossEntropy} of these logits. */
  crossEntropy(...rest: Rest<typeof ops.crossEntropy>): Tensor {
    return ops.crossEntropy(this, ...rest);
  }
  /** {@link mseLoss} of this prediction. */
  mseLoss(...rest: Rest<typeof ops.mseLoss>): Tensor {
    return ops.mseLoss(this, ...rest);
  }
  /** {@link layerNorm} over the last axis. */
  layerNorm(...rest: Rest<typeof ops.layerNorm>): Tensor {
    return ops.layerNorm(this, ...rest);
  }
  /** {@link conv2d} of this input [N, C, H, W]. */
  conv2d(...rest: Rest<typeof ops.conv2d>): Tensor {
    return ops.conv2d(this, ...rest);
  }
  /** {@link maxPool2d} of this input [N, C, H, W]. */
  maxPool2d(...rest: Rest<typeof ops.maxPool2d>): Tensor {
    return ops.maxPool2d(this, ...rest);
  }
  /** {@link avgPool2d} of this input [N, C, H, W]. */
  avgPool2d(...rest: Rest<typeof ops.avgPool2d>): Tensor {
    return ops.avgPool2d(this, ...rest);
  }
  /** {@link dropout} of this tensor. */
  dropout(...rest: Rest<typeof ops.dropout>): Tensor {
    return ops.dropout(this, ...rest);
  }
  /** {@link scaledDotProductAttention} with these queries. */
  scaledDotProductAttention(...rest: Rest<typeof scaledDotProductAttention>): Tensor {
    return scaledDotProductAttention(this, ...rest);
  }
}

/** The parameters of an op after its first tensor. */
type Rest<F> = F extends (x: Tensor, ...rest: infer R) => Tensor ? R : never;

/** Whether `v` is a {@link Tensor}. */
export function isTensor(v: unknown): v is Tensor {
  return v instanceof Tensor;
}

// No argument silently ignored: every public method throws an ArgumentError when called with
// more arguments than it declares (`x.sum(0, false, 'extra')`), instead of dropping the extra
// ones. Installed over the prototype once, so methods added later are covered too; the check
// reads only arguments.length (V8 does not materialise the arguments object for it or for apply).
const INTERNAL = new Set(['constructor', 'share', 'alias', 'save', 'check', 'make']);
type Method = (this: Tensor, ...a: unknown[]) => unknown;
/** f behind an argument-count check; explicit parameters up to three (call with them is cheaper than apply). */
function checkedArity(name: string, f: Method, max: number): Method {
  if (max === 0)
    return function (this: Tensor) {
      if (arguments.length > 0) throw tooMany(name, 0, arguments.length);
      return f.call(this);
    };
  if (max === 1)
    return function (this: Tensor, a?: unknown) {
      if (arguments.length > 1) throw tooMany(name, 1, arguments.length);
      return f.call(this, a);
    };
  if (max === 2)
    return function (this: Tensor, a?: unknown, b?: unknown) {
      if (arguments.length > 2) throw tooMany(name, 2, arguments.length);
      return f.call(this, a, b);
    };
  return function (this: Tensor) {
    if (arguments.length > max) throw tooMany(name, max, arguments.length);
    return f.apply(this, arguments as unknown as unknown[]);
  };
}
for (let proto = Tensor.prototype as object; proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
  for (const key of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, key)!;
    const f = d.value as Method | undefined;
    if (typeof f !== 'function' || INTERNAL.has(key) || Object.hasOwn(Tensor.prototype, key) !== (proto === Tensor.prototype)) continue;
    const params = /^[^(]*\(([^)]*)\)/.exec(Function.prototype.toString.call(f))?.[1] ?? '...';
    if (params.includes('...')) continue; // rest parameters take any count
    const max =
      f.length === 0 && params.trim() !== ''
        ? params.split(',').length
        : Math.max(f.length, params.trim() === '' ? 0 : params.split(',').length);
    Object.defineProperty(Tensor.prototype, key, { ...d, value: checkedArity(`Tensor.${key}`, f, max) });
  }
}
