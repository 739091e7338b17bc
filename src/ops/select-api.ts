// Selection under PyTorch's names: where, maskedFill, tril, triu, argmax. Argument checking
// here, one primitive each (src/ops/select.ts).
import { ShapeError, ArgumentError, DtypeError } from '../errors.js';
import { Tensor, type TensorLike } from './tensor.js';
import type { DType } from '../tensor/dtype.js';
import { apply } from './apply.js';
import { broadcastShapes, filled } from './launch.js';
import { composite } from './composite.js';
import { ne, cast, reshape, tensorArg, normAxis } from './api.js';
import { describe, tooMany, boolArg } from '../args.js';

/** A number operand as a scalar of `dtype` (an int32 one must be an integer). */
function scalarOf(op: string, name: string, v: unknown, dtype: DType): Tensor {
  if (typeof v !== 'number') throw new ArgumentError(`${op}: ${name} must be a Tensor or a number, got ${v === null ? 'null' : typeof v}`);
  if (dtype === 'int32' && (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31)) {
    throw new DtypeError(`${op}: ${name} ${v} is not an int32 integer, and the other operand is int32 (cast it: x.astype('float32'))`);
  }
  return filled([], dtype, v);
}

/**
 * cond ≠ 0 ? a : b elementwise, all three broadcast together (torch.where). cond may have any
 * dtype (a 0/1 mask from a comparison, an int32 tensor); a and b share one dtype, and a number
 * takes the other's (float32 when both are numbers). Differentiable in a and b.
 */
export function where(cond: Tensor, a: TensorLike, b: TensorLike): Tensor {
  if (arguments.length > 3) throw tooMany('where', 3, arguments.length);
  tensorArg('where', cond, 'cond');
  const ta = a instanceof Tensor ? tensorArg('where', a, 'a') : null;
  const tb = b instanceof Tensor ? tensorArg('where', b, 'b') : null;
  if (ta !== null && tb !== null && ta.dtype !== tb.dtype) {
    throw new DtypeError(`where: a is ${ta.dtype} [${ta.shape}] but b is ${tb.dtype} [${tb.shape}] (cast one with astype)`);
  }
  const dtype = (ta ?? tb)?.dtype ?? (cond.dtype === 'int32' ? 'float32' : cond.dtype);
  const shapeOf = (t: Tensor | null) => (t === null ? [] : t.shape);
  try {
    broadcastShapes('where', broadcastShapes('where', cond.shape, shapeOf(ta)), shapeOf(tb));
  } catch {
    throw new ShapeError(`where: cond [${cond.shape}], a [${shapeOf(ta)}] and b [${shapeOf(tb)}] cannot be broadcast together`);
  }
  return composite(() => {
    // The kernel reads the condition in the values' dtype: a 0/1 mask of it, exact in any dtype.
    const c = cond.dtype === dtype ? cond : cast(ne(cond, 0), dtype);
    const x = ta ?? scalarOf('where', 'a', a, dtype),
      y = tb ?? scalarOf('where', 'b', b, dtype);
    return apply('where', [c, x, y], {});
  });
}

/** x with `value` wherever mask ≠ 0 (torch.masked_fill); the mask broadcasts to x's shape. Differentiable in x. */
export function maskedFill(x: Tensor, mask: Tensor, value: number): Tensor {
  if (arguments.length > 3) throw tooMany('maskedFill', 3, arguments.length);
  tensorArg('maskedFill', x, 'x');
  tensorArg('maskedFill', mask, 'mask');
  let ok = mask.shape.length <= x.shape.length;
  try {
    ok &&= broadcastShapes('maskedFill', mask.shape, x.shape).every((d, i) => d === x.shape[i]);
  } catch {
    ok = false;
  }
  if (!ok) throw new ShapeError(`maskedFill: mask [${mask.shape}] does not broadcast to x [${x.shape}]`);
  if (typeof value !== 'number') throw new ArgumentError(`maskedFill: value must be a number, got ${typeof value}`);
  return where(mask, value, x);
}

function tri(op: 'tril' | 'triu', x: Tensor, k: number): Tensor {
  tensorArg(op, x, 'x');
  if (x.shape.length < 2) throw new ShapeError(`${op}: x must be at least 2-D (a matrix or a batch of them), got [${x.shape}]`);
  if (!Number.isInteger(k)) throw new ArgumentError(`${op}: k must be an integer, got ${describe(k)}`);
  return apply('tri', [x], { k, upper: op === 'triu' });
}
/** The lower triangle of each trailing matrix: x[..., i, j] where j − i ≤ k, else 0 (torch.tril). */
export function tril(x: Tensor, k = 0): Tensor {
  if (arguments.length > 2) throw tooMany('tril', 2, arguments.length);
  return tri('tril', x, k);
}
/** The upper triangle of each trailing matrix: x[..., i, j] where j − i ≥ k, else 0 (torch.triu). */
export function triu(x: Tensor, k = 0): Tensor {
  if (arguments.length > 2) throw tooMany('triu', 2, arguments.length);
  return tri('triu', x, k);
}

/**
 * Index of the largest value along `axis` as an int32 tensor (the first one on ties; NaN counts
 * as largest, as PyTorch). Without an axis, the index into the flattened tensor.
 */
export function argmax(x: Tensor, axis?: number, keepdims = false): Tensor {
  if (arguments.length > 3) throw tooMany('argmax', 3, arguments.length);
  tensorArg('argmax', x, 'x');
  keepdims = boolArg('argmax', 'keepdims', keepdims, false);
  if (axis === undefined) {
    if (x.size === 0) throw new ShapeError(`argmax: cannot take the argmax of an empty tensor [${x.shape}]`);
    return composite(() => {
      const i = apply('argmax', [reshape(x, [x.size])], { axis: 0, keepdims: false });
      return keepdims
        ? reshape(
            i,
            x.shape.map(() => 1),
          )
        : i;
    });
  }
  if (x.shape.length === 0) throw new ShapeError('argmax: x is a scalar; it has no axis to search (omit the axis)');
  const a = normAxis('argmax', x.shape, axis);
  if (x.shape[a] === 0) throw new ShapeError(`argmax: axis ${axis} of [${x.shape}] is empty`);
  return apply('argmax', [x], { axis: a, keepdims });
}
