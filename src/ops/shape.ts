// Data-movement primitives. All are linear, so each JVP is the op applied to the tangent
// (linearJvp) and each VJP is the transposed movement (slice ↔ pad, gather ↔ scatter-add, broadcast ↔ sum).
import { Tensor } from './tensor.js';
import type { Pending } from '../tensor/tensor.js';
import { SUFFIX, type DType } from '../tensor/dtype.js';
import { exempt } from '../tensor/scope.js';
import { modes } from './modes.js';
import { runtime, views, kernel, writeArgs, ARGS_BYTES } from '../wasm/module.js';
import { hooks } from '../wasm/hooks.js';
import type { Rule } from './rule.js';
import { stridedCopy, stridesOf, broadcastStrides, filled, k, sizeOf } from './launch.js';
import { reshape, transpose, sumTo, slice, pad, gather, scatterAdd, cast } from './api.js';
import { linearJvp } from './linear.js';
import { front, frontAll, frontRank, elementwiseBatch } from './batch.js';

const NONE = { inputs: [], output: false } as const;

const invertPerm = (perm: readonly number[]): number[] => {
  const inv = new Array<number>(perm.length);
  perm.forEach((p, i) => (inv[p] = i));
  return inv;
};

/** Copies the region of x at `begin` of extent `size` into a new tensor. */
function sliceForward(x: Tensor, begin: readonly number[], size: readonly number[]): Tensor {
  const y = Tensor.empty(size, x.dtype);
  const xs = stridesOf(x.shape);
  const off = begin.reduce((acc, b, i) => acc + b * xs[i], 0);
  stridedCopy(x, off, y, 0, size, xs, stridesOf(size));
  return y;
}

/** Zeros of `shape` with x written at `begin`. */
function padForward(x: Tensor, begin: readonly number[], shape: readonly number[]): Tensor {
  const y = filled(shape, x.dtype, 0);
  const ys = stridesOf(shape);
  const off = begin.reduce((acc, b, i) => acc + b * ys[i], 0);
  stridedCopy(x, 0, y, off, x.shape, stridesOf(x.shape), ys);
  return y;
}

/** Splits a shape around `axis` into the [outer, axis, inner] view the gather kernels use. */
function around(shape: readonly number[], axis: number): [number, number, number] {
  return [sizeOf(shape.slice(0, axis)), shape[axis], sizeOf(shape.slice(axis + 1))];
}

/** Runs f on indices (or cross-entropy's labels) copied into a temporary wasm block (freeing `out` if that block cannot be had). */
export function withIndices(indices: Int32Array, out: Tensor, f: (ptr: number) => void): void {
  const arena = runtime().arena;
  const bytes = Math.max(4, indices.length * 4);
  let ptr: number;
  try {
    ptr = arena.alloc(bytes);
  } catch (e) {
    out.dispose(); // out of memory: the op fails without leaving its output behind
    throw e;
  }
  try {
    views().i32.set(indices, ptr >> 2);
    // Reported with the array itself, so compile() replays it with each call's values, bound to
    // the right derivation even when two index arguments hold equal values while tracing.
    hooks.recorder?.write(ptr, indices.length, 'i32', indices);
    f(ptr);
  } finally {
    arena.free(ptr, bytes);
  }
}

function gatherForward(x: Tensor, indices: Int32Array, axis: number): Tensor {
  const [outer, len, inner] = around(x.shape, axis);
  const y = Tensor.empty([...x.shape.slice(0, axis), indices.length, ...x.shape.slice(axis + 1)], x.dtype);
  if (y.size > 0) withIndices(indices, y, (p) => k('gather', x.dtype)(x.ptr, p, y.ptr, outer, indices.length, len, inner));
  return y;
}

function scatterAddForward(g: Tensor, indices: Int32Array, axis: number, shape: readonly number[]): Tensor {
  const y = filled(shape, g.dtype, 0);
  const [outer, len, inner] = around(shape, axis);
  if (g.size > 0) withIndices(indices, y, (p) => k('scatter_add', g.dtype)(g.ptr, p, y.ptr, outer, indices.length, len, inner));
  return y;
}

function castForward(x: Tensor, dtype: DType): Tensor {
  if (x.dtype === dtype) return x.share();
  const y = Tensor.empty(x.shape, dtype);
  kernel(`cast_${SUFFIX[x.dtype]}_${SUFFIX[dtype]}`)(x.ptr, y.ptr, x.size);
  return y;
}

// A transpose of the last two axes is lazy: its memory is allocated and filled on first use of
// its pointer (Storage.ptr), and matmul() reads an unfilled one as its source with a GEMM
// transpose flag instead, so matmul(transpose(a), b) never copies A. Its node is recorded as for
// any op, so every other use (and its gradient) is unchanged. Small ones are copied at once.
/** Transposes of at least this many elements are lazy (tests lower it to reach small shapes). */
export const lazyTranspose = { minSize: 4096 };
/** Argument slots of fills, clear of those a launch may have written before it reads a lazy input's pointer. */
const FILL_SLOT = ARGS_BYTES >> 3;

const swapsLastTwo = (perm: readonly number[]): boolean => {
  const r = perm.length;
  return r >= 2 && perm[r - 2] === r - 1 && perm[r - 1] === r - 2 && perm.every((p, i) => i >= r - 2 || p === i);
};

/** Writes x with its axes permuted by `perm` to the block at `dst`. */
function permuteInto(x: Tensor, perm: readonly number[], dst: number, slot = 0): void {
  const src = x.ptr; // first: filling a lazy x writes argument slots of its own
  const xs = stridesOf(x.shape);
  const shape = perm.length > 0 ? perm.map((i) => x.shape[i]) : [1];
  if (sizeOf(shape) === 0) return;
  const n = shape.length;
  const strides = perm.length > 0 ? perm.map((i) => xs[i]) : [1];
  k('strided_copy', x.dtype)(src, dst, n, writeArgs(slot, shape), writeArgs(slot + n, strides), writeArgs(slot + 2 * n, stridesOf(shape)));
}

/** The pending fill of a lazy transpose: a handle on the source's memory, let go once filled or dropped. */
class LazyTranspose implements Pending {
  readonly op = 'transpose';
  private readonly src: Tensor;
  constructor(
    readonly of: Tensor,
    readonly perm: readonly number[],
    readonly shape: readonly number[],
  ) {
    this.src = of.share();
    exempt(this.src); // owned by the lazy block, never by a tidy scope
  }
  fill(ptr: number): void {
    permuteInto(this.src, this.perm, ptr, FILL_SLOT);
  }
  drop(): void {
    this.src.dispose();
  }
}

function transposeForward(x: Tensor, perm: readonly number[]): Tensor {
  const shape = perm.map((i) => x.shape[i]);
  if (x.size >= lazyTranspose.minSize && swapsLastTwo(perm)) {
    return Tensor.lazy(shape, x.dtype, new LazyTranspose(x, perm, shape), x.storage);
  }
  const y = Tensor.empty(shape, x.dtype);
  permuteInto(x, perm, y.ptr);
  return y;
}

/**
 * The source of t when t is an unfilled lazy transpose and reading that source with a transpose
 * flag gives what reading t would (the same values, recorded graph and tangent); else null.
 * matmul() runs on it (src/ops/api.ts).
 */
export function transposedSource(t: Tensor): Tensor | null {
  const lazy = t.storage.lazy;
  if (!(lazy instanceof LazyTranspose)) return null;
  const x = lazy.of;
  if (x.disposed || t.shape.length !== lazy.shape.length || t.shape.some((d, i) => d !== lazy.shape[i])) return null;
  const graph = !modes.record || (t.requiresGrad ? t.node !== null && t.node.inputs[0] === x : !x.requiresGrad);
  return graph && (t.tangent === null) === (x.tangent === null) ? x : null;
}

export const shapeRules = {
  reshape: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => x.share(p.shape),
    vjp: (g, s) => [reshape(g, s.shapes[0])],
    jvp: linearJvp('reshape'),
    batch: ([x], [d], p, self) => {
      const f = front(x, d);
      return [self([f], { shape: [f.shape[0], ...p.shape] }), 0];
    },
  } satisfies Rule<{ shape: readonly number[] }>,
  transpose: {
    saves: NONE,
    int32: true,
    forward: ([x], { perm }) => transposeForward(x, perm),
    vjp: (g, _s, p) => [transpose(g, invertPerm(p.perm))],
    jvp: linearJvp('transpose'),
    batch: ([x], [d], p, self) => [self([front(x, d)], { perm: [0, ...p.perm.map((a) => a + 1)] }), 0],
  } satisfies Rule<{ perm: readonly number[] }>,
  broadcastTo: {
    saves: NONE,
    int32: true,
    forward: ([x], { shape }) => {
      const y = Tensor.empty(shape, x.dtype);
      if (shape.length > 0) stridedCopy(x, 0, y, 0, shape, broadcastStrides(x.shape, shape), stridesOf(shape));
      else stridedCopy(x, 0, y, 0, [1], [1], [1]);
      return y;
    },
    vjp: (g, s) => [sumTo(g, s.shapes[0])],
    jvp: linearJvp('broadcastTo'),
    batch: ([x], [d], p, self) => {
      const f = frontRank(x, d, p.shape.length);
      return [self([f], { shape: [f.shape[0], ...p.shape] }), 0];
    },
  } satisfies Rule<{ shape: readonly number[] }>,
  slice: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => sliceForward(x, p.begin, p.size),
    vjp: (g, s, p) => [pad(g, p.begin, s.shapes[0])],
    jvp: linearJvp('slice'),
    batch: ([x], [d], p, self) => {
      const f = front(x, d);
      return [self([f], { begin: [0, ...p.begin], size: [f.shape[0], ...p.size] }), 0];
    },
  } satisfies Rule<{ begin: readonly number[]; size: readonly number[] }>,
  pad: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => padForward(x, p.begin, p.shape),
    vjp: (g, s, p) => [slice(g, p.begin, s.shapes[0])],
    jvp: linearJvp('pad'),
    batch: ([x], [d], p, self) => {
      const f = front(x, d);
      return [self([f], { begin: [0, ...p.begin], shape: [f.shape[0], ...p.shape] }), 0];
    },
  } satisfies Rule<{ begin: readonly number[]; shape: readonly number[] }>,
  concat: {
    saves: NONE,
    int32: true,
    forward: (xs, { axis }) => {
      const shape = xs[0].shape.slice();
      shape[axis] = xs.reduce((acc, x) => acc + x.shape[axis], 0);
      const y = Tensor.empty(shape, xs[0].dtype);
      const ys = stridesOf(shape);
      let at = 0;
      for (const x of xs) {
        stridedCopy(x, 0, y, at * ys[axis], x.shape, stridesOf(x.shape), ys);
        at += x.shape[axis];
      }
      return y;
    },
    vjp: (g, s, { axis }, needs) => {
      let at = 0;
      return s.shapes.map((shape, i) => {
        const begin = shape.map((_, d) => (d === axis ? at : 0));
        at += shape[axis];
        return needs[i] ? slice(g, begin, shape) : null;
      });
    },
    jvp: linearJvp('concat'),
    batch: (xs, dims, p, self) => [self(frontAll(xs, dims), { axis: p.axis + 1 }), 0],
  } satisfies Rule<{ axis: number }>,
  gather: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => gatherForward(x, p.indices, p.axis),
    vjp: (g, s, p) => [scatterAdd(g, p.indices, p.axis, s.shapes[0])],
    jvp: linearJvp('gather'),
    batch: ([x], [d], p, self) => [self([front(x, d)], { indices: p.indices, axis: p.axis + 1 }), 0],
  } satisfies Rule<{ indices: Int32Array; axis: number }>,
  scatterAdd: {
    saves: NONE,
    forward: ([g], p) => scatterAddForward(g, p.indices, p.axis, p.shape),
    vjp: (g, _s, p) => [gather(g, p.indices, p.axis)],
    jvp: linearJvp('scatterAdd'),
    batch: ([g], [d], p, self) => {
      const f = front(g, d);
      return [self([f], { indices: p.indices, axis: p.axis + 1, shape: [f.shape[0], ...p.shape] }), 0];
    },
  } satisfies Rule<{ indices: Int32Array; axis: number; shape: readonly number[] }>,
  cast: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => castForward(x, p.dtype),
    vjp: (g, _s, p) => [cast(g, p.from)],
    jvp: linearJvp('cast'),
    batch: elementwiseBatch,
  } satisfies Rule<{ dtype: DType; from: DType }>,
};
