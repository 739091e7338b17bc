// The public op functions: argument checking (shapes, dtypes, axes), numbers lifted to
// scalar tensors, then one call to apply() per primitive. Composite ops live in composite.ts.
// Inside src/ops the op functions and the rule families import each other (VJP rules are written with ops), as JAX's lax does.
import { ShapeError, DtypeError, ArgumentError } from '../errors.js';
import { Tensor, type TensorLike } from './tensor.js';
import type { DType } from '../tensor/dtype.js';
import { checkAnyDtype, intArithmetic } from '../tensor/dtype.js';
import { apply } from './apply.js';
import { derive } from '../wasm/hooks.js';
import { filled, broadcastShapes, sizeOf } from './launch.js';
import { matmulDims } from './linalg.js';
import { transposedSource } from './shape.js';
import { take } from './take.js';
import { isBatched, detached } from './batch.js';

import { composite } from './composite.js';
import { describe, boolArg, tooMany } from '../args.js';

export * from './composite.js';
export * from './conv-api.js';
export * from './shape-api.js';
export * from './select-api.js';
export * from './cross-entropy.js';

/** An axis or several axes; negative values count from the end. */
export type Axis = number | readonly number[];

/** Normalised, sorted, distinct axes (all axes when omitted). */
export function normAxes(op: string, shape: readonly number[], axis?: Axis): number[] {
  if (axis === undefined) return shape.map((_, i) => i);
  if (typeof axis !== 'number' && !Array.isArray(axis))
    throw new ArgumentError(`${op}: axis must be a number or an array of numbers, got ${describe(axis)}`);
  const list = typeof axis === 'number' ? [axis] : [...axis];
  const out = list.map((a) => normAxis(op, shape, a));
  // PyTorch and NumPy refuse a repeated axis (1 and -1 of a matrix included) rather than reduce it once.
  const twice = out.find((a, i) => out.indexOf(a) !== i);
  if (twice !== undefined)
    throw new ArgumentError(`${op}: axis [${list}] names axis ${twice} of shape [${shape}] more than once; each axis may appear once`);
  return out.sort((a, b) => a - b);
}

export function normAxis(op: string, shape: readonly number[], a: number, rank = shape.length): number {
  if (!Number.isInteger(a) || a < -rank || a >= rank) {
    // 1.5, NaN or ∞ is not an axis at all: it read "axis 1.5 is out of range for shape [2,3]".
    if (!Number.isInteger(a)) throw new ArgumentError(`${op}: axis must be an integer, got ${describe(a)}`);
    throw new ShapeError(`${op}: axis ${a} is out of range for shape [${shape}] (rank ${shape.length})`);
  }
  return a < 0 ? a + rank : a;
}

/** An array argument (a shape, a permutation, slice bounds): anything else is an ArgumentError. */
function shapeArg(op: string, name: string, v: unknown): void {
  // Entries are checked for numbers here, before any message prints them: "[${shape}]" of a
  // Symbol entry, or arithmetic on a BigInt one, threw a TypeError.
  if (!Array.isArray(v) || v.some((d) => typeof d !== 'number'))
    throw new ArgumentError(`${op}: ${name} must be an array of integers, got ${describe(v)}`);
}

/** An array of tensors (concat's operands, Tensor.concat's others): anything else is an ArgumentError naming it. */
export function tensorList(op: string, name: string, xs: unknown): readonly Tensor[] {
  if (!Array.isArray(xs)) throw new ArgumentError(`${op}: ${name} must be an array of Tensors, got ${describe(xs)}`);
  return xs;
}

export function tensorArg(op: string, x: unknown, pos: string): Tensor {
  if (!(x instanceof Tensor)) throw new ArgumentError(`${op}: ${pos} must be a Tensor, got ${describe(x)}`);
  return x.check(op);
}

/** A tensor operand of float arithmetic: an int32 one is a DtypeError naming the public op (composites reach primitives of other names). */
export function floatArg(op: string, x: unknown, pos: string): Tensor {
  const t = tensorArg(op, x, pos);
  if (t.dtype === 'int32') throw intArithmetic(op, t.shape);
  return t;
}

/** Runs a binary primitive; a number operand becomes a scalar of the tensor operand's dtype. */
type BinaryOp = 'add' | 'sub' | 'mul' | 'div' | 'pow' | 'maximum' | 'minimum' | 'gt' | 'ge' | 'eq' | 'ne';
const COMPARISONS: ReadonlySet<string> = new Set(['gt', 'ge', 'eq', 'ne']);

/** lt and le run gt and ge with the operands swapped: their broadcast error is raised first, in the caller's order and name. */
function checkSwapped(name: string, a: TensorLike, b: TensorLike): void {
  if (a instanceof Tensor && b instanceof Tensor) broadcastShapes(name, a.shape, b.shape);
}

function binary(op: BinaryOp, a: TensorLike, b: TensorLike, name: string = op): Tensor {
  if (typeof a === 'number' && typeof b === 'number') throw new ArgumentError(`${name}: at least one operand must be a Tensor`);
  const ta = typeof a === 'number' ? null : tensorArg(name, a, 'first operand');
  const tb = typeof b === 'number' ? null : tensorArg(name, b, 'second operand');
  const dtype = (ta ?? tb)!.dtype;
  if (ta !== null && tb !== null && ta.dtype !== tb.dtype) {
    throw new DtypeError(`${name}: dtypes differ: ${ta.dtype} [${ta.shape}] and ${tb.dtype} [${tb.shape}] (cast one with astype)`);
  }
  if (dtype === 'int32') {
    if (!COMPARISONS.has(op)) throw intArithmetic(name, (ta ?? tb)!.shape);
    const n = ta === null ? a : tb === null ? b : 0;
    if (!Number.isInteger(n) || (n as number) < -(2 ** 31) || (n as number) >= 2 ** 31) {
      throw new DtypeError(
        `${name}: cannot compare an int32 tensor with ${n}, which is not an int32 integer (cast the tensor: x.astype('float32'))`,
      );
    }
  }
  const x = ta ?? filled([], dtype, a as number),
    y = tb ?? filled([], dtype, b as number);
  try {
    return apply(op, [x, y], {});
  } finally {
    if (ta === null) x.dispose();
    if (tb === null) y.dispose();
  }
}

/**
 * Elementwise `a + b`, broadcasting as NumPy; a number operand becomes a scalar of the tensor's dtype.
 * @throws {@link DtypeError} when the two tensors' dtypes differ; {@link ShapeError} when the shapes do not broadcast.
 */
export function add(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('add', 2, arguments.length);
  return binary('add', a, b);
}
/** Elementwise `a - b`, broadcasting as NumPy; numbers are accepted for either operand. */
export function sub(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('sub', 2, arguments.length);
  return binary('sub', a, b);
}
/** Elementwise `a * b`, broadcasting as NumPy; numbers are accepted for either operand. */
export function mul(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('mul', 2, arguments.length);
  return binary('mul', a, b);
}
/** Elementwise `a / b`, broadcasting as NumPy; numbers are accepted for either operand. */
export function div(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('div', 2, arguments.length);
  return binary('div', a, b);
}
/** Elementwise `a ** b`, broadcasting as NumPy; numbers are accepted for either operand. */
export function pow(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('pow', 2, arguments.length);
  return binary('pow', a, b);
}
/** Elementwise larger of `a` and `b`, broadcasting as NumPy. */
export function maximum(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('maximum', 2, arguments.length);
  return binary('maximum', a, b);
}
/** Elementwise smaller of `a` and `b`, broadcasting as NumPy. */
export function minimum(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('minimum', 2, arguments.length);
  return binary('minimum', a, b);
}
/** Elementwise `a > b` as 0/1 in the operands' dtype, broadcasting; not differentiable (like every comparison). */
export function gt(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('gt', 2, arguments.length);
  return binary('gt', a, b);
}
/** Elementwise `a ≥ b` as 0/1 in the operands' dtype, broadcasting; not differentiable. */
export function ge(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('ge', 2, arguments.length);
  return binary('ge', a, b);
}
/** Elementwise `a = b` as 0/1 in the operands' dtype, broadcasting; not differentiable. */
export function eq(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('eq', 2, arguments.length);
  return binary('eq', a, b);
}
/** Elementwise `a ≠ b` as 0/1 in the operands' dtype, broadcasting; not differentiable. */
export function ne(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('ne', 2, arguments.length);
  return binary('ne', a, b);
}
// a < b is b > a, a ≤ b is b ≥ a: no kernels of their own.
/** Elementwise `a < b` as 0/1 in the operands' dtype, broadcasting; not differentiable. */
export function lt(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('lt', 2, arguments.length);
  checkSwapped('lt', a, b);
  return binary('gt', b, a, 'lt');
}
/** Elementwise `a ≤ b` as 0/1 in the operands' dtype, broadcasting; not differentiable. */
export function le(a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 2) throw tooMany('le', 2, arguments.length);
  checkSwapped('le', a, b);
  return binary('ge', b, a, 'le');
}

/** The parameter-free unary primitives (rows in elementwise.ts; a name without a row does not compile). */
type Unary =
  | 'neg'
  | 'exp'
  | 'log'
  | 'sqrt'
  | 'abs'
  | 'square'
  | 'sin'
  | 'cos'
  | 'tanh'
  | 'sigmoid'
  | 'relu'
  | 'softplus'
  | 'sign'
  | 'recip'
  | 'erf'
  | 'geluErf'
  | 'geluErfGrad'
  | 'geluTanh'
  | 'geluTanhGrad';
const unary = (op: Unary) =>
  function (x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany(op, 1, arguments.length);
    return apply(op, [tensorArg(op, x, 'x')], {});
  };

/** Elementwise `-x`. */
export const neg = unary('neg');
/** Elementwise `eˣ`, computed in the wasm kernels (bit-identical across runtimes). */
export const exp = unary('exp');
/** Elementwise natural logarithm. */
export const log = unary('log');
/** Elementwise square root. */
export const sqrt = unary('sqrt');
/** Elementwise absolute value. */
export const abs = unary('abs');
/** Elementwise `x²`. */
export const square = unary('square');
/** Elementwise sine. */
export const sin = unary('sin');
/** Elementwise cosine. */
export const cos = unary('cos');
/** Elementwise hyperbolic tangent. */
export const tanh = unary('tanh');
/** Elementwise logistic sigmoid `1 / (1 + e⁻ˣ)`. */
export const sigmoid = unary('sigmoid');
/** Elementwise `max(x, 0)`. */
export const relu = unary('relu');
/** Elementwise `log(1 + eˣ)`, computed stably for large `|x|`. */
export const softplus = unary('softplus');
export const sign = unary('sign');
export const recip = unary('recip');
/** Elementwise error function (its derivative is `2/√π · e^(−x²)`). */
export const erf = unary('erf');
/** Exact GELU ½x(1 + erf(x/√2)) as one primitive (gelu's `approximate: 'none'`). @internal */
export const geluErf = unary('geluErf');
/** Φ(x) + x·φ(x), the derivative of exact GELU. @internal */
export const geluErfGrad = unary('geluErfGrad');
/** GELU's tanh form x·σ(w), w = 2√(2/π)(x + 0.044715x³), as one primitive (gelu's default in float64). @internal */
export const geluTanh = unary('geluTanh');
/** The derivative of geluTanh. @internal */
export const geluTanhGrad = unary('geluTanhGrad');
/**
 * Elementwise `x > 0 ? x : slope·x`; `slope` defaults to 0.01 (PyTorch's default).
 * @throws {@link ArgumentError} when `slope` is not a finite number.
 */
export function leakyRelu(x: Tensor, slope = 0.01): Tensor {
  if (arguments.length > 2) throw tooMany('leakyRelu', 2, arguments.length);
  tensorArg('leakyRelu', x, 'x');
  if (typeof slope !== 'number' || !Number.isFinite(slope))
    throw new ArgumentError(`leakyRelu: slope must be a finite number, got ${describe(slope)}`);
  return apply('leakyRelu', [x], { slope });
}
/**
 * Elementwise `x` limited to `[lo, hi]`; the gradient is 0 where the value was clipped.
 * @throws {@link ArgumentError} when `lo > hi` or either bound is NaN.
 */
export function clamp(x: Tensor, lo: number, hi: number): Tensor {
  if (arguments.length > 3) throw tooMany('clamp', 3, arguments.length);
  tensorArg('clamp', x, 'x');
  for (const [name, v] of [
    ['lo', lo],
    ['hi', hi],
  ] as const) {
    if (typeof v !== 'number' || Number.isNaN(v))
      throw new ArgumentError(`clamp: ${name} must be a number (not NaN), got ${typeof v === 'number' ? v : typeof v}`);
  }
  if (!(lo <= hi)) throw new ArgumentError(`clamp: lo (${lo}) must not exceed hi (${hi})`);
  return apply('clamp', [tensorArg('clamp', x, 'x')], { lo, hi });
}
/** x > 0 ? a : b (not differentiable). */
export const step = (x: Tensor, a: number, b: number): Tensor => apply('step', [x], { a, b });
/** lo ≤ x ≤ hi ? 1 : 0 (not differentiable). */
export const inside = (x: Tensor, lo: number, hi: number): Tensor => apply('inside', [x], { lo, hi });

/**
 * Sum over `axis` (a number, an array, or all axes when omitted); `keepdims` keeps reduced axes as size 1. A full reduction gives shape `[]`.
 * @throws {@link ShapeError} when an axis is out of range.
 */
export function sum(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  if (arguments.length > 3) throw tooMany('sum', 3, arguments.length);
  tensorArg('sum', x, 'x');
  return apply('sum', [x], { axes: normAxes('sum', x.shape, axis), keepdims: boolArg('sum', 'keepdims', keepdims, false) });
}
/**
 * Maximum over `axis` (all axes when omitted); the gradient goes to the maximal entries. `keepdims` keeps reduced axes as size 1.
 * @throws {@link ShapeError} when an axis is out of range or a reduced axis is empty.
 */
export function max(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  if (arguments.length > 3) throw tooMany('max', 3, arguments.length);
  tensorArg('max', x, 'x');
  const axes = normAxes('max', x.shape, axis);
  boolArg('max', 'keepdims', keepdims, false);
  if (axes.some((a) => x.shape[a] === 0)) throw new ShapeError(`max: cannot reduce an empty axis of shape [${x.shape}]`);
  return apply('max', [x], { axes, keepdims });
}

/**
 * The same data with another shape of the same size; one entry may be -1 (inferred), except
 * beside a 0, where any size would fit.
 * @throws {@link ShapeError} when the sizes do not match or the -1 is ambiguous.
 */
export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  if (arguments.length > 2) throw tooMany('reshape', 2, arguments.length);
  tensorArg('reshape', x, 'x');
  shapeArg('reshape', 'shape', shape);
  const known = shape.filter((d) => d !== -1);
  const bad = shape.filter((d) => d === -1).length > 1 || known.some((d) => !Number.isInteger(d) || d < 0);
  const rest = sizeOf(known);
  if (!bad && shape.includes(-1) && rest === 0) {
    // Another entry is 0, so any size fits the -1 (PyTorch refuses this too).
    throw new ShapeError(`reshape: cannot reshape [${x.shape}] (${x.size} elements) to [${shape}]: the -1 is ambiguous beside a 0`);
  }
  const fill = shape.includes(-1) ? x.size / rest : 1;
  if (bad || !Number.isInteger(fill) || (shape.includes(-1) ? rest * fill : rest) !== x.size) {
    throw new ShapeError(`reshape: cannot reshape [${x.shape}] (${x.size} elements) to [${shape}]`);
  }
  return apply('reshape', [x], { shape: shape.map((d) => (d === -1 ? fill : d)) });
}

/**
 * Permutes the axes by `perm` (default: reversed, so a matrix is transposed).
 * @throws {@link ShapeError} when `perm` is not a permutation of the axes.
 */
export function transpose(x: Tensor, perm?: readonly number[]): Tensor {
  if (arguments.length > 2) throw tooMany('transpose', 2, arguments.length);
  tensorArg('transpose', x, 'x');
  const r = x.shape.length;
  if (perm !== undefined) shapeArg('transpose', 'perm', perm);
  const p = perm === undefined ? x.shape.map((_, i) => r - 1 - i) : perm.map((a) => normAxis('transpose', x.shape, a));
  if (p.length !== r || new Set(p).size !== r) {
    throw new ShapeError(`transpose: perm [${perm}] is not a permutation of the ${r} axes of [${x.shape}]`);
  }
  return apply('transpose', [x], { perm: p });
}

/**
 * Broadcasts `x` to `shape` by NumPy's rules (the gradient sums back over the broadcast axes).
 * @throws {@link ShapeError} when `x` does not broadcast to `shape`.
 */
export function broadcastTo(x: Tensor, shape: readonly number[]): Tensor {
  if (arguments.length > 2) throw tooMany('broadcastTo', 2, arguments.length);
  tensorArg('broadcastTo', x, 'x');
  shapeArg('broadcastTo', 'shape', shape);
  if (shape.some((d) => !Number.isInteger(d) || d < 0))
    throw new ShapeError(`broadcastTo: shape must hold non-negative integers, got [${shape}]`);
  const ok = shape.length >= x.shape.length && broadcastShapes('broadcastTo', x.shape, shape).every((d, i) => d === shape[i]);
  if (!ok) throw new ShapeError(`broadcastTo: cannot broadcast [${x.shape}] to [${shape}]`);
  return apply('broadcastTo', [x], { shape: [...shape] });
}

/**
 * The block of `x` starting at `begin` with extent `size` (one entry per axis; -1 means "to the end").
 * @throws {@link ShapeError} when the block does not fit in `x`.
 */
export function slice(x: Tensor, begin: readonly number[], size: readonly number[]): Tensor {
  if (arguments.length > 3) throw tooMany('slice', 3, arguments.length);
  tensorArg('slice', x, 'x');
  shapeArg('slice', 'begin', begin);
  shapeArg('slice', 'size', size);
  const r = x.shape.length;
  const sz = size.map((s, i) => (s === -1 ? x.shape[i] - begin[i] : s));
  const bad =
    begin.length !== r ||
    size.length !== r ||
    begin.some((b, i) => !Number.isInteger(b) || b < 0 || !Number.isInteger(sz[i]) || sz[i] < 0 || b + sz[i] > x.shape[i]);
  if (bad) throw new ShapeError(`slice: begin [${begin}] and size [${size}] do not fit in shape [${x.shape}]`);
  return apply('slice', [x], { begin: [...begin], size: sz });
}

/** Zeros of `shape` with x written at `begin` (the transpose of slice). */
export const pad = (x: Tensor, begin: readonly number[], shape: readonly number[]): Tensor => apply('pad', [x], { begin, shape });

/**
 * Joins tensors of one dtype along `axis` (default 0); the other axes must match.
 * @throws {@link ShapeError} or {@link DtypeError} when the tensors do not fit together.
 */
export function concat(xs: readonly Tensor[], axis = 0): Tensor {
  if (arguments.length > 2) throw tooMany('concat', 2, arguments.length);
  if (!Array.isArray(xs as unknown) || xs.length === 0)
    throw new ArgumentError(`concat: expected a non-empty array of tensors, got ${describe(xs)}`);
  xs.forEach((x, i) => tensorArg('concat', x, `tensor ${i}`));
  const first = xs[0];
  const a = normAxis('concat', first.shape, axis);
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (x.dtype !== first.dtype) throw new DtypeError(`concat: tensor ${i} is ${x.dtype}, tensor 0 is ${first.dtype}`);
    if (x.shape.length !== first.shape.length || x.shape.some((d, j) => j !== a && d !== first.shape[j])) {
      throw new ShapeError(`concat: tensor ${i} has shape [${x.shape}], incompatible with [${first.shape}] along axis ${a}`);
    }
  }
  return apply('concat', xs, { axis: a });
}

/**
 * Picks the entries `indices` along `axis` (default 0), as `x[indices]`; the result's `axis` has `indices.length` entries.
 * @throws {@link ShapeError} when an index is out of range.
 */
export function gather(x: Tensor, indices: Int32Array | readonly number[] | Tensor, axis = 0): Tensor {
  if (arguments.length > 3) throw tooMany('gather', 3, arguments.length);
  tensorArg('gather', x, 'x');
  const a = normAxis('gather', x.shape, axis);
  if (indices instanceof Tensor) return gatherTensor(x, indices, a);
  if (!(indices instanceof Int32Array) && !Array.isArray(indices)) {
    throw new ArgumentError(`gather: indices must be an Int32Array, an array of integers or an int32 tensor, got ${typeof indices}`);
  }
  const checked = (ix: ArrayLike<number>): Int32Array => {
    for (let i = 0; i < ix.length; i++) {
      const v = ix[i];
      // A nested array or a fraction is not an index "out of range" ([[1], [0]] read "index 1 … is
      // out of range [0, 2)"): say what it is, and where shaped indices go.
      if (!Number.isInteger(v)) {
        throw new ArgumentError(
          `gather: indices[${i}] is ${describe(v)}, not an integer (indices are a flat array of integers; for indices of another shape pass an int32 tensor)`,
        );
      }
      if (v < 0 || v >= x.shape[a]) {
        throw new ShapeError(`gather: index ${v} at position ${i} is out of range [0, ${x.shape[a]}) for axis ${a} of [${x.shape}]`);
      }
    }
    return Int32Array.from(ix);
  };
  const idx = checked(indices);
  derive(idx, indices, checked); // a compiled step checks each call's new indices the same way
  return apply('gather', [x], { indices: idx, axis: a });
}

/**
 * gather with an int32 tensor of indices (any shape): the result has x's shape with `axis`
 * replaced by the indices' shape, as torch.index_select followed by a reshape (or x[idx] for axis 0).
 */
function gatherTensor(x: Tensor, indices: Tensor, a: number): Tensor {
  indices.check('gather');
  if (indices.dtype !== 'int32') {
    throw new DtypeError(
      `gather: indices are a ${indices.dtype} tensor [${indices.shape}]; index tensors are int32 (indices.astype('int32'))`,
    );
  }
  if (isBatched(indices)) return take(x, indices, { axis: a, lead: 0, op: 'gather' }); // mapped by vmap: read by the kernel's launch
  const flat = indices.toArray() as Int32Array; // read in JS to range-check; compile() reads it again on every replay
  const shape = [...x.shape.slice(0, a), ...indices.shape, ...x.shape.slice(a + 1)];
  return composite(() => reshape(gather(x, flat, a), shape));
}

/** The transpose of gather: g scattered (and summed) into zeros of `shape`. */
export const scatterAdd = (g: Tensor, indices: Int32Array, axis: number, shape: readonly number[]): Tensor =>
  apply('scatterAdd', [g], { indices, axis, shape });

/**
 * A copy of `x` converted to `dtype`; the gradient is cast back.
 * @throws {@link DtypeError} when `dtype` is not a supported dtype.
 */
export function astype(x: Tensor, dtype: DType): Tensor {
  if (arguments.length > 2) throw tooMany('astype', 2, arguments.length);
  tensorArg('astype', x, 'x');
  return cast(x, checkAnyDtype('astype', dtype));
}
export const cast = (x: Tensor, dtype: DType): Tensor => apply('cast', [x], { dtype, from: x.dtype });

/** op(A)·op(B) on rank ≥ 2 operands (batch axes broadcast). */
export const matmulT = (a: Tensor, b: Tensor, ta: boolean, tb: boolean): Tensor => apply('matmul', [a, b], { ta, tb });
/** x·Wᵀ whose backward pass sends g·B (not g·W) to x: feedback alignment (src/nn/feedback.ts). */
export const linearFA = (x: Tensor, w: Tensor, b: Tensor): Tensor => apply('linearFA', [x, w, b], {});

/**
 * Matrix product: 1-D, 2-D and batched operands (leading axes broadcast), as NumPy's `matmul`; `[..., n, k] · [..., k, m] → [..., n, m]`.
 * @throws {@link ShapeError} when the inner dimensions differ; {@link DtypeError} when the dtypes differ.
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  if (arguments.length > 2) throw tooMany('matmul', 2, arguments.length);
  tensorArg('matmul', a, 'first operand');
  tensorArg('matmul', b, 'second operand');
  if (a.dtype !== b.dtype) throw new DtypeError(`matmul: dtypes differ: ${a.dtype} [${a.shape}] and ${b.dtype} [${b.shape}]`);
  if (a.shape.length === 0 || b.shape.length === 0)
    throw new ShapeError(`matmul: operands must be at least 1-D, got [${a.shape}] x [${b.shape}]`);
  if (a.shape.length >= 2 && b.shape.length >= 2) return matmul2(a, b);
  // 1-D operands: a vector is a row (left) or a column (right), removed again afterwards.
  return composite(() => {
    const a2 = a.shape.length === 1 ? reshape(a, [1, a.shape[0]]) : a;
    const b2 = b.shape.length === 1 ? reshape(b, [b.shape[0], 1]) : b;
    const y = matmul2(a2, b2);
    const shape = y.shape.slice(0, -2);
    if (a.shape.length > 1) shape.push(y.shape[y.shape.length - 2]);
    if (b.shape.length > 1) shape.push(y.shape[y.shape.length - 1]);
    return reshape(y, shape);
  });
}

/** A·B of rank ≥ 2 operands; an unfilled lazy transpose operand runs as its source with the GEMM's transpose flag, uncopied. */
function matmul2(a: Tensor, b: Tensor): Tensor {
  matmulDims(a.shape, b.shape, { ta: false, tb: false });
  const sa = transposedSource(a),
    sb = transposedSource(b);
  return matmulT(sa ?? a, sb ?? b, sa !== null, sb !== null);
}

/** A tensor that no longer records: gradients stop here (JAX's stop_gradient). */
export function detach(x: Tensor): Tensor {
  if (arguments.length > 1) throw tooMany('detach', 1, arguments.length);
  return detached(tensorArg('detach', x, 'x'));
}
/** The same values with no gradient flowing back (JAX's `stop_gradient`; same as `x.detach()`). */
export function stopGradient(x: Tensor): Tensor {
  if (arguments.length > 1) throw tooMany('stopGradient', 1, arguments.length);
  return detached(tensorArg('stopGradient', x, 'x'));
}
