// The user-facing memory API: scopes, explicit keeps, and what the arena reports.
import { runtime } from './wasm/module.js';
import { runScoped, exempt, liveTensors } from './tensor/scope.js';
import { Tensor, isTensor } from './tensor/tensor.js';

/** Runs fn and disposes every tensor created inside it except those it returns (or keep()s). */
export function tidy<T>(fn: () => T): T {
  return runScoped(fn, isTensor);
}

/** Exempts t from every enclosing tidy(); returns t. */
export function keep<T extends Tensor>(t: T): T {
  exempt(t.check('keep'));
  return t;
}

export interface MemoryInfo {
  /** Live tensor handles. */
  tensors: number;
  /** Bytes of tensor data in use, and the most since init() or resetPeak(). */
  bytesInUse: number;
  peakBytes: number;
  /** Size of the wasm memory. */
  wasmBytes: number;
}

export function memory(): MemoryInfo {
  const r = runtime();
  return { tensors: liveTensors(), bytesInUse: r.arena.bytesInUse, peakBytes: r.arena.peakBytes, wasmBytes: r.memory.buffer.byteLength };
}

export function resetPeak(): void {
  runtime().arena.resetPeak();
}
