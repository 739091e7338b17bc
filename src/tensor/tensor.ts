// The tensor's data side: a shape, a dtype and a block of wasm memory, plus the autodiff fields
// (the node that produced it, its gradient, its forward-mode tangent). Memory blocks are
// reference counted so the backward pass can keep what it saved after the user disposed a
// tensor. The op methods (x.add(y), x.backward()) are in the class built on this one,
// `Tensor` in src/ops/tensor.ts: this layer knows no ops.
import { DisposedError, OutOfMemoryError, ShapeError, GradError } from '../errors.js';
import { views, runtime } from '../wasm/module.js';
import { hooks } from '../wasm/hooks.js';
import { BYTES, type DType } from './dtype.js';
import { track, untrack, exempt } from './scope.js';
import { forget, type Origin } from './lifetime.js';

/** How a lazy block gets its contents (src/ops/shape.ts: a transpose only matmul reads is never copied). */
export interface Pending {
  /** The op that made the block, named in an OutOfMemoryError when there is no room to fill it. */
  readonly op: string;
  /** Writes the contents into the block just allocated at `ptr`. */
  fill(ptr: number): void;
  /** Lets go of what fill would read; called once, after the fill or when the block dies unfilled. */
  drop(): void;
  /** Never filled (a batched tensor's block inside vmap, src/ops/batch.ts): it holds no memory of its own. */
  readonly virtual?: boolean;
}

/** A block of wasm memory shared by every tensor that views it. */
export class Storage {
  refs = 1;
  /** Holds a gradient: memory() counts it apart from activations (see Arena.gradBytes). */
  gradient = false;
  /** The op that first produced this block, charged with its bytes while it lives (the OutOfMemoryError report). */
  origin: Origin | null = null;
  /** Depth of code that only reads memory (primitive forwards, fills): no in-place write happens there. */
  static reading = 0;
  /** Lazy blocks whose fill reads this one: filled before code that may write here in place gets the pointer. */
  readers: Set<Storage> | null = null;
  private at: number;
  private pending: Pending | null = null;
  private source: Storage | null = null;

  constructor(
    ptr: number,
    readonly bytes: number,
  ) {
    this.at = ptr;
  }

  /** A block allocated and filled on first use of its pointer; `source` is the block the fill reads. */
  static lazy(bytes: number, pending: Pending, source: Storage): Storage {
    const s = new Storage(-1, bytes);
    s.pending = pending;
    s.source = source;
    (source.readers ??= new Set()).add(s);
    return s;
  }

  get ptr(): number {
    if (this.pending !== null) this.fill();
    return this.at;
  }

  /** What fills this block on first use (null once filled, and for ordinary blocks). */
  get lazy(): Pending | null {
    return this.pending;
  }

  /** Allocates and fills a lazy block; an OutOfMemoryError (or any failure) leaves it lazy. */
  private fill(): void {
    const pending = this.pending!;
    let at: number;
    try {
      at = runtime().arena.alloc(this.bytes);
    } catch (e) {
      throw e instanceof OutOfMemoryError ? e.in(`${pending.op} (filled on first use)`) : e;
    }
    this.pending = null;
    this.at = at;
    Storage.reading++;
    try {
      const r = hooks.recorder; // compile()'s tracer: the fill may come between a perCall() and its launch
      if (r !== null) r.nested(() => pending.fill(at));
      else pending.fill(at);
    } catch (e) {
      this.pending = pending;
      this.at = -1;
      runtime().arena.free(at, this.bytes);
      throw e;
    } finally {
      Storage.reading--;
    }
    this.detach(pending);
  }

  private detach(pending: Pending): void {
    const src = this.source!;
    src.readers!.delete(this);
    if (src.readers!.size === 0) src.readers = null;
    this.source = null;
    pending.drop();
  }

  /** Fills every lazy block that reads this one: its contents may be about to change in place. */
  settleReaders(): void {
    for (const r of [...(this.readers ?? [])]) r.fill();
  }

  /** Charges this block's bytes to the op that produced it (apply() calls it; the first op to claim it keeps it). */
  charge(o: Origin): void {
    if (this.origin !== null || this.pending !== null) return;
    this.origin = o;
    o.bytes += this.bytes;
  }

  release(): void {
    if (--this.refs !== 0) return;
    if (this.origin !== null) this.origin.bytes -= this.bytes;
    if (this.pending !== null) {
      const p = this.pending;
      this.pending = null;
      this.detach(p); // never read: nothing was allocated
    } else runtime().arena.free(this.at, this.bytes, this.gradient);
  }
  markGradient(): void {
    if (this.gradient || this.refs === 0 || this.pending?.virtual === true) return;
    if (this.pending !== null) this.fill(); // gradient bytes are counted as allocated ones
    this.gradient = true;
    runtime().arena.markGradient(this.bytes);
  }
}

let nextId = 1;
/** The id the next tensor will get: tensors with a smaller id already exist (compile() uses it). */
export const nextTensorId = (): number => nextId;

function sizeOfShape(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i];
  return n;
}

/** A new block of `shape` with uninitialised memory (the shape frozen, or shared when it already is). */
export function emptyStorage(shape: readonly number[], dtype: DType): [readonly number[], Storage, number] {
  const n = sizeOfShape(shape),
    bytes = n * BYTES[dtype];
  // Shapes are frozen, so another tensor's shape can be shared instead of copied.
  const own = Object.isFrozen(shape) ? shape : Object.freeze(shape.slice());
  return [own, new Storage(runtime().arena.alloc(bytes), bytes), n];
}

/** What a tensor holds of the recorded op that produced it (src/ops/node.ts): a reference. */
export interface TapeNode {
  hold(): void;
  drop(): void;
}

/**
 * Everything a tensor is apart from its ops. `T` is the class built on it (src/ops/tensor.ts),
 * which every handle is an instance of: views, gradients and tangents are `T`s too; `N` is the
 * node type of the tape that class records.
 */
export abstract class TensorBase<T extends TensorBase<T, N>, N extends TapeNode = TapeNode> {
  /** A number unique to this handle, named in error messages. */
  readonly id = nextId++;
  /** Number of elements (the product of `shape`; 1 for a scalar of shape `[]`). */
  readonly size: number;
  private wantsGrad = false;
  /** The gradient accumulated by `backward()` (same shape and dtype), or null before the first backward pass. */
  grad: T | null = null;
  private nodeRef: N | null = null;
  /** Forward-mode tangent carried with this value (jvp). @internal */
  tangent: T | null = null;
  private isDisposed = false;
  /** Handed to the FinalizationRegistry (src/tensor/lifetime.ts): dispose() must take it back. */
  registered = false;

  /**
   * @param shape - The extent of each axis, frozen; `[]` for a scalar.
   * @param dtype - The element type.
   * @param storage - The wasm memory block holding the data, shared by views (internal).
   */
  protected constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly storage: Storage,
    size = sizeOfShape(shape),
  ) {
    this.size = size;
    track(this);
  }

  /** Whether gradients flow to this tensor; an int32 tensor never takes one (indices and labels). */
  get requiresGrad(): boolean {
    return this.wantsGrad;
  }
  /** Turns gradient recording on or off for this leaf; an int32 tensor refuses (a {@link GradError}). */
  set requiresGrad(on: boolean) {
    if (on && this.dtype === 'int32') {
      throw new GradError(
        `requiresGrad: an int32 tensor [${this.shape}] cannot require gradients (int32 holds indices and labels; ` +
          `differentiate a float tensor, e.g. x.astype('float32'))`,
      );
    }
    this.wantsGrad = on;
  }

  /** A new handle of the concrete class on `storage` (which the caller has counted a reference on). */
  protected abstract make(shape: readonly number[], storage: Storage): T;

  /**
   * A second handle on the same memory, with another (same-size) shape and its own lifetime.
   * Engine-internal: it records no node, so gradients stop at it (the public `view` is reshape).
   * @internal
   */
  share(shape: readonly number[] = this.shape): T {
    this.check('share');
    this.storage.refs++;
    return this.make(shape === this.shape ? shape : Object.freeze(shape.slice()), this.storage);
  }

  /** Another tracked handle on the same memory and the same tangent. @internal */
  alias(): T {
    const t = this.share();
    if (this.tangent !== null) t.tangent = linkedSave(this.tangent);
    return t;
  }

  /** A handle for the backward pass: same memory and tangent, outside every tidy scope. @internal */
  save(): T {
    const t = this.share();
    if (this.tangent !== null) t.tangent = linkedSave(this.tangent);
    exempt(t);
    return t;
  }

  /**
   * The recorded op that produced this tensor (null for leaves and untracked results). A live
   * handle holds a reference on its node; the node survives dispose() for consumers' backward.
   * @internal
   */
  get node(): N | null {
    return this.nodeRef;
  }
  /** @internal */
  set node(n: N | null) {
    if (!this.isDisposed) {
      n?.hold();
      this.nodeRef?.drop();
    }
    this.nodeRef = n;
  }

  /** Whether `dispose()` has freed this handle; using it then throws a {@link DisposedError}. */
  get disposed(): boolean {
    return this.isDisposed;
  }

  /** Byte offset of the data in wasm memory; throws if disposed. @internal */
  get ptr(): number {
    if (this.isDisposed) throw new DisposedError(`tensor #${this.id} (shape [${this.shape}]) was disposed and cannot be used`);
    const s = this.storage;
    // Outside a primitive the caller may write here in place (an optimizer step): lazy copies of this block are filled first.
    if (s.readers !== null && Storage.reading === 0) s.settleReaders();
    const p = s.ptr;
    hooks.recorder?.pointer(this); // compile()'s tracer: which persistent tensors a step touches
    return p;
  }

  /** Returns this tensor, or throws a {@link DisposedError} naming `op` if it was disposed. @internal */
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
    if (this.registered) forget(this);
    untrack(this);
    this.storage.release();
    this.nodeRef?.drop();
    this.tangent?.dispose();
    this.grad?.dispose();
    this.tangent = null;
    this.grad = null;
  }

  /** `using t = …` disposes t at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** A copy of the data as a Float32Array, Float64Array or (int32) Int32Array. */
  toArray(): Float32Array | Float64Array | Int32Array {
    const p = this.check('toArray').storage.ptr;
    const v = views();
    if (this.dtype === 'int32') {
      const ints = v.i32.slice(p >> 2, (p >> 2) + this.size);
      hooks.recorder?.readInts(this.storage, ints);
      return ints;
    }
    return this.dtype === 'float32' ? v.f32.slice(p >> 2, (p >> 2) + this.size) : v.f64.slice(p >> 3, (p >> 3) + this.size);
  }

  /** The value of a one-element tensor. */
  item(): number {
    this.check('item'); // a disposed tensor is a DisposedError whatever its size
    if (this.size !== 1)
      throw new ShapeError(`item: tensor has shape [${this.shape}] (${this.size} elements), expected exactly one element`);
    const p = this.storage.ptr;
    const v = views();
    if (this.dtype === 'int32') return v.i32[p >> 2];
    return this.dtype === 'float32' ? v.f32[p >> 2] : v.f64[p >> 3];
  }

  /** A short description: shape, dtype and whether it requires a gradient (not the values). */
  toString(): string {
    return `Tensor(shape=[${this.shape}], dtype=${this.dtype}${this.requiresGrad ? ', requiresGrad' : ''})`;
  }
}

/**
 * A saved handle on a tangent that keeps its tape: when a tangent is itself differentiated
 * (reverse over forward), a copy of it must stay the same value for the outer sweep.
 */
function linkedSave<T extends TensorBase<T>>(t: T): T {
  const h = t.save();
  if (t.requiresGrad) {
    h.requiresGrad = true;
    h.node = t.node;
  }
  return h;
}

/** Whether `v` is a tensor handle (every one is an instance of the class built on TensorBase). */
export function isTensorHandle(v: unknown): v is TensorBase<never, TapeNode> {
  return v instanceof TensorBase;
}
