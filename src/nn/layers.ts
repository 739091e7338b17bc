// Parameter-free layers and the small ones: activations, Flatten, Dropout, LayerNorm,
// Embedding and Residual. Each forward is one op (or a short composite) from src/ops.
import { ArgumentError, ShapeError, DtypeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { relu, tanh, gelu, geluApproximation, layerNorm, epsArg, reshape, gather, add, composite, type GeluOptions } from '../ops/api.js';
import { seedOf, ones, zeros } from '../ops/create.js';
import { dropoutDrawn } from '../ops/conv-api.js';
import { replayable } from '../tensor/replay.js';
import { isBatched } from '../ops/batch.js';
import { derive } from '../wasm/hooks.js';
import { take } from '../ops/take.js';
import { Module, checkInput } from './module.js';
import { Stream, count, dtypeOf } from './init.js';
import { describe, optionsArg, tooMany } from '../args.js';

function tensorInput(op: string, x: unknown): Tensor {
  if (!(x instanceof Tensor)) throw new ArgumentError(`${op}: input must be a Tensor, got ${describe(x)}`);
  return x.check(op);
}

/** `max(x, 0)` elementwise, as a module (no parameters). */
export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.ReLU.forward', 1, arguments.length);
    return relu(tensorInput('ReLU', x));
  }
}
/** `tanh(x)` elementwise, as a module (no parameters). */
export class Tanh extends Module {
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Tanh.forward', 1, arguments.length);
    return tanh(tensorInput('Tanh', x));
  }
}
/** GELU: the tanh approximation by default (PyTorch's nn.GELU(approximate='tanh')); { approximate: 'none' } is the exact erf form. */
export class GELU extends Module {
  /** Which form it computes: `'tanh'` (the approximation, default) or `'none'` (exact, with erf). */
  readonly approximate: 'tanh' | 'none';
  constructor(options: GeluOptions = {}) {
    if (arguments.length > 1) throw tooMany('nn.GELU', 1, arguments.length);
    super();
    this.approximate = geluApproximation('GELU', options);
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.GELU.forward', 1, arguments.length);
    return gelu(tensorInput('GELU', x), { approximate: this.approximate });
  }
}

/** Flattens axes startDim..endDim into one (default: everything but the batch axis). */
export class Flatten extends Module {
  /**
   * @param startDim - First axis to flatten; default 1 (keeps the batch axis).
   * @param endDim - Last axis to flatten (negative counts from the end); default -1.
   */
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    if (arguments.length > 2) throw tooMany('nn.Flatten', 2, arguments.length);
    super();
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Flatten.forward', 1, arguments.length);
    const r = tensorInput('Flatten', x).shape.length;
    const s = this.startDim < 0 ? this.startDim + r : this.startDim,
      e = this.endDim < 0 ? this.endDim + r : this.endDim;
    if (!(0 <= s && s <= e && e < r))
      throw new ShapeError(`Flatten: dims ${this.startDim}..${this.endDim} do not fit input shape [${x.shape}]`);
    const merged = x.shape.slice(s, e + 1).reduce((a, b) => a * b, 1);
    return reshape(x, [...x.shape.slice(0, s), merged, ...x.shape.slice(e + 1)]);
  }
}

/** Splits axis `dim` into `sizes` (PyTorch's nn.Unflatten), e.g. [N, 784] → [N, 1, 28, 28]. */
export class Unflatten extends Module {
  /**
   * @param dim - The axis to split (negative counts from the end).
   * @param sizes - The new axes' sizes; their product must equal the axis' size.
   */
  constructor(
    readonly dim: number,
    readonly sizes: readonly number[],
  ) {
    if (arguments.length > 2) throw tooMany('nn.Unflatten', 2, arguments.length);
    super();
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Unflatten.forward', 1, arguments.length);
    const r = tensorInput('Unflatten', x).shape.length;
    const d = this.dim < 0 ? this.dim + r : this.dim;
    if (!(0 <= d && d < r)) throw new ShapeError(`Unflatten: dim ${this.dim} is out of range for input shape [${x.shape}]`);
    if (this.sizes.reduce((a, b) => a * b, 1) !== x.shape[d]) {
      throw new ShapeError(`Unflatten: sizes [${this.sizes}] do not multiply to axis ${d} (${x.shape[d]}) of input shape [${x.shape}]`);
    }
    return reshape(x, [...x.shape.slice(0, d), ...this.sizes, ...x.shape.slice(d + 1)]);
  }
}

/**
 * Inverted dropout: in training mode zeroes each element with probability p and scales the
 * rest by 1/(1 − p); identity in eval mode. Each call draws a fresh mask from a seeded
 * counter (seed, seed + 1, ...), so a seeded run is reproducible.
 */
export class Dropout extends Module {
  private readonly seed: number;
  private calls = 0;
  /**
   * @param p - Probability of zeroing an element, in [0, 1); default 0.5.
   * @param options - `seed`: the first mask's seed (omitted: the next of a fixed sequence).
   */
  constructor(
    readonly p = 0.5,
    options?: { seed?: number },
  ) {
    if (arguments.length > 2) throw tooMany('nn.Dropout', 2, arguments.length);
    super();
    const opts = optionsArg('Dropout', options, ['seed']);
    if (typeof p !== 'number' || !(p >= 0 && p < 1)) throw new ArgumentError(`Dropout: p must be in [0, 1), got ${describe(p)}`);
    const [lo, hi] = seedOf(opts.seed, 'Dropout');
    this.seed = hi * 2 ** 32 + lo;
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Dropout.forward', 1, arguments.length);
    tensorInput('Dropout', x);
    if (!this.training || this.p === 0) return x;
    // replayable: a checkpointed segment's recompute must draw this call's mask again, not the next one.
    return dropoutDrawn(x, this.p, () => replayable(() => (this.seed + this.calls++) % Number.MAX_SAFE_INTEGER));
  }
}

/** Layer normalisation over the last axis (Ba et al. 2016); weight ones, bias zeros, as PyTorch. */
export class LayerNorm extends Module {
  /** Size of the normalised last axis. */
  readonly dim: number;
  /** The scale, shape `[dim]` (initialised to ones), or null without `elementwiseAffine`. */
  readonly weight: Tensor | null;
  /** The shift, shape `[dim]` (initialised to zeros), or null without `elementwiseAffine` or with `bias: false`. */
  readonly bias: Tensor | null;
  /** The parameters' dtype; inputs must have it too. */
  readonly dtype: DType;
  /**
   * @param dim - Size of the last axis (a number or PyTorch's `[dim]`).
   * @param opts - The options it was built with: `eps` (added to the variance, default 1e-5), `elementwiseAffine` (learned weight and bias, default true), `bias` (learned bias, default true), `dtype` (default `'float32'`).
   */
  constructor(
    dim: number | readonly [number],
    readonly opts: {
      /** Added to the variance before the square root; default 1e-5. */
      eps?: number;
      /** Whether the layer has a learned weight and bias; default true. */
      elementwiseAffine?: boolean;
      /** Whether an affine layer also has its learned bias (PyTorch ≥ 2.1's `bias`); default true. */
      bias?: boolean;
      /** The parameters' dtype; default `'float32'`. */
      dtype?: DType;
    } = {},
  ) {
    if (arguments.length > 2) throw tooMany('nn.LayerNorm', 2, arguments.length);
    super();
    optionsArg('LayerNorm', opts, ['eps', 'elementwiseAffine', 'bias', 'dtype']);
    if (opts.eps !== undefined) epsArg('LayerNorm', opts.eps); // at construction, not at the first forward
    if (Array.isArray(dim) && dim.length !== 1) {
      // PyTorch's normalized_shape may name several trailing axes; without this the error said "got NaN".
      throw new ShapeError(
        `LayerNorm: only the last axis is normalised: dim must be a number or [dim], got [${dim}] (reshape the axes into one)`,
      );
    }
    const d = Array.isArray(dim) ? dim[0] : dim;
    this.dim = count('LayerNorm', 'dim (only the last axis is normalised)', d);
    this.dtype = dtypeOf('LayerNorm', opts.dtype);
    const affine = opts.elementwiseAffine ?? true;
    this.weight = affine ? this.registerParameter('weight', ones([this.dim], { dtype: this.dtype })) : null;
    this.bias = affine && (opts.bias ?? true) ? this.registerParameter('bias', zeros([this.dim], { dtype: this.dtype })) : null;
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.LayerNorm.forward', 1, arguments.length);
    checkInput('LayerNorm', x, this.dtype, -1, this.dim, 'last axis');
    return layerNorm(x, this.weight, this.bias, this.opts.eps ?? 1e-5);
  }
}

/** A lookup table [n, dim] initialised N(0, 1); forward(indices) gathers rows → [...indices.shape, dim]. */
export class Embedding extends Module {
  /** The table, shape `[numEmbeddings, embeddingDim]`, initialised N(0, 1). */
  readonly weight: Tensor;
  /**
   * @param numEmbeddings - Number of rows (the vocabulary size).
   * @param embeddingDim - Size of each row.
   * @param options - `seed` of the initialisation and `dtype` (default `'float32'`).
   */
  constructor(
    readonly numEmbeddings: number,
    readonly embeddingDim: number,
    options?: { seed?: number; dtype?: DType },
  ) {
    if (arguments.length > 3) throw tooMany('nn.Embedding', 3, arguments.length);
    super();
    const opts = optionsArg('Embedding', options, ['seed', 'dtype']);
    count('Embedding', 'numEmbeddings', numEmbeddings);
    count('Embedding', 'embeddingDim', embeddingDim);
    this.weight = this.registerParameter(
      'weight',
      new Stream(opts.seed, 'Embedding').normal([numEmbeddings, embeddingDim], dtypeOf('Embedding', opts.dtype)),
    );
  }
  forward(indices: Tensor | Int32Array | readonly number[]): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Embedding.forward', 1, arguments.length);
    if (!(indices instanceof Tensor) && !(indices instanceof Int32Array) && !Array.isArray(indices)) {
      throw new ArgumentError(`Embedding: indices must be a Tensor, an Int32Array or an array of integers, got ${describe(indices)}`);
    }
    if (indices instanceof Tensor && isBatched(indices)) return this.mapped(indices);
    const shape = indices instanceof Tensor ? indices.shape : [indices.length];
    // An int32 tensor's values are read as an Int32Array, which compile() reads again on every replay.
    const read = indices instanceof Tensor ? indices.check('Embedding').toArray() : indices;
    const idx = this.checked(read);
    derive(idx, read, (ix: ArrayLike<number>) => this.checked(ix)); // a compiled step checks each call's new indices here, not in gather
    return composite(() => reshape(gather(this.weight, idx, 0), [...shape, this.embeddingDim]));
  }
  /** The indices as an Int32Array, or the error naming the first one that is not a row number. */
  private checked(ix: ArrayLike<number>): Int32Array {
    for (let i = 0; i < ix.length; i++) {
      const v = ix[i];
      if (!Number.isInteger(v)) {
        throw new ArgumentError(
          `Embedding: index ${describe(v)} at position ${i} is not an integer (indices are whole row numbers in [0, ${this.numEmbeddings}))`,
        );
      }
      if (v < 0 || v >= this.numEmbeddings) {
        throw new ShapeError(`Embedding: index ${v} at position ${i} is out of range [0, ${this.numEmbeddings})`);
      }
    }
    return Int32Array.from(ix);
  }
  /** Indices mapped by vmap: their values exist only in the physical tensor, so the lookup's launch reads and checks them. */
  private mapped(indices: Tensor): Tensor {
    indices.check('Embedding');
    if (indices.dtype !== 'int32')
      throw new DtypeError(
        `Embedding: indices mapped by vmap must be an int32 tensor, got ${indices.dtype} [${indices.shape}] (indices.astype('int32'))`,
      );
    return take(this.weight, indices, { axis: 0, lead: 0, op: 'Embedding' });
  }
}

/** x + module(x) (He et al. 2016); the wrapped module's parameters are named `module.*`. */
export class Residual extends Module {
  /** The wrapped module. */
  readonly module: Module;
  constructor(module: Module) {
    if (arguments.length > 1) throw tooMany('nn.Residual', 1, arguments.length);
    super();
    this.module = this.registerModule('module', module);
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.Residual.forward', 1, arguments.length);
    return composite(() => add(tensorInput('Residual', x), this.module.forward(x)));
  }
}
