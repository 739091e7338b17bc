// The public Tensor: the data handle of src/tensor/tensor.ts plus every op as a method
// (x.add(y), x.matmul(w).relu().sum(), x.backward()). It lives in the ops layer because its
// methods are the ops; every handle is created here (Tensor.empty, Tensor.lazy, view), so
// `instanceof Tensor` holds for all of them.
import { BYTES, type DType } from '../tensor/dtype.js';
import { Storage, TensorBase, emptyStorage, type Pending } from '../tensor/tensor.js';
import type { Node } from './node.js';
import * as ops from './api.js';
import { backward, type BackwardOptions } from './backward.js';
import { tooMany, describe } from '../args.js';
import { ArgumentError } from '../errors.js';

export type TensorLike = Tensor | number;
type Axis = number | readonly number[];

export class Tensor extends TensorBase<Tensor, Node> {
  private constructor(shape: readonly number[], dtype: DType, storage: Storage, size?: number) {
    super(shape, dtype, storage, size);
  }

  /** A new tensor of the given shape with uninitialised memory. */
  static empty(shape: readonly number[], dtype: DType): Tensor {
    const [own, storage, n] = emptyStorage(shape, dtype);
    return new Tensor(own, dtype, storage, n);
  }

  /** A tensor whose memory is allocated and filled (by `pending`, reading `source`) on first use of its pointer. */
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

  detach(): Tensor { return ops.detach(this); }
  astype(dtype: DType): Tensor { return ops.astype(this, dtype); }

  add(b: TensorLike): Tensor { return ops.add(this, b); }
  sub(b: TensorLike): Tensor { return ops.sub(this, b); }
  mul(b: TensorLike): Tensor { return ops.mul(this, b); }
  div(b: TensorLike): Tensor { return ops.div(this, b); }
  pow(b: TensorLike): Tensor { return ops.pow(this, b); }
  maximum(b: TensorLike): Tensor { return ops.maximum(this, b); }
  minimum(b: TensorLike): Tensor { return ops.minimum(this, b); }

  neg(): Tensor { return ops.neg(this); }
  exp(): Tensor { return ops.exp(this); }
  log(): Tensor { return ops.log(this); }
  sqrt(): Tensor { return ops.sqrt(this); }
  abs(): Tensor { return ops.abs(this); }
  square(): Tensor { return ops.square(this); }
  sin(): Tensor { return ops.sin(this); }
  cos(): Tensor { return ops.cos(this); }
  tanh(): Tensor { return ops.tanh(this); }
  sigmoid(): Tensor { return ops.sigmoid(this); }
  relu(): Tensor { return ops.relu(this); }
  softplus(): Tensor { return ops.softplus(this); }
  leakyRelu(slope?: number): Tensor { return ops.leakyRelu(this, slope); }
  gelu(options?: ops.GeluOptions): Tensor { return ops.gelu(this, options); }
  erf(): Tensor { return ops.erf(this); }
  clamp(lo: number, hi: number): Tensor { return ops.clamp(this, lo, hi); }

  sum(axis?: Axis, keepdims?: boolean): Tensor { return ops.sum(this, axis, keepdims); }
  mean(axis?: Axis, keepdims?: boolean): Tensor { return ops.mean(this, axis, keepdims); }
  max(axis?: Axis, keepdims?: boolean): Tensor { return ops.max(this, axis, keepdims); }
  logsumexp(axis?: Axis, keepdims?: boolean): Tensor { return ops.logsumexp(this, axis, keepdims); }

  reshape(shape: readonly number[]): Tensor { return ops.reshape(this, shape); }
  /** PyTorch's view: reshape, which never copies (the result shares this tensor's memory) and is differentiable. */
  view(shape: readonly number[]): Tensor {
    if (!Array.isArray(shape)) throw new ArgumentError(`view: shape must be an array of integers, got ${describe(shape)}`);
    return ops.reshape(this, shape);
  }
  transpose(perm?: readonly number[]): Tensor { return ops.transpose(this, perm); }
  broadcastTo(shape: readonly number[]): Tensor { return ops.broadcastTo(this, shape); }
  slice(begin: readonly number[], size: readonly number[]): Tensor { return ops.slice(this, begin, size); }
  gather(indices: Int32Array | readonly number[] | Tensor, axis?: number): Tensor { return ops.gather(this, indices, axis); }
  concat(others: readonly Tensor[], axis?: number): Tensor { return ops.concat([this, ...ops.tensorList('concat', 'others', others)], axis); }

  permute(...dims: (number | readonly number[])[]): Tensor { return ops.permute(this, ...dims); }
  unsqueeze(dim: number): Tensor { return ops.unsqueeze(this, dim); }
  squeeze(dim?: number | readonly number[]): Tensor { return ops.squeeze(this, dim); }
  flatten(start?: number, end?: number): Tensor { return ops.flatten(this, start, end); }
  split(sizeOrSizes: number | readonly number[], axis?: number): Tensor[] { return ops.split(this, sizeOrSizes, axis); }
  chunk(n: number, axis?: number): Tensor[] { return ops.chunk(this, n, axis); }
  /** The transpose of a 2-D tensor. */
  get T(): Tensor { return ops.matrixT(this); }
  tril(k?: number): Tensor { return ops.tril(this, k); }
  triu(k?: number): Tensor { return ops.triu(this, k); }

  eq(b: TensorLike): Tensor { return ops.eq(this, b); }
  ne(b: TensorLike): Tensor { return ops.ne(this, b); }
  lt(b: TensorLike): Tensor { return ops.lt(this, b); }
  le(b: TensorLike): Tensor { return ops.le(this, b); }
  gt(b: TensorLike): Tensor { return ops.gt(this, b); }
  ge(b: TensorLike): Tensor { return ops.ge(this, b); }
  /** cond ≠ 0 ? this : other (torch.Tensor.where). */
  where(cond: Tensor, other: TensorLike): Tensor { return ops.where(cond, this, other); }
  maskedFill(mask: Tensor, value: number): Tensor { return ops.maskedFill(this, mask, value); }
  argmax(axis?: number, keepdims?: boolean): Tensor { return ops.argmax(this, axis, keepdims); }

  matmul(b: Tensor): Tensor { return ops.matmul(this, b); }
  softmax(axis?: number): Tensor { return ops.softmax(this, axis); }
  logSoftmax(axis?: number): Tensor { return ops.logSoftmax(this, axis); }
}

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
  if (max === 0) return function (this: Tensor) { if (arguments.length > 0) throw tooMany(name, 0, arguments.length); return f.call(this); };
  if (max === 1) return function (this: Tensor, a?: unknown) { if (arguments.length > 1) throw tooMany(name, 1, arguments.length); return f.call(this, a); };
  if (max === 2) return function (this: Tensor, a?: unknown, b?: unknown) { if (arguments.length > 2) throw tooMany(name, 2, arguments.length); return f.call(this, a, b); };
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
    const max = f.length === 0 && params.trim() !== '' ? params.split(',').length : Math.max(f.length, params.trim() === '' ? 0 : params.split(',').length);
    Object.defineProperty(Tensor.prototype, key, { ...d, value: checkedArity(`Tensor.${key}`, f, max) });
  }
}
