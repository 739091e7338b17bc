// The user-facing memory API: scopes, explicit keeps, and what the arena reports.
import { ArgumentError } from '../errors.js';
import { runtime } from '../wasm/module.js';
import { runScoped, exempt, liveTensors } from './scope.js';
import { isTensorHandle, type TensorBase, type TapeNode } from './tensor.js';
import { describe, tooMany } from '../args.js';

/** Runs fn and disposes every tensor created inside it except those it returns (or keep()s). */
export function tidy<T>(fn: () => T): T {
  if (arguments.length > 1) throw tooMany('tidy', 1, arguments.length);
  if (typeof fn !== 'function') throw new ArgumentError(`tidy: fn must be a function, got ${describe(fn)}`);
  const result = runScoped(fn, isTensorHandle);
  if (result instanceof Promise) {
    throw new ArgumentError('tidy: fn returned a Promise; tidy scopes are synchronous (await outside, tidy each synchronous step)');
  }
  return result;
}

/** Exempts t from every enclosing tidy(); returns t. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any tensor class built on the base
export function keep<T extends TensorBase<any, TapeNode>>(t: T): T {
  if (arguments.length > 1) throw tooMany('keep', 1, arguments.length);
  if (!isTensorHandle(t)) throw new ArgumentError(`keep: expected a Tensor, got ${describe(t)}`);
  exempt(t.check('keep'));
  return t;
}

/** What {@link memory} reports about the engine's wasm memory. */
export interface MemoryInfo {
  /** Live tensor handles. */
  tensors: number;
  /** Bytes of tensor data in use, and the most since init() or resetPeak(). */
  bytesInUse: number;
  /** The most bytes of tensor data in use at once since `init()` or the last {@link resetPeak}. */
  peakBytes: number;
  /** Size of the wasm memory. */
  wasmBytes: number;
  /** Bytes of gradients in use: leaves' .grad, and the sums a running backward pass keeps for them. */
  gradBytes: number;
  /**
   * The most that memory other than gradients rose above its level at the last resetPeak(): call
   * resetPeak() before a training step, with parameters, optimizer state and the batch live, and
   * this is the step's activation peak (saved activations and the backward pass's working
   * buffers). peakBytes cannot give it: backward builds the gradients while it frees the
   * activations, so peakBytes − (parameters + gradients + optimizer state) is only a lower
   * bound of it, and peakBytes − (parameters + optimizer state) an upper bound.
   */
  activationPeakBytes: number;
}

/**
 * A snapshot of memory use: live tensors, bytes in use and at peak, the wasm memory's size.
 * @throws {@link AdjointError} before `await init()`.
 */
export function memory(): MemoryInfo {
  if (arguments.length > 0) throw tooMany('memory', 0, arguments.length);
  const r = runtime();
  const a = r.arena;
  a.sampleOther();
  return {
    tensors: liveTensors(),
    bytesInUse: a.bytesInUse,
    peakBytes: a.peakBytes,
    wasmBytes: r.memory.buffer.byteLength,
    gradBytes: a.gradBytes,
    activationPeakBytes: a.peakOtherBytes - a.baseOtherBytes,
  };
}

/** Starts a new peak: `peakBytes` and `activationPeakBytes` of {@link memory} count from now. */
export function resetPeak(): void {
  if (arguments.length > 0) throw tooMany('resetPeak', 0, arguments.length);
  runtime().arena.resetPeak();
}

/**
 * Tensors whose identity keys state kept outside the graph: an optimizer's parameters (their
 * momentum and Adam moments). compile() makes such an argument's identity part of the call's
 * signature, since its trace bound that parameter's state.
 */
export const stateKeyed = new WeakSet<object>();
