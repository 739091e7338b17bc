// strided_copy in a program replayed on the thread pool (src/compile/program.ts, parallel.ts).
// Eagerly, a strided copy (attention's head split and merge, a weight slice, a transpose) takes
// its shape and strides as i32 arrays that JS writes into the kernel argument block right before
// the launch. Replayed, those writes are steps the parallel schedule cannot move kernels across,
// and the copy reads memory the next copy's writes overwrite, so every copy ended a run of
// reorderable launches: a GPT block's Q, K and V projections were three fork-joins with copies
// in between. With the pool up, a program gives each such copy its own constant copies of the
// arrays (in its plan block, written once when it is built), so the copy reads nothing JS
// writes and the writes into the argument block no longer order it (the schedule defers them to
// the end of their run); and cuts the copy over its outermost axis, each piece copying its own
// slab of whole rows, so the pieces write disjoint bytes and every element is copied as before.
import { ARGS_BYTES, runtime } from '../wasm/module.js';
import { ranges } from '../wasm/split.js';
import type { Trace, Ref, Launch } from './trace.js';
import { sameBuffer, shiftRef } from './refs.js';

/** Internal switch (bench/gpt-switch-ab.ts --switch constants compares): off, programs leave the arrays where JS writes them, as before. */
export const constants = { enabled: true };

/** A strided copy's shape and strides (i32 arrays, as the kernel reads them), known when the program is built. */
export interface CopyArgs {
  readonly shape: Int32Array;
  readonly xs: Int32Array;
  readonly ys: Int32Array;
}

const COPY = /^strided_copy_(f32|f64|i32)$/;

/** Whether a launch of `name` is a strided copy. */
const isCopy = (name: string): boolean => COPY.test(name);

/**
 * Pointer arguments that are i32 arrays JS writes into the argument block before the launch,
 * with their lengths: a copy's shape and strides, attention's geometry (Tq, Tk, d, dv, causal,
 * and the mask's layout: 9 values).
 */
const ARRAYS: readonly (readonly [RegExp, (a: readonly number[]) => readonly (readonly [number, number])[]])[] = [
  [
    COPY,
    (a) => [
      [3, a[2]],
      [4, a[2]],
      [5, a[2]],
    ],
  ],
  [/^attention_(f32|f64)$/, () => [[7, 9]]],
  [/^attention_vjp_(f32|f64)$/, () => [[11, 9]]],
];

/** A launch's constant arrays: argument index → values (the same for every piece). */
export type Arrays = ReadonlyMap<number, Int32Array>;

/**
 * The arrays of each launch of the trace (by op index) that reads i32 arrays from static memory
 * (ARRAYS) last written there by constant writes (replayed with the same values on every call),
 * every piece pointing at the same ones. Reads the writes in trace order; a write bound to an
 * argument, or any other launch with a pointer into static memory (which might write it),
 * forgets what it covers.
 */
export function constantArrays(trace: Trace): Map<number, Arrays> {
  const known = new Map<number, number>(); // address of an i32 → its value
  const out = new Map<number, Arrays>();
  trace.ops.forEach((op, i) => {
    if (op.kind === 'write') {
      if (op.dest.k !== 'abs') return;
      const at = op.dest.ptr;
      if (op.elem === 'i32' && op.bind === null) op.data.forEach((v, k) => known.set(at + 4 * k, v));
      else for (const a of known.keys()) if (a >= at - 3 && a < at + op.data.byteLength) known.delete(a);
      return;
    }
    const abs = (r: Ref | null): r is { k: 'abs'; ptr: number } => r !== null && r.k === 'abs' && r.ptr !== 0;
    const lens = ARRAYS.find(([re]) => re.test(op.name))?.[1](op.jobs[0]);
    if (lens === undefined || (isCopy(op.name) && op.jobs.length !== 1)) {
      if (op.refs.some((rs) => rs.some(abs))) known.clear();
      return;
    }
    const read = (r: Ref | null, n: number): Int32Array | null => {
      if (!abs(r) || n < 1) return null;
      const v = Int32Array.from({ length: n }, (_, k) => known.get(r.ptr + 4 * k) ?? NaN);
      return v.some((e, k) => e !== known.get(r.ptr + 4 * k)) ? null : v;
    };
    const arrays = new Map<number, Int32Array>();
    for (const [arg, n] of lens) {
      const r = op.refs[0][arg];
      const v = op.refs.every((rs) => abs(rs[arg]) && abs(r) && rs[arg].ptr === r.ptr) ? read(r, n) : null;
      if (v === null) return;
      arrays.set(arg, v);
    }
    out.set(i, arrays);
  });
  return out;
}

/** Bytes of constants launch `op` needs for its arrays, cut for `threads` threads. */
export function constantBytes(op: Launch, arrays: Arrays, threads: number): number {
  let n = 0;
  for (const v of arrays.values()) n += 4 * v.length;
  return isCopy(op.name) ? n + 4 * arrays.get(3)!.length * threads : n;
}

/**
 * Launch `op` reading its arrays from constants written now at `at` (the program's constant
 * area, constantBytes() bytes); a strided copy also cut for `threads` (constantCopy).
 */
export function constantLaunch(op: Launch, arrays: Arrays, threads: number, at: number): Launch {
  if (isCopy(op.name)) return constantCopy(op, { shape: arrays.get(3)!, xs: arrays.get(4)!, ys: arrays.get(5)! }, threads, at);
  const mem = new Int32Array(runtime().memory.buffer);
  const ptrs = new Map<number, number>();
  for (const [arg, v] of arrays) {
    mem.set(v, at >> 2);
    ptrs.set(arg, at);
    at += 4 * v.length;
  }
  return {
    ...op,
    jobs: op.jobs.map((a) => a.map((x, i) => ptrs.get(i) ?? x)),
    refs: op.refs.map((rs) => rs.map((r, i): Ref | null => (ptrs.has(i) ? { k: 'abs', ptr: ptrs.get(i)! } : r))),
  };
}

/**
 * The outermost-axis pieces of copy `c` (element offsets into x and y, and each piece's extent of
 * that axis) when they write disjoint bytes: y's strides non-negative and its outermost stride
 * beyond the rest of a slab. One piece ([0, 0, whole]) otherwise, or when `threads` is 1.
 */
export function copyPieces(c: CopyArgs, threads: number, distinct: boolean): [number, number, number][] {
  const { shape, xs, ys } = c;
  let rest = 0;
  for (let k = 1; k < shape.length; k++) rest += (shape[k] - 1) * ys[k];
  const disjoint = distinct && ys.every((v) => v >= 0) && ys[0] > rest;
  // A flat copy (one axis) is cut at multiples of 16 elements, so pieces start on 64-byte lines.
  const cut = disjoint ? ranges(shape[0], threads, shape.length === 1 ? 16 : 1) : [[0, shape[0]] as [number, number]];
  return cut.map(([lo, hi]) => [lo * xs[0], lo * ys[0], hi - lo]);
}

/**
 * Copy launch `op` reading its arrays from `c`, written now at `at` (the program's constant area,
 * copyBytes(c, threads) bytes): cut over its outermost axis into pieces for `threads` threads
 * (pooled) when they write disjoint bytes and x and y are different buffers, else one call.
 */
function constantCopy(op: Launch, c: CopyArgs, threads: number, at: number): Launch {
  const mem = new Int32Array(runtime().memory.buffer);
  const n = c.shape.length,
    bytes = op.name.endsWith('64') ? 8 : 4;
  mem.set(c.xs, at >> 2);
  mem.set(c.ys, (at >> 2) + n);
  const [rx, ry] = op.refs[0];
  const pieces = copyPieces(c, threads, !sameBuffer(rx, ry));
  const abs = (ptr: number): Ref => ({ k: 'abs', ptr });
  const shapes = pieces.map(([, , extent], j) => {
    const p = at + 4 * n * (2 + j);
    mem.set(c.shape, p >> 2);
    mem[p >> 2] = extent;
    return p;
  });
  const [px, py] = op.jobs[0];
  return {
    ...op,
    pooled: pieces.length > 1,
    jobs: pieces.map(([dx, dy], j) => [px + dx * bytes, py + dy * bytes, n, shapes[j], at, at + 4 * n]),
    refs: pieces.map(([dx, dy], j) => [shiftRef(rx, dx * bytes), shiftRef(ry, dy * bytes), null, abs(shapes[j]), abs(at), abs(at + 4 * n)]),
  };
}

/** Elements a copy reaches from its x (i = 0) or y (i = 1) pointer; undefined with a negative stride. */
export function copySpan(a: readonly number[], i: number): number | undefined {
  const mem = new Int32Array(runtime().memory.buffer);
  const n = a[2],
    s = a[3] >> 2,
    st = a[i === 0 ? 4 : 5] >> 2;
  let span = 1;
  for (let k = 0; k < n; k++) {
    if (mem[st + k] < 0) return undefined;
    span += (mem[s + k] - 1) * mem[st + k];
  }
  return span;
}

/** Elements a copy moves. */
export function copyCost(a: readonly number[]): number {
  const mem = new Int32Array(runtime().memory.buffer);
  let e = 1;
  for (let k = 0; k < a[2]; k++) e *= mem[(a[3] >> 2) + k];
  return e;
}

/** Whether an address is in the kernel argument block (which JS rewrites before launches). */
export function inArgs(ptr: number): boolean {
  const a = runtime().args;
  return ptr >= a && ptr < a + ARGS_BYTES;
}
