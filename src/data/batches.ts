// Mini-batches with a seeded shuffle. Each batch's x is gathered into a fresh tensor that
// lives until the next batch is drawn (or the loop ends), so a training loop's memory stays
// flat without the caller disposing anything.
import { ArgumentError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { gather } from '../ops/api.js';
import { noGrad } from '../autodiff/transforms.js';
import { checkSeed, permutation } from './shuffle.js';
import { describe, tooMany, optionsArg } from '../args.js';

/** Options for {@link batches}. */
export interface BatchOptions {
  /** Rows per batch. */
  batchSize: number;
  /** Shuffle the rows first (default true). */
  shuffle?: boolean;
  /** Seed of the shuffle; pass e.g. seed + epoch for a new order each epoch (default 0). */
  seed?: number;
  /** Skip a final batch smaller than batchSize (default false). */
  dropLast?: boolean;
}

/** One batch of {@link batches}. */
export interface Batch {
  /** The rows of `x`, shape `[batch, ...]`. */
  x: Tensor;
  /** Their labels. */
  y: Int32Array;
  /** Rows of the full data set in this batch. */
  indices: Int32Array;
}

/** Number of batches batches() yields for n rows. */
export function batchCount(n: number, batchSize: number, dropLast = false): number {
  if (arguments.length > 3) throw tooMany('data.batchCount', 3, arguments.length);
  if (!Number.isInteger(n) || n < 0) throw new ArgumentError(`batchCount: n must be a non-negative integer, got ${describe(n)}`);
  if (!Number.isInteger(batchSize) || batchSize <= 0)
    throw new ArgumentError(`batchCount: batchSize must be a positive integer, got ${describe(batchSize)}`);
  return dropLast ? Math.floor(n / batchSize) : Math.ceil(n / batchSize);
}

/** Yields { x, y, indices } batches of rows of x [N, ...] and labels y [N]. */
export function batches(x: Tensor, y: Int32Array, opts: BatchOptions): Generator<Batch, void, undefined> {
  if (arguments.length > 3) throw tooMany('data.batches', 3, arguments.length); // here, not in the generator: at the call
  optionsArg('batches', opts ?? {}, ['batchSize', 'shuffle', 'seed', 'dropLast']);
  return batchesOf(x, y, opts);
}

function* batchesOf(x: Tensor, y: Int32Array, opts: BatchOptions): Generator<Batch, void, undefined> {
  if (!(x instanceof Tensor) || x.shape.length === 0) throw new ArgumentError('batches: x must be a Tensor with a leading batch axis');
  const { batchSize, shuffle = true, seed = 0, dropLast = false } = opts ?? ({} as BatchOptions);
  if (!Number.isInteger(batchSize) || batchSize <= 0)
    throw new ArgumentError(`batches: batchSize must be a positive integer, got ${describe(batchSize)}`);
  const n = x.shape[0];
  if (!(y instanceof Int32Array)) throw new ArgumentError(`batches: labels must be an Int32Array, got ${describe(y)}`);
  if (y.length !== n) throw new ShapeError(`batches: ${y.length} labels for ${n} rows of x [${x.shape}]`);
  if (shuffle) checkSeed('batches', seed); // before permutation, whose message would name itself
  const order = shuffle ? permutation(n, seed) : Int32Array.from({ length: n }, (_, i) => i);
  const count = batchCount(n, batchSize, dropLast);
  let current: Tensor | null = null;
  try {
    for (let b = 0; b < count; b++) {
      const indices = order.subarray(b * batchSize, Math.min(n, (b + 1) * batchSize));
      current?.dispose();
      current = noGrad(() => gather(x, indices, 0));
      yield { x: current, y: Int32Array.from(indices, (i) => y[i]), indices };
    }
  } finally {
    current?.dispose();
  }
}
