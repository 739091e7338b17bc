// Softmax cross-entropy over the last axis of logits [..., C], as torch.nn.functional.cross_entropy
// with the class axis last: labels are class indices [...] (Int32Array, numbers, an int32
// tensor) or class probabilities [..., C] (a float tensor). ignoreIndex drops rows from the loss
// and from the mean's count; labelSmoothing ε mixes in the uniform distribution:
//   indices:        loss = (1 − ε)·(lse − x[label]) + ε·(lse − mean_c x)
//   probabilities:  loss = −Σ_c ((1 − ε)·p_c + ε/C)·log softmax(x)_c
// The per-row lse − x[label] and its VJP are the fused softmaxCrossEntropy kernels (fused.ts).
import { ShapeError, ArgumentError, DtypeError } from '../errors.js';
import { Tensor } from './tensor.js';
import { fromValues } from './create.js';
import { apply } from './apply.js';
import { derive } from '../wasm/hooks.js';
import { sizeOf } from './launch.js';
import { composite, logsumexp, mean, logSoftmax } from './composite.js';
import { add, sub, mul, div, neg, sum, reshape, floatArg, ne, cast } from './api.js';
import { isBatched } from './batch.js';
import { take } from './take.js';
import { where } from './select-api.js';

import type { Reduction } from './composite.js';
import { tooMany, optionsArg, describe } from '../args.js';
/** Options for {@link crossEntropy} (PyTorch's arguments in camelCase). */
export interface CrossEntropyOptions {
  /** `'mean'` (default: over the counted rows), `'sum'`, or `'none'` (one loss per row). */
  reduction?: Reduction;
  /** Rows whose label is this value add nothing to the loss and are not counted by 'mean'. */
  ignoreIndex?: number;
  /** ε in [0, 1]: the target becomes (1 − ε)·target + ε/C. */
  labelSmoothing?: number;
}
/**
 * The targets of {@link crossEntropy}: class indices `[...]` (an `Int32Array`, numbers, or an int32
 * tensor), or class probabilities `[..., C]` (nested arrays or a float tensor), as PyTorch.
 */
export type CrossEntropyLabels = Int32Array | readonly number[] | readonly (readonly number[])[] | Tensor;

const same = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

function checkOptions(o: CrossEntropyOptions): { reduction: Reduction; ignore: number | undefined; eps: number } {
  if (o === null || typeof o !== 'object')
    throw new ArgumentError(`crossEntropy: options must be an object, got ${o === null ? 'null' : typeof o}`);
  optionsArg('crossEntropy', o, ['reduction', 'ignoreIndex', 'labelSmoothing']);
  const { reduction = 'mean', ignoreIndex, labelSmoothing = 0 } = o;
  if (reduction !== 'mean' && reduction !== 'sum' && reduction !== 'none') {
    throw new ArgumentError(`crossEntropy: reduction must be 'mean', 'sum' or 'none', got ${describe(reduction)}`);
  }
  if (ignoreIndex !== undefined && !Number.isInteger(ignoreIndex))
    throw new ArgumentError(`crossEntropy: ignoreIndex must be an integer, got ${describe(ignoreIndex)}`);
  if (typeof labelSmoothing !== 'number' || !(labelSmoothing >= 0 && labelSmoothing <= 1)) {
    throw new ArgumentError(`crossEntropy: labelSmoothing must be a number in [0, 1], got ${describe(labelSmoothing)}`);
  }
  return { reduction, ignore: ignoreIndex, eps: labelSmoothing };
}

/**
 * Shape and flat values of nested arrays, at most `rank` (the logits' rank) arrays deep: an array
 * deeper down stays one (bad) label for the checks to name. Unbounded, an array that contained
 * itself grew the shape until V8 aborted the process, and 10,000 levels threw a RangeError. Not
 * checked for raggedness: the count check catches that.
 */
function flattenNested(labels: readonly unknown[], rank: number): { shape: number[]; flat: unknown[] } {
  const shape: number[] = [];
  for (let v: unknown = labels; Array.isArray(v) && shape.length < rank; v = v[0]) shape.push(v.length);
  return { shape, flat: (labels as unknown[]).flat(shape.length - 1) };
}

/** What the labels say, per position, as a label the kernel can use (an ignored one becomes 0) and a weight. */
function indexLabels(labels: Int32Array | readonly unknown[], c: number, ignore: number | undefined): Int32Array {
  const flat = new Int32Array(labels.length);
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    if (typeof l === 'string')
      throw new ArgumentError(
        `crossEntropy: label ${JSON.stringify(l)} at position ${i} is a string; labels are class indices (map class names to integers in [0, ${c}) first)`,
      );
    if (typeof l !== 'number' || !Number.isInteger(l)) {
      throw new ArgumentError(
        `crossEntropy: label ${typeof l === 'number' ? l : describe(l)} at position ${i} is not an integer; labels are class indices in [0, ${c}) (for class probabilities pass a float tensor [..., ${c}])`,
      );
    }
    if (l === ignore) continue; // stays 0: a valid row for the kernel, weighted out below
    if (l < 0 || l >= c)
      throw new ArgumentError(
        `crossEntropy: label ${l} at position ${i} is outside [0, ${c})${ignore === undefined ? '' : ` and is not ignoreIndex (${ignore})`}`,
      );
    flat[i] = l;
  }
  return flat;
}

function weightsOf(labels: Int32Array | readonly unknown[], ignore: number, f64: boolean): Float32Array | Float64Array {
  const w = f64 ? new Float64Array(labels.length) : new Float32Array(labels.length);
  for (let i = 0; i < labels.length; i++) w[i] = labels[i] === ignore ? 0 : 1;
  return w;
}

/** The labels as class indices (flat, with the source compile() rebinds), or a float tensor of probabilities; every misuse explained. */
function readLabels(
  labels: unknown,
  logits: Tensor,
): { flat: Int32Array | readonly unknown[]; source: object | null } | { mapped: Tensor } | Tensor {
  const lead = logits.shape.slice(0, -1),
    c = logits.shape[logits.shape.length - 1],
    n = sizeOf(lead);
  const want = `class indices [${lead}] or probabilities [${logits.shape}]`;
  if (labels instanceof Tensor) {
    labels.check('crossEntropy');
    if (labels.dtype !== 'int32') {
      if (same(labels.shape, logits.shape)) {
        if (labels.dtype !== logits.dtype)
          throw new DtypeError(`crossEntropy: probabilities are ${labels.dtype} but the logits are ${logits.dtype} (cast one with astype)`);
        return labels;
      }
      if (labels.size === n) {
        throw new DtypeError(
          `crossEntropy: labels are a ${labels.dtype} tensor [${labels.shape}]; class indices must be int32 (labels.astype('int32')), probabilities must have the logits' shape [${logits.shape}]`,
        );
      }
      throw new ShapeError(`crossEntropy: labels [${labels.shape}] fit neither ${want} for logits [${logits.shape}]`);
    }
    if (same(labels.shape, logits.shape) && c !== 1) {
      throw new ShapeError(
        `crossEntropy: int32 labels [${labels.shape}] have the logits' shape: one-hot rows? Pass class indices [${lead}] (argmax(onehot, -1)), or probabilities as a float tensor`,
      );
    }
    if (!same(labels.shape, lead) && !(labels.shape.length === 1 && labels.size === n)) {
      throw new ShapeError(`crossEntropy: labels [${labels.shape}] do not match logits [${logits.shape}]: expected ${want}`);
    }
    if (isBatched(labels)) return { mapped: labels }; // mapped by vmap: the pick's launch reads and checks them
    const flat = labels.toArray() as Int32Array; // read in JS to range-check; compile() reads it again on every replay
    return { flat, source: flat };
  }
  if (typeof labels === 'string')
    throw new ArgumentError(
      `crossEntropy: labels is a string (${JSON.stringify(labels.slice(0, 20))}); expected ${want}: an Int32Array, an array of integers or an int32 tensor`,
    );
  if (!(labels instanceof Int32Array) && !Array.isArray(labels)) {
    throw new ArgumentError(
      `crossEntropy: labels must be an Int32Array, an array of integers or an int32 tensor (or probabilities as a float tensor), got ${labels === null ? 'null' : typeof labels}`,
    );
  }
  let flat: Int32Array | readonly unknown[] = labels;
  if (Array.isArray(labels) && labels.some((v) => Array.isArray(v))) {
    const nested = flattenNested(labels, logits.shape.length);
    if (same(nested.shape, logits.shape) && c !== 1) {
      throw new ShapeError(
        `crossEntropy: labels are nested arrays of shape [${nested.shape}], the logits' shape: one-hot rows? Pass class indices [${lead}], or probabilities as a float tensor`,
      );
    }
    flat = nested.flat;
  }
  if (flat.length !== n) {
    const onehot = flat.length === n * c && c > 1 ? ` (${n}·${c} values: one-hot rows? pass class indices, one per row)` : '';
    throw new ShapeError(`crossEntropy: ${flat.length} labels for ${n} rows of logits [${logits.shape}]${onehot}`);
  }
  return { flat, source: labels };
}

/** Softmax cross-entropy of logits [..., C] (class axis last) against class indices [...] or probabilities [..., C]. */
export function crossEntropy(logits: Tensor, labels: CrossEntropyLabels, opts: CrossEntropyOptions = {}): Tensor {
  if (arguments.length > 3) throw tooMany('crossEntropy', 3, arguments.length);
  floatArg('crossEntropy', logits, 'logits'); // int32 logits: named here, not by the fused primitive (softmaxCrossEntropy)
  const { reduction, ignore, eps } = checkOptions(opts);
  if (logits.shape.length === 0) throw new ShapeError('crossEntropy: logits must be [..., C] (at least 1-D), got a scalar []');
  const r = logits.shape.length,
    c = logits.shape[r - 1],
    lead = logits.shape.slice(0, -1),
    n = sizeOf(lead);
  const read = readLabels(labels, logits);
  if (read instanceof Tensor) {
    if (ignore !== undefined) throw new ArgumentError('crossEntropy: ignoreIndex applies to class-index labels, not to probabilities');
    return composite(() => {
      const target = eps > 0 ? add(mul(read, 1 - eps), eps / c) : read;
      return reduce(neg(sum(mul(target, logSoftmax(logits, -1)), -1)), reduction, lead, null);
    });
  }
  if ('mapped' in read) return mappedLabels(logits, read.mapped, reduction, ignore, eps);
  const make = (ls: object): Int32Array => indexLabels(flatOf(ls as Int32Array, r), c, ignore);
  const flat = indexLabels(read.flat, c, ignore);
  if (read.source !== null) derive(flat, read.source, make); // a compiled step checks each call's new labels the same way
  return composite(() => {
    const x = reshape(logits, [n, c]);
    const rows = apply('softmaxCrossEntropy', [x], { labels: flat }); // lse − x[label]
    let w: Tensor | null = null;
    if (ignore !== undefined) {
      const wv = weightsOf(read.flat, ignore, logits.dtype === 'float64');
      if (read.source !== null)
        derive(wv, read.source, (ls: object) => weightsOf(flatOf(ls as Int32Array, r), ignore, logits.dtype === 'float64'));
      w = fromValues(wv, [n], logits.dtype);
    }
    return finishRows(rows, x, eps, w, reduction, lead);
  });
}

/** Per-row losses lse − x[label] finished: label smoothing mixed in, rows of weight 0 (ignored) set to 0, reduced. */
function finishRows(rows: Tensor, x: Tensor, eps: number, w: Tensor | null, reduction: Reduction, lead: readonly number[]): Tensor {
  if (eps > 0) rows = add(mul(rows, 1 - eps), mul(sub(logsumexp(x, 1), mean(x, 1)), eps));
  if (w !== null) rows = where(w, rows, 0); // exactly 0 for ignored rows, whatever their logits
  return reduce(rows, reduction, lead, w);
}

/**
 * Class indices mapped by vmap: −logSoftmax(x)[label], a per-row pick whose launch reads the
 * physical labels (the fused kernel takes its labels from JS). An ignored label picks column 0
 * and is weighted out, as in the fused path.
 */
function mappedLabels(logits: Tensor, labels: Tensor, reduction: Reduction, ignore: number | undefined, eps: number): Tensor {
  const c = logits.shape[logits.shape.length - 1],
    lead = logits.shape.slice(0, -1),
    n = sizeOf(lead);
  return composite(() => {
    const x = reshape(logits, [n, c]);
    // −logSoftmax at the label: the fused kernel's order of operations, so the rows equal it. An
    // ignored label picks column 0 inside take (the labels are read as passed: compile() rebinds them).
    const rows = neg(reshape(take(logSoftmax(x, 1), reshape(labels, [n, 1]), { axis: 1, lead: 1, op: 'crossEntropy', ignore }), [n]));
    const w = ignore === undefined ? null : cast(ne(reshape(labels, [n]), ignore), logits.dtype);
    return finishRows(rows, x, eps, w, reduction, lead);
  });
}

/** A labels argument as compile() hands it back: flat for the checks (nested arrays flattened). */
function flatOf(ls: Int32Array | readonly unknown[], rank: number): Int32Array | readonly unknown[] {
  return Array.isArray(ls) && ls.some((v) => Array.isArray(v)) ? flattenNested(ls, rank).flat : ls;
}

/** Per-row losses [n] reduced: the mean counts rows of weight 1 (all of them without ignoreIndex). */
function reduce(rows: Tensor, reduction: Reduction, lead: readonly number[], w: Tensor | null): Tensor {
  if (reduction === 'none') return reshape(rows, lead);
  if (reduction === 'sum') return sum(rows);
  return w === null ? div(sum(rows), rows.size) : div(sum(rows), sum(w)); // an empty batch or all ignored: 0/0 = NaN, as PyTorch
}
