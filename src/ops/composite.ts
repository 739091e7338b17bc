// Composite ops: plain compositions of primitives, with no rules of their own (their
// gradients, JVPs and Hessians come from the primitives). Each runs in a scope so its
// temporaries are freed at once; the graph keeps only what primitives saved.
import { ShapeError, ArgumentError, DtypeError } from '../errors.js';
import { type Tensor, isTensor } from './tensor.js';
import { runScoped } from '../tensor/scope.js';
import { filled, sizeOf } from './launch.js';
import { apply } from './apply.js';
import {
  add,
  sub,
  mul,
  div,
  exp,
  log,
  abs,
  lt,
  eq,
  square,
  tanh,
  erf,
  geluErf,
  geluTanh,
  sum,
  max,
  reshape,
  transpose,
  detach,
  normAxes,
  normAxis,
  tensorArg,
  floatArg,
  type Axis,
} from './api.js';
import { describe, boolArg, optionsArg, tooMany } from '../args.js';

/** Runs fn and frees every tensor it created except its result. */
export function composite<T>(fn: () => T): T {
  return runScoped(fn, isTensor);
}

export const zerosLike = (x: Tensor): Tensor => filled(x.shape, x.dtype, 0);

/** Sums g over the axes along which `shape` was broadcast to g's shape (the VJP of broadcasting). */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.size === sizeOf(shape) && g.shape.length <= shape.length) return reshape(g, shape);
  const lead = g.shape.length - shape.length;
  const axes = g.shape.map((_, i) => i).filter((i) => i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1));
  return composite(() => reshape(sum(g, axes, true), shape));
}

/**
 * Mean over `axis` (a number, an array, or all axes when omitted); `keepdims` keeps reduced axes as size 1. A full reduction gives shape `[]`.
 * @throws {@link ShapeError} when an axis is out of range.
 */
export function mean(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  if (arguments.length > 3) throw tooMany('mean', 3, arguments.length);
  floatArg('mean', x, 'x');
  const axes = normAxes('mean', x.shape, axis);
  boolArg('mean', 'keepdims', keepdims, false);
  const n = sizeOf(axes.map((a) => x.shape[a]));
  return composite(() => div(sum(x, axes, keepdims), n));
}

/**
 * log Σ exp(x) along axis, shifted by the (constant) max so exp cannot overflow. A row whose max
 * is ±∞ is shifted by 0 instead (x − m would be ∞ − ∞), so it gives −∞ when every entry is −∞
 * and ∞ when one is ∞, as log Σ exp does; an empty axis gives −∞ (the log of an empty sum).
 */
export function logsumexp(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  if (arguments.length > 3) throw tooMany('logsumexp', 3, arguments.length);
  floatArg('logsumexp', x, 'x');
  const axes = normAxes('logsumexp', x.shape, axis);
  boolArg('logsumexp', 'keepdims', keepdims, false);
  if (axes.some((a) => x.shape[a] === 0)) {
    return filled(
      x.shape.flatMap((d, i) => (!axes.includes(i) ? [d] : keepdims ? [1] : [])),
      x.dtype,
      -Infinity,
    );
  }
  return composite(() => {
    const m = finiteOrZero(detach(max(x, axes, true)));
    const r = add(log(sum(exp(sub(x, m)), axes, true)), m);
    return keepdims
      ? r
      : reshape(
          r,
          r.shape.filter((_, i) => !axes.includes(i)),
        );
  });
}

/** eps of a normalisation: finite and ≥ 0 (0 is PyTorch's too: a constant row then gives NaN, 0/0). */
export function epsArg(op: string, eps: unknown): void {
  if (typeof eps !== 'number' || !(eps >= 0 && eps < Number.POSITIVE_INFINITY)) {
    throw new ArgumentError(`${op}: eps must be a finite number ≥ 0, got ${describe(eps)}`);
  }
}

/** m where it is finite, 0 where it is ±∞ or NaN (a NaN row stays NaN through x − 0). */
function finiteOrZero(m: Tensor): Tensor {
  return apply('where', [lt(abs(m), Infinity), m, filled([], m.dtype, 0)], {});
}

/** Moves `axis` last, applies f, and moves it back (the softmax kernels work on the last axis). */
function alongLast(x: Tensor, axis: number, f: (x: Tensor) => Tensor): Tensor {
  const r = x.shape.length;
  if (axis === r - 1) return f(x);
  const perm = x.shape
    .map((_, i) => i)
    .filter((i) => i !== axis)
    .concat(axis);
  const inv = perm.map((_, i) => perm.indexOf(i));
  return composite(() => transpose(f(transpose(x, perm)), inv));
}

/**
 * `exp(x) / Σ exp(x)` along `axis` (default -1, the last), computed stably; entries along `axis` sum to 1.
 * @throws {@link ShapeError} when `axis` is out of range.
 */
export function softmax(x: Tensor, axis = -1): Tensor {
  if (arguments.length > 2) throw tooMany('softmax', 2, arguments.length);
  tensorArg('softmax', x, 'x');
  if (x.shape.length === 0) throw new ShapeError('softmax: input must be at least 1-D, got a scalar');
  return alongLast(x, normAxis('softmax', x.shape, axis), (v) => apply('softmax', [v], {}));
}

/**
 * `x − logsumexp(x)` along `axis` (default -1): the log of {@link softmax}, without its underflow.
 * @throws {@link ShapeError} when `axis` is out of range.
 */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  if (arguments.length > 2) throw tooMany('logSoftmax', 2, arguments.length);
  floatArg('logSoftmax', x, 'x');
  if (x.shape.length === 0) throw new ShapeError('logSoftmax: input must be at least 1-D, got a scalar');
  const a = normAxis('logSoftmax', x.shape, axis);
  if (x.shape[a] === 0) return filled(x.shape, x.dtype, 0);
  // (x − m) − log Σ exp(x − m), not x − logsumexp(x): the shift is exact where it matters, so
  // large logits (1e4) keep their small differences instead of rounding at the size of x.
  return composite(() => {
    const m = detach(max(x, a, true));
    // A +∞ logit makes its row NaN, as PyTorch (and softmax); a −∞ max shifts by 0.
    const shift = apply('where', [eq(m, Infinity), filled([], m.dtype, Number.NaN), finiteOrZero(m)], {});
    const s = sub(x, shift);
    return sub(s, log(sum(exp(s), a, true)));
  });
}

/** How a loss combines its per-element values: `'mean'` (default), `'sum'`, or `'none'` (unreduced). */
export type Reduction = 'mean' | 'sum' | 'none';
function reduce(v: Tensor, reduction: Reduction): Tensor {
  if (reduction === 'mean') return div(sum(v), v.size); // empty: 0/0 = NaN, as PyTorch
  return reduction === 'sum' ? sum(v) : v;
}

/** Checked before any op runs, so a bad option cannot leave half a computation behind. */
function checkReduction(op: string, reduction: unknown): void {
  if (reduction !== 'mean' && reduction !== 'sum' && reduction !== 'none') {
    throw new ArgumentError(`${op}: reduction must be 'mean', 'sum' or 'none', got ${describe(reduction)}`);
  }
}

/**
 * Mean squared error `(pred − target)²`, reduced by `reduction` (`'mean'` default, `'sum'`, `'none'`); `pred` and `target` have the same shape.
 * @throws {@link ShapeError} when the shapes differ; {@link ArgumentError} for an unknown reduction.
 */
export function mseLoss(pred: Tensor, target: Tensor, options?: { reduction?: Reduction }): Tensor {
  if (arguments.length > 3) throw tooMany('mseLoss', 3, arguments.length);
  const { reduction = 'mean' } = optionsArg('mseLoss', options, ['reduction']);
  floatArg('mseLoss', pred, 'pred');
  floatArg('mseLoss', target, 'target');
  checkReduction('mseLoss', reduction);
  if (pred.shape.length !== target.shape.length || pred.shape.some((d, i) => d !== target.shape[i])) {
    throw new ShapeError(`mseLoss: pred [${pred.shape}] and target [${target.shape}] must have the same shape`);
  }
  if (pred.dtype !== target.dtype) throw new DtypeError(`mseLoss: dtypes differ: ${pred.dtype} and ${target.dtype}`);
  return composite(() => reduce(square(sub(pred, target)), reduction));
}

/** (x − mean) / √(var + eps) over the last axis, then · weight + bias (biased variance, as PyTorch). */
export function layerNorm(x: Tensor, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  if (arguments.length > 4) throw tooMany('layerNorm', 4, arguments.length);
  floatArg('layerNorm', x, 'x');
  if (weight != null) floatArg('layerNorm', weight, 'weight');
  if (bias != null) floatArg('layerNorm', bias, 'bias');
  epsArg('layerNorm', eps);
  if (x.shape.length === 0) throw new ShapeError('layerNorm: input must be at least 1-D, got a scalar');
  const d = x.shape[x.shape.length - 1];
  for (const [name, t] of [
    ['weight', weight],
    ['bias', bias],
  ] as const) {
    if (t && (t.shape.length !== 1 || t.shape[0] !== d))
      throw new ShapeError(`layerNorm: ${name} must be [${d}] for input [${x.shape}], got [${t.shape}]`);
    if (t && t.dtype !== x.dtype) throw new DtypeError(`layerNorm: ${name} is ${t.dtype} but the input is ${x.dtype}`);
  }
  return composite(() => {
    let y = apply('layerNorm', [x], { eps }); // one kernel per row each way (nn.ts)
    if (weight) y = mul(y, weight);
    if (bias) y = add(y, bias);
    return y;
  });
}

const SQRT_2_OVER_PI = 0.7978845608028654;

/** Options for {@link gelu} and `nn.GELU`. */
export interface GeluOptions {
  /** 'tanh' (default): ½x(1 + tanh(√(2/π)(x + 0.044715x³))); 'none': the exact ½x(1 + erf(x/√2)), as PyTorch. */
  approximate?: 'tanh' | 'none';
}

/** GELU, by default the tanh approximation; `{ approximate: 'none' }` is the exact erf form. */
export function gelu(x: Tensor, options: GeluOptions = {}): Tensor {
  if (arguments.length > 2) throw tooMany('gelu', 2, arguments.length);
  floatArg('gelu', x, 'x');
  const approximate = geluApproximation('gelu', options);
  return composite(() => {
    if (approximate === 'none') return geluErf(x); // one kernel each way (float32: the composite's forward bits)
    // float64: one kernel each way, x·σ(2u) with 2u in double-double (the composite's 1 + tanh
    // cancels for x < −1.4 and rounds to 0 below −7.9); float32 keeps the composite's bits.
    if (x.dtype === 'float64') return geluTanh(x);
    const inner = mul(add(x, mul(mul(square(x), x), 0.044715)), SQRT_2_OVER_PI);
    return mul(mul(x, 0.5), add(tanh(inner), 1));
  });
}

/** The checked `approximate` option of gelu and nn.GELU. */
export function geluApproximation(op: string, options: GeluOptions): 'tanh' | 'none' {
  if (options === null || typeof options !== 'object')
    throw new ArgumentError(
      `${op}: options must be an object such as { approximate: 'none' }, got ${options === null ? 'null' : typeof options}`,
    );
  optionsArg(op, options, ['approximate']);
  const a = options.approximate ?? 'tanh';
  if (a !== 'tanh' && a !== 'none') throw new ArgumentError(`${op}: approximate must be 'tanh' or 'none', got ${describe(a)}`);
  return a;
}
