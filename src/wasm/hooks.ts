// The points where compile()'s recorder (src/compile/trace.ts) watches one traced call:
//   kernel launches      kernel() in src/wasm/module.ts, runJobs() in src/wasm/threads.ts
//   JS writes to memory  writeArgs (shapes, strides) and fromValues report theirs; others
//                        (label and index blocks, arange) are found by the recorder's scan
//   any JS access        views() — a write, or a read such as .item() / .toArray()
//   handed-out pointers  Tensor.ptr (to know which persistent tensors a step touches)
// Outside a trace `hooks.recorder` is null, so each site costs one null check in eager mode.
// Two helpers for code whose kernel arguments change from call to call: perCall() and derive().
// The wasm layer only exposes these hooks; the compile layer installs the recorder
// (src/compile/trace.ts), so nothing here imports upward.

/** A tensor handle as the recorder sees it (this layer knows no tensor class). */
interface TensorHandle {
  readonly id: number;
}

export type Kernel = (...args: number[]) => number;
/** Element type of a JS write into wasm memory. */
export type ElementKind = 'f32' | 'f64' | 'i32';
/** Recomputes a derived array (e.g. crossEntropy's flat indices) from a new value of its source. */
export type Derivation = (source: never) => ArrayLike<number>;

export interface Recorder {
  /** The kernel export `name` as the traced code will call it (a recording wrapper). */
  kernel(name: string, f: Kernel): Kernel;
  /** A launch cut into pieces for the thread pool: recorded whole; returns the raw export to run them. */
  jobs(name: string, jobs: readonly (readonly number[])[]): Kernel;
  /** views() was called: JS is about to touch memory (explained by a write() right after, or not). */
  access(): void;
  /** `count` elements of `kind` were just written from JS at byte offset `ptr`, taken from `source`. */
  write(ptr: number, count: number, kind: ElementKind, source: unknown): void;
  /** A tensor's pointer was read (it is about to become a kernel argument). */
  pointer(t: TensorHandle): void;
  /** The trailing arguments of the next launch are `values`, recomputed by `compute` on every call. */
  perCall(values: readonly number[], compute: () => readonly number[]): void;
  /** `derived` was computed from `source` by `make` (make(source) gives it again). */
  derive(derived: object, source: object, make: Derivation): void;
  /**
   * JS read `values` out of an int32 tensor whose memory is `storage` (toArray: indices or
   * labels to range-check). A compiled function's int32 argument read this way is rebound on
   * every call, as an Int32Array argument is.
   */
  readInts(storage: object, values: Int32Array): void;
  /** Runs fn, whose launches come in the middle of another launch's preparation (a lazy block filled on first use). */
  nested(fn: () => void): void;
  /** The schedule depends on the value `read()` gives now (see guard()). */
  guard(read: () => unknown): void;
}

export const hooks: { recorder: Recorder | null } = { recorder: null };

/**
 * Scalar kernel arguments that JS state changes from call to call: an optimizer's step count
 * and learning rate, a random seed drawn from a counter. Runs `compute` (which may advance that
 * state) and returns its values, which must be the trailing arguments of the next kernel launch.
 * A compiled step records `compute` and runs it again on every replay, so the state advances
 * and the kernel gets the new values exactly as in eager mode.
 */
export function perCall<T extends readonly number[]>(compute: () => T): T {
  const values = compute();
  const r = hooks.recorder;
  if (r !== null) r.perCall(values, compute);
  return values;
}

/**
 * The seed arguments of a random kernel. A drawn seed (automatic, or a module's counter) is
 * perCall, so every replay of a compiled step draws afresh. A seed the caller gave is an ordinary
 * argument, which a compiled step compares between its traces: one that changes per call
 * (`seed: step`) is caught there, where inside perCall the traced one would replay silently.
 */
export function seedArgs<T extends readonly number[]>(given: boolean, compute: () => T): T {
  return given ? compute() : perCall(compute);
}

/**
 * A JS value that decides which kernels run, not just their scalar arguments (whether an SGD
 * group has a momentum buffer, Nesterov or not). A compiled step compares `read()` with the value
 * it had when traced before every replay, and traces again when it changed.
 */
export function guard(read: () => unknown): void {
  hooks.recorder?.guard(read);
}

/**
 * Declares that the array `derived` (written into wasm memory later, e.g. gather indices) was
 * computed from `source` (e.g. an argument's labels) by `make`: a compiled step called with new
 * labels recomputes the indices with `make`, which also validates them as eager mode does.
 */
export function derive<S extends object>(derived: object, source: S, make: (source: S) => ArrayLike<number>): void {
  hooks.recorder?.derive(derived, source, make as Derivation);
}
