// Helpers of the trace recorder (src/compile/trace.ts): reading what JS wrote into poisoned
// blocks, and naming the code that touched memory.
import { runtime } from '../wasm/module.js';
import type { ElementKind } from '../wasm/hooks.js';
import type { Typed } from './trace.js';

/** Poison byte of blocks allocated during a trace (0xffffffff is no JS-written float or valid index). */
export const POISON = 0xff;

/** Whether [ptr, ptr + bytes) still holds only the poison byte (ptr is 64-byte aligned). */
export function poisoned(buf: ArrayBufferLike, ptr: number, bytes: number): boolean {
  const words = new Int32Array(buf, ptr, bytes >> 2);
  for (let i = 0; i < words.length; i++) if (words[i] !== -1) return false;
  const tail = new Uint8Array(buf, ptr + (bytes & ~3), bytes & 3);
  return tail.every((v) => v === POISON);
}

export function isNumbers(a: unknown): a is ArrayLike<number> {
  return (ArrayBuffer.isView(a) && !(a instanceof DataView)) || (Array.isArray(a) && a.every((v) => typeof v === 'number'));
}

export function equalPrefix(ints: Int32Array, a: ArrayLike<number>): boolean {
  if (a.length > ints.length) return false;
  for (let i = 0; i < a.length; i++) if (ints[i] !== a[i]) return false;
  for (let i = a.length; i < ints.length; i++) if (ints[i] !== -1) return false; // the rest still poison
  return true;
}

export function snapshot(kind: ElementKind, ptr: number, count: number): Typed {
  const buf = runtime().memory.buffer;
  if (kind === 'f32') return new Float32Array(buf, ptr, count).slice();
  if (kind === 'f64') return new Float64Array(buf, ptr, count).slice();
  return new Int32Array(buf, ptr, count).slice();
}

/** The code that touched memory: the first two stack frames outside the wasm layer and this file. */
export function site(stack: string | undefined): string {
  const frames = (stack ?? '')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().replace(/^at /, ''));
  const outside = frames.filter((f) => !f.includes(LIBRARY));
  // No frame outside the library: it read values that fn computed rather than received (indices
  // mapped along an axis other than 0 and moved to the front, say), which no replay can rebind.
  return outside.slice(0, 2).join(' ← ') || 'inside the library: indices or labels fn computes rather than receives';
}
/**
 * Where the library's code lives (the bundle file, or the src/ folder): the frames a site skips
 * to reach the caller's. Read from a stack taken at load, not import.meta, which some bundle
 * formats (iife) leave empty.
 */
const LIBRARY = ((): string => {
  const frame = (new Error().stack ?? '').split('\n').find((l) => /:\d+:\d+\)?$/.test(l.trim())) ?? '';
  const file = frame
    .trim()
    .replace(/^at\s+/, '')
    .replace(/^[^(]*\(/, '') // V8: "at fn (file:line:col)"
    .replace(/^[^@]*@/, '') // Firefox, Safari: "fn@file:line:col"
    .replace(/:\d+:\d+\)?$/, '')
    .replace(/^file:\/\//, ''); // frames name files by path or by URL
  return file.includes('/src/compile/') ? file.slice(0, file.indexOf('/src/') + 5) : file || '\u0000';
})();
