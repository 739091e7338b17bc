// Selection primitives: where (a or b by a condition, broadcasting all three), tril/triu (one
// side of a diagonal kept, the rest zeroed) and argmax (int32 indices). where is linear in a
// and b for a fixed condition, so both its VJP and JVP are where again; tril/triu are linear
// and self-adjoint (a fixed 0/1 mask); argmax is piecewise constant (no derivative).
import { Tensor } from './tensor.js';
import { writeArgs } from '../wasm/module.js';
import { apply } from './apply.js';
import type { Rule } from './rule.js';
import { broadcastShapes, broadcastStrides, filled, k, sizeOf } from './launch.js';
import { linearJvp } from './linear.js';
import { zerosLike } from './composite.js';
import { elementwiseBatch, front } from './batch.js';

const NONE = { inputs: [], output: false } as const;

/** where with a scalar zero in place of a missing operand (the rules' own VJP/JVP terms). */
function selectOr(c: Tensor, a: Tensor | null, b: Tensor | null): Tensor {
  const like = (a ?? b)!;
  const z = filled([], like.dtype, 0);
  try {
    return apply('where', [c, a ?? z, b ?? z], {});
  } finally {
    z.dispose();
  }
}

/** y = c ≠ 0 ? a : b over the broadcast shape; c has a's dtype (the API converts it). */
function whereForward(c: Tensor, a: Tensor, b: Tensor): Tensor {
  const shape = broadcastShapes('where', broadcastShapes('where', c.shape, a.shape), b.shape);
  const y = Tensor.empty(shape, a.dtype);
  if (y.size === 0) return y;
  const pc = c.ptr,
    pa = a.ptr,
    pb = b.ptr; // first: filling a lazy input writes argument slots of its own
  const dims = shape.length > 0 ? shape : [1];
  const strides = (t: Tensor) => (shape.length > 0 ? broadcastStrides(t.shape, shape) : [0]);
  const n = dims.length;
  k('where', a.dtype)(
    pc,
    pa,
    pb,
    y.ptr,
    n,
    writeArgs(0, dims),
    writeArgs(n, strides(c)),
    writeArgs(2 * n, strides(a)),
    writeArgs(3 * n, strides(b)),
  );
  return y;
}

export interface TriParams {
  readonly k: number;
  readonly upper: boolean;
}

/** tril/triu of every trailing [rows, cols] matrix of x (rank ≥ 2, checked by the API). */
function triForward(x: Tensor, p: TriParams): Tensor {
  const y = Tensor.empty(x.shape, x.dtype);
  if (y.size === 0) return y;
  const r = x.shape.length,
    rows = x.shape[r - 2],
    cols = x.shape[r - 1];
  const diag = Math.max(-rows - 1, Math.min(cols + 1, p.k)); // beyond these every row is all kept or all zero; keeps i + k in i32
  k(p.upper ? 'triu' : 'tril', x.dtype)(x.ptr, y.ptr, x.size / (rows * cols), rows, cols, diag);
  return y;
}

export interface ArgmaxParams {
  readonly axis: number;
  readonly keepdims: boolean;
}

function argmaxForward(x: Tensor, { axis, keepdims }: ArgmaxParams): Tensor {
  const shape = keepdims ? x.shape.map((d, i) => (i === axis ? 1 : d)) : x.shape.filter((_, i) => i !== axis);
  const y = Tensor.empty(shape, 'int32');
  if (y.size === 0) return y;
  const outer = sizeOf(x.shape.slice(0, axis)),
    inner = sizeOf(x.shape.slice(axis + 1));
  k('argmax', x.dtype)(x.ptr, y.ptr, outer, x.shape[axis], inner);
  return y;
}

/** The tri primitive itself (its own transpose); the explicit type keeps the rule table's type from depending on itself. */
const triOf = (g: Tensor, p: TriParams): Tensor => apply('tri', [g], p);

export const selectRules = {
  where: {
    saves: { inputs: [0], output: false },
    int32: true,
    forward: ([c, a, b]) => whereForward(c, a, b),
    vjp: (g, s, _p, needs) => [null, needs[1] ? selectOr(s.x[0]!, g, null) : null, needs[2] ? selectOr(s.x[0]!, null, g) : null],
    jvp: ([, ta, tb], [c], y) => (ta === null && tb === null ? zerosLike(y) : selectOr(c, ta, tb)), // only the mask carried a tangent
    batch: elementwiseBatch,
  } satisfies Rule<Record<string, never>>,
  tri: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => triForward(x, p),
    vjp: (g, _s, p) => [triOf(g, p)],
    jvp: linearJvp('tri'),
    batch: ([x], [d], p, self) => [self([front(x, d)], p), 0], // the trailing matrices stay trailing
  } satisfies Rule<TriParams>,
  argmax: {
    saves: NONE,
    int32: true,
    forward: ([x], p) => argmaxForward(x, p),
    vjp: () => [null],
    jvp: (_t, _x, y) => zerosLike(y), // never called: an int32 output carries no tangent
    batch: ([x], [d], p, self) => [self([front(x, d)], { axis: p.axis + 1, keepdims: p.keepdims }), 0],
  } satisfies Rule<ArgmaxParams>,
};
