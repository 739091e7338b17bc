// Arithmetic on a trace's pointer references (Ref, src/compile/trace.ts), for the passes that cut
// or rewrite traced launches (gelu-grad.ts, copies.ts).
import type { Ref } from './trace.js';

/** Whether two refs point into one buffer (any offsets; static memory counts as one buffer). */
export function sameBuffer(a: Ref | null, b: Ref | null): boolean {
  if (a === null || b === null || a.k !== b.k) return false;
  if (a.k === 'block') return a.block === (b as typeof a).block;
  if (a.k === 'input') return a.input === (b as typeof a).input;
  if (a.k === 'ext') return a.storage === (b as typeof a).storage;
  return true;
}

/** Whether `a` points `by` bytes past `b`, into the same buffer. */
export function shifted(a: Ref | null, b: Ref | null, by: number): boolean {
  if (a === null || b === null || !sameBuffer(a, b)) return false;
  return a.k === 'abs' ? a.ptr === (b as typeof a).ptr + by : a.off === (b as typeof a).off + by;
}

/** `r` moved `by` bytes on (null stays null). */
export const shiftRef = (r: Ref | null, by: number): Ref | null =>
  r === null ? null : r.k === 'abs' ? { ...r, ptr: r.ptr + by } : { ...r, off: r.off + by };
