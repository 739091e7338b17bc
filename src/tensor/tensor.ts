// The Tensor: a shape, a dtype and a block of wasm memory, plus the autodiff fields (the node
// that produced it, its gradient, its forward-mode tangent). Memory blocks are reference
// counted so the backward pass can keep what it saved after the user disposed a tensor.
import { DisposedError, ShapeError } from '../errors.js';
import type { Node } from '../graph/node.js';
import { views, runtime } from '../wasm/module.js';
import { BYTES, type DType } from './dtype.js';
import { track, untrack, exempt } from './scope.js';
import * as ops from '../ops/api.js';
import { backward as runBackward } from '../autodiff/backward.js';
import { hooks } from '../graph/trace-hooks.js';

/** A block of wasm memory shared by every tensor that views it. */
export class Storage {
  refs = 1;
  /** Holds a gradient: memory() counts it apart from activations (see Arena.gradBytes). */
  gradient = false;
  constructor(readonly ptr: number, readonly bytes: number) {}
  release(): void {
    if (--this.refs === 0) runtime().arena.free(this.ptr, this.bytes, this.gradient);
  }
  markGradient(): void {
    if (this.gradient || this.refs === 0) return;
    this.gradient = true;
    runtime().arena.markGradient(this.bytes);
  }
}

export type TensorLike = Tensor | number;
type Axis = number | readonly number[];

let nextId = 1;
/** The id the next tensor will get: tensors with a smaller id already exist (compile() uses it). */
export const nextTensorId = (): number => nextId;

export class Tensor {
  readonly id = nextId++;
  readonly size: number;
  requiresGrad = false;
  grad: Tensor | null = null;
  private nodeRef: Node | null = null;
  /** Forward-mode tangent carried with this value (jvp). */
  tangent: Tensor | null = null;
  private isDisposed = false;

  private constructor(readonly shape: readonly number[], readonly dtype: DType, readonly storage: Storage) {
    let n = 1;
    for (const d of shape) n *= d;
    this.size = n;
    track(this);
  }

  /** A new tensor of the given shape with uninitialised memory. */
  static empty(shape: readonly number[], dtype: DType): Tensor {
    let n = 1;
    for (const d of shape) n *= d;
    const bytes = n * BYTES[dtype];
    return new Tensor(Object.freeze(shape.slice()), dtype, new Storage(runtime().arena.alloc(bytes), bytes));
  }

  /** A second handle on the same memory, with another (same-size) shape and its own lifetime. */
  view(shape: readonly number[] = this.shape): Tensor {
    this.check('view');
    this.storage.refs++;
    return new Tensor(shape === this.shape ? shape : Object.freeze(shape.slice()), this.dtype, this.storage);
  }

  /** Another tracked handle on the same memory and the same tangent. */
  alias(): Tensor {
    const t = this.view();
    if (this.tangent !== null) t.tangent = this.tangent.save();
    return t;
  }

  /** A handle for the backward pass: same memory and tangent, outside every tidy scope. */
  save(): Tensor {
    const t = this.view();
    if (this.tangent !== null) t.tangent = this.tangent.save();
    exempt(t);
    return t;
  }

  /**
   * The recorded op that produced this tensor (null for leaves and untracked results). A live
   * handle holds a reference on its node; the node survives dispose() for consumers' backward.
   */
  get node(): Node | null {
    return this.nodeRef;
  }
  set node(n: Node | null) {
    if (!this.isDisposed) {
      n?.hold();
      this.nodeRef?.drop();
    }
    this.nodeRef = n;
  }

  get disposed(): boolean {
    return this.isDisposed;
  }

  /** Byte offset of the data in wasm memory; throws if disposed. */
  get ptr(): number {
    if (this.isDisposed) throw new DisposedError(`tensor #${this.id} (shape [${this.shape}]) was disposed and cannot be used`);
    hooks.recorder?.pointer(this); // compile()'s tracer: which persistent tensors a step touches
    return this.storage.ptr;
  }

  check(op: string): this {
    if (this.isDisposed) throw new DisposedError(`${op}: tensor #${this.id} (shape [${this.shape}]) was disposed and cannot be used`);
    return this;
  }

  /**
   * Frees this handle (and its tangent and gradient) at once; a second call does nothing. The
   * recorded node stays: a graph may still run backward through a disposed intermediate.
   */
  dispose(): void {
    if (this.isDisposed) return;
    this.isDisposed = true;
    untrack(this);
    this.storage.release();
    this.nodeRef?.drop();
    this.tangent?.dispose();
    this.grad?.dispose();
    this.tangent = null;
    this.grad = null;
  }

  /** A copy of the data as a Float32Array or Float64Array. */
  toArray(): Float32Array | Float64Array {
    const p = this.check('toArray').storage.ptr;
    const v = views();
    return this.dtype === 'float32' ? v.f32.slice(p >> 2, (p >> 2) + this.size) : v.f64.slice(p >> 3, (p >> 3) + this.size);
  }

  /** The value of a one-element tensor. */
  item(): number {
    if (this.size !== 1) throw new ShapeError(`item: tensor has shape [${this.shape}] (${this.size} elements), expected exactly one element`);
    const p = this.check('item').storage.ptr;
    const v = views();
    return this.dtype === 'float32' ? v.f32[p >> 2] : v.f64[p >> 3];
  }

  toString(): string {
    return `Tensor(shape=[${this.shape}], dtype=${this.dtype}${this.requiresGrad ? ', requiresGrad' : ''})`;
  }

  /** Runs reverse mode from this tensor; a non-scalar needs a seed of its own shape. */
  backward(seed?: Tensor | number): void {
    runBackward(this, seed);
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
  gelu(): Tensor { return ops.gelu(this); }
  clamp(lo: number, hi: number): Tensor { return ops.clamp(this, lo, hi); }

  sum(axis?: Axis, keepdims?: boolean): Tensor { return ops.sum(this, axis, keepdims); }
  mean(axis?: Axis, keepdims?: boolean): Tensor { return ops.mean(this, axis, keepdims); }
  max(axis?: Axis, keepdims?: boolean): Tensor { return ops.max(this, axis, keepdims); }
  logsumexp(axis?: Axis, keepdims?: boolean): Tensor { return ops.logsumexp(this, axis, keepdims); }

  reshape(shape: readonly number[]): Tensor { return ops.reshape(this, shape); }
  transpose(perm?: readonly number[]): Tensor { return ops.transpose(this, perm); }
  broadcastTo(shape: readonly number[]): Tensor { return ops.broadcastTo(this, shape); }
  slice(begin: readonly number[], size: readonly number[]): Tensor { return ops.slice(this, begin, size); }
  gather(indices: Int32Array | readonly number[], axis?: number): Tensor { return ops.gather(this, indices, axis); }
  concat(others: readonly Tensor[], axis?: number): Tensor { return ops.concat([this, ...others], axis); }

  matmul(b: Tensor): Tensor { return ops.matmul(this, b); }
  softmax(axis?: number): Tensor { return ops.softmax(this, axis); }
  logSoftmax(axis?: number): Tensor { return ops.logSoftmax(this, axis); }
}

export function isTensor(v: unknown): v is Tensor {
  return v instanceof Tensor;
}
