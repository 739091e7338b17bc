// Composite ops: plain compositions of primitives, with no rules of their own (their
// gradients, JVPs and Hessians come from the primitives). Each runs in a scope so its
// temporaries are freed at once; the graph keeps only what primitives saved.
import { ShapeError, ArgumentError, DtypeError } from '../errors.js';
import { Tensor, isTensor } from './tensor.js';
import { runScoped } from '../tensor/scope.js';
import { filled, sizeOf } from './launch.js';
import { apply } from './apply.js';
import { derive } from '../wasm/hooks.js';
import {
  add, sub, mul, div, exp, log, square, tanh, sum, max, reshape, transpose, detach, normAxes, normAxis, tensorArg,
  type Axis,
} from './api.js';
import { describe, boolArg, optionsArg } from '../args.js';

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

export function mean(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  tensorArg('mean', x, 'x');
  const axes = normAxes('mean', x.shape, axis);
  boolArg('mean', 'keepdims', keepdims, false);
  const n = sizeOf(axes.map((a) => x.shape[a]));
  return composite(() => div(sum(x, axes, keepdims), n));
}

/** log Σ exp(x) along axis, shifted by the (constant) max so exp cannot overflow. */
export function logsumexp(x: Tensor, axis?: Axis, keepdims = false): Tensor {
  tensorArg('logsumexp', x, 'x');
  const axes = normAxes('logsumexp', x.shape, axis);
  boolArg('logsumexp', 'keepdims', keepdims, false);
  return composite(() => {
    const m = detach(max(x, axes, true));
    const r = add(log(sum(exp(sub(x, m)), axes, true)), m);
    return keepdims ? r : reshape(r, r.shape.filter((_, i) => !axes.includes(i)));
  });
}

/** Moves `axis` last, applies f, and moves it back (the softmax kernels work on the last axis). */
function alongLast(x: Tensor, axis: number, f: (x: Tensor) => Tensor): Tensor {
  const r = x.shape.length;
  if (axis === r - 1) return f(x);
  const perm = x.shape.map((_, i) => i).filter((i) => i !== axis).concat(axis);
  const inv = perm.map((_, i) => perm.indexOf(i));
  return composite(() => transpose(f(transpose(x, perm)), inv));
}

export function softmax(x: Tensor, axis = -1): Tensor {
  tensorArg('softmax', x, 'x');
  if (x.shape.length === 0) throw new ShapeError('softmax: input must be at least 1-D, got a scalar');
  return alongLast(x, normAxis('softmax', x.shape, axis), (v) => apply('softmax', [v], {}));
}

export function logSoftmax(x: Tensor, axis = -1): Tensor {
  tensorArg('logSoftmax', x, 'x');
  if (x.shape.length === 0) throw new ShapeError('logSoftmax: input must be at least 1-D, got a scalar');
  const a = normAxis('logSoftmax', x.shape, axis);
  return composite(() => sub(x, logsumexp(x, a, true)));
}

type Reduction = 'mean' | 'sum' | 'none';
function reduce(v: Tensor, reduction: Reduction): Tensor {
  if (reduction === 'mean') return div(sum(v), Math.max(1, v.size));
  return reduction === 'sum' ? sum(v) : v;
}

/** Checked before any op runs, so a bad option cannot leave half a computation behind. */
function checkReduction(op: string, reduction: unknown): void {
  if (reduction !== 'mean' && reduction !== 'sum' && reduction !== 'none') {
    throw new ArgumentError(`${op}: reduction must be 'mean', 'sum' or 'none', got ${describe(reduction)}`);
  }
}

/** The labels as an Int32Array, each checked to be an integer in [0, c). */
function checkedLabels(labels: Int32Array | readonly number[], c: number): Int32Array {
  const flat = new Int32Array(labels.length);
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    if (!Number.isInteger(l) || l < 0 || l >= c) throw new ArgumentError(`crossEntropy: label ${l} at position ${i} is outside [0, ${c})`);
    flat[i] = l;
  }
  return flat;
}

/** Softmax cross-entropy of logits [N, C] against integer labels in [0, C). */
export function crossEntropy(logits: Tensor, labels: Int32Array | readonly number[], { reduction = 'mean' as Reduction } = {}): Tensor {
  tensorArg('crossEntropy', logits, 'logits');
  checkReduction('crossEntropy', reduction);
  if (!(labels instanceof Int32Array) && !Array.isArray(labels)) {
    throw new ArgumentError(`crossEntropy: labels must be an Int32Array or an array of integers, got ${typeof labels}`);
  }
  if (logits.shape.length !== 2) throw new ShapeError(`crossEntropy: logits must be [N, C], got [${logits.shape}]`);
  const [n, c] = logits.shape;
  if (labels.length !== n) throw new ShapeError(`crossEntropy: ${labels.length} labels for ${n} rows of logits [${logits.shape}]`);
  const flat = checkedLabels(labels, c);
  derive(flat, labels, (ls) => checkedLabels(ls, c)); // a compiled step checks each call's new labels the same way
  // Per-row log Σ e^x − x[label] and its VJP (softmax − onehot)·g are one kernel each (nn.ts).
  return composite(() => reduce(apply('softmaxCrossEntropy', [logits], { labels: flat }), reduction));
}

export function mseLoss(pred: Tensor, target: Tensor, options?: { reduction?: Reduction }): Tensor {
  const { reduction = 'mean' } = optionsArg('mseLoss', options, ['reduction']);
  tensorArg('mseLoss', pred, 'pred');
  tensorArg('mseLoss', target, 'target');
  checkReduction('mseLoss', reduction);
  if (pred.shape.length !== target.shape.length || pred.shape.some((d, i) => d !== target.shape[i])) {
    throw new ShapeError(`mseLoss: pred [${pred.shape}] and target [${target.shape}] must have the same shape`);
  }
  if (pred.dtype !== target.dtype) throw new DtypeError(`mseLoss: dtypes differ: ${pred.dtype} and ${target.dtype}`);
  return composite(() => reduce(square(sub(pred, target)), reduction));
}

/** (x − mean) / √(var + eps) over the last axis, then · weight + bias (biased variance, as PyTorch). */
export function layerNorm(x: Tensor, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  tensorArg('layerNorm', x, 'x');
  if (weight != null) tensorArg('layerNorm', weight, 'weight');
  if (bias != null) tensorArg('layerNorm', bias, 'bias');
  if (typeof eps !== 'number' || !(eps > 0)) throw new ArgumentError(`layerNorm: eps must be a positive number, got ${describe(eps)}`);
  if (x.shape.length === 0) throw new ShapeError('layerNorm: input must be at least 1-D, got a scalar');
  const d = x.shape[x.shape.length - 1];
  for (const [name, t] of [['weight', weight], ['bias', bias]] as const) {
    if (t && (t.shape.length !== 1 || t.shape[0] !== d)) throw new ShapeError(`layerNorm: ${name} must be [${d}] for input [${x.shape}], got [${t.shape}]`);
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

/** GELU, tanh approximation: ½x(1 + tanh(√(2/π)(x + 0.044715x³))). */
export function gelu(x: Tensor): Tensor {
  tensorArg('gelu', x, 'x');
  return composite(() => {
    const inner = mul(add(x, mul(mul(square(x), x), 0.044715)), SQRT_2_OVER_PI);
    return mul(mul(x, 0.5), add(tanh(inner), 1));
  });
}
