// nn.MultiheadAttention and nn.TransformerEncoderLayer with PyTorch's parameter names, layouts
// and initialisation, so state dicts move both ways through safetensors. Attention itself is
// the fused scaledDotProductAttention primitive (O(T·d) memory in both passes).
import { boolArg, describe, optionsArg, tooMany } from '../args.js';
import { ArgumentError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { seedOf, zeros } from '../ops/create.js';
import { add, sub, log, ne, matmul, reshape, transpose, slice, relu, gelu, astype, composite } from '../ops/api.js';
import { attentionDrawn } from '../ops/attention-api.js';
import { modes } from '../ops/modes.js';
import { dense } from '../ops/dense.js';
import { replayable } from '../tensor/replay.js';
import { kernel } from '../wasm/module.js';
import { Module } from './module.js';
import { Linear } from './linear.js';
import { Dropout, LayerNorm } from './layers.js';
import { Stream, count, dtypeOf } from './init.js';

/** x·Wᵀ + b over the last axis: one GEMM on the flattened leading axes (with the bias in its epilogue). */
export function linear(x: Tensor, w: Tensor, b: Tensor | null): Tensor {
  const [out, inF] = w.shape,
    lead = x.shape.slice(0, -1);
  return composite(() => {
    const x2 = x.shape.length === 2 ? x : reshape(x, [-1, inF]);
    const y = b === null ? matmul(x2, transpose(w)) : dense(x2, w, b);
    return lead.length === 1 ? y : reshape(y, [...lead, out]);
  });
}

/** A per-module dropout seed stream: call c draws seed + c (as nn.Dropout), replayed under checkpoint. */
class Seeds {
  private readonly base: number;
  private calls = 0;
  constructor(seed: number | undefined, op: string) {
    const [lo, hi] = seedOf(seed, op);
    this.base = hi * 2 ** 32 + lo;
  }
  next(): number {
    return replayable(() => (this.base + this.calls++) % Number.MAX_SAFE_INTEGER);
  }
}

/** Options for {@link MultiheadAttention} (PyTorch's arguments in camelCase). */
export interface MultiheadAttentionOptions {
  /** Whether the input and output projections have biases; default true. */
  bias?: boolean;
  /** Dropout on the attention weights (training mode only). */
  dropout?: number;
  /** Inputs [B, T, E] (true, the default here) or [T, B, E] (PyTorch's default). */
  batchFirst?: boolean;
  /** Parameter dtype; default `'float32'`. */
  dtype?: DType;
  /** Seed of the initialisation and of the dropout masks. */
  seed?: number;
}

/** Options of {@link MultiheadAttention.forward}. */
export interface AttentionForwardOptions {
  /** Query i attends to keys j ≤ i. */
  isCausal?: boolean;
  /**
   * [Tq, Tk] or [B·numHeads, Tq, Tk]: a float mask is added to the scores; an int32 mask is
   * PyTorch's boolean attn_mask (nonzero = not allowed to attend).
   */
  attnMask?: Tensor | null;
}

const isOptions = (v: unknown): boolean => v !== null && typeof v === 'object' && !(v instanceof Tensor);

/** nn.MultiheadAttention: in_proj_weight [3E, E] (xavier_uniform), in_proj_bias zeros, out_proj a Linear with zero bias. */
export class MultiheadAttention extends Module {
  /** `embedDim / numHeads`, the width of each head. */
  readonly headDim: number;
  /** The parameters' dtype; inputs must have it too. */
  readonly dtype: DType;
  /** Inputs are `[B, T, E]` (true) or `[T, B, E]` (false). */
  readonly batchFirst: boolean;
  /** Dropout probability on the attention weights (training mode only). */
  readonly dropout: number;
  /** The packed q, k, v projections, shape `[3·embedDim, embedDim]` (PyTorch's name and layout). */
  readonly in_proj_weight: Tensor;
  /** Their biases, shape `[3·embedDim]`, or null when built with `bias: false`. */
  readonly in_proj_bias: Tensor | null;
  /** The output projection `embedDim → embedDim`. */
  readonly out_proj: Linear;
  private readonly seeds: Seeds;

  /**
   * @param embedDim - Width of the model (the inputs' last axis).
   * @param numHeads - Number of heads; must divide `embedDim`.
   * @param opts - `bias`, `dropout`, `batchFirst`, `dtype`, `seed`.
   */
  constructor(
    readonly embedDim: number,
    readonly numHeads: number,
    opts: MultiheadAttentionOptions = {},
  ) {
    if (arguments.length > 3) throw tooMany('nn.MultiheadAttention', 3, arguments.length);
    super();
    opts = optionsArg('MultiheadAttention', opts, ['bias', 'dropout', 'batchFirst', 'dtype', 'seed']);
    count('MultiheadAttention', 'embedDim', embedDim);
    count('MultiheadAttention', 'numHeads', numHeads);
    if (embedDim % numHeads !== 0) {
      throw new ShapeError(`MultiheadAttention: embedDim (${embedDim}) must be divisible by numHeads (${numHeads})`);
    }
    this.headDim = embedDim / numHeads;
    this.dtype = dtypeOf('MultiheadAttention', opts.dtype);
    this.batchFirst = opts.batchFirst ?? true;
    this.dropout = opts.dropout ?? 0;
    if (typeof this.dropout !== 'number' || !(this.dropout >= 0 && this.dropout < 1)) {
      throw new ArgumentError(`MultiheadAttention: dropout must be in [0, 1), got ${describe(opts.dropout)}`);
    }
    const rng = new Stream(opts.seed, 'MultiheadAttention');
    const bound = kernel('sqrt_scalar')(6 / (embedDim + 3 * embedDim)); // xavier_uniform_ on [3E, E]
    this.in_proj_weight = this.registerParameter('in_proj_weight', rng.uniform([3 * embedDim, embedDim], bound, this.dtype));
    const bias = opts.bias ?? true;
    this.in_proj_bias = bias ? this.registerParameter('in_proj_bias', zeros([3 * embedDim], { dtype: this.dtype })) : null;
    const outSeed = opts.seed === undefined ? undefined : opts.seed + 1;
    this.out_proj = this.registerModule('out_proj', new Linear(embedDim, embedDim, { bias, dtype: this.dtype, seed: outSeed }));
    if (this.out_proj.bias !== null) kernel(this.dtype === 'float32' ? 'fill_f32' : 'fill_f64')(this.out_proj.bias.ptr, embedDim, 0);
    this.seeds = new Seeds(opts.seed === undefined ? undefined : opts.seed + 2, 'MultiheadAttention');
  }

  /** forward(query, key = query, value = key, options?): [B, Tq, E] (batchFirst) or [Tq, B, E]; unbatched [Tq, E] too. */
  forward(
    query: Tensor,
    key?: Tensor | AttentionForwardOptions,
    value?: Tensor | AttentionForwardOptions,
    options?: AttentionForwardOptions,
  ): Tensor {
    if (arguments.length > 4) throw tooMany('nn.MultiheadAttention.forward', 4, arguments.length);
    const given = (isOptions(key) ? key : isOptions(value) ? value : options) as AttentionForwardOptions | undefined;
    // A misspelt option (causal for isCausal) would silently attend everywhere: refuse it.
    const opts = optionsArg('nn.MultiheadAttention.forward', given, ['attnMask', 'isCausal']);
    boolArg('nn.MultiheadAttention.forward', 'isCausal', opts.isCausal, false); // as misspelt: `isCausal: 1` would attend everywhere
    const k = key instanceof Tensor ? key : query;
    const v = value instanceof Tensor ? value : k;
    return composite(() => {
      const [q3, k3, v3] = [query, k, v].map((t, i) => this.batched(t, ['query', 'key', 'value'][i]));
      const [B, Tq] = q3.shape,
        Tk = k3.shape[1];
      if (k3.shape[0] !== B || v3.shape[0] !== B || v3.shape[1] !== Tk) {
        throw new ShapeError(
          `MultiheadAttention: query [${query.shape}], key [${k.shape}] and value [${v.shape}] do not agree on batch and key length`,
        );
      }
      const [Q, K, V] = this.project(q3, k3, v3, query === k && k === v);
      const heads = (t: Tensor) => transpose(reshape(t, [B, t.shape[1], this.numHeads, this.headDim]), [0, 2, 1, 3]);
      const p = this.training ? this.dropout : 0;
      const o = attentionDrawn(
        heads(Q),
        heads(K),
        heads(V),
        { causal: opts.isCausal === true, mask: this.mask(opts.attnMask, B, Tq, Tk), dropoutP: p },
        () => this.seeds.next(),
      ); // drawn per forward pass (and per replay of a compiled step)
      const y = this.out_proj.forward(reshape(transpose(o, [0, 2, 1, 3]), [B, Tq, this.embedDim]));
      if (query.shape.length === 2) return reshape(y, [Tq, this.embedDim]);
      return this.batchFirst ? y : transpose(y, [1, 0, 2]);
    });
  }

  /** t as [B, T, E] (checked), whatever the layout. */
  private batched(t: Tensor, name: string): Tensor {
    if (!(t instanceof Tensor)) throw new ArgumentError(`MultiheadAttention: ${name} must be a Tensor, got ${typeof t}`);
    t.check('MultiheadAttention');
    const r = t.shape.length;
    if ((r !== 2 && r !== 3) || t.shape[r - 1] !== this.embedDim) {
      throw new ShapeError(
        `MultiheadAttention: ${name} must be [${this.batchFirst ? 'B, T' : 'T, B'}, ${this.embedDim}] or [T, ${this.embedDim}], got [${t.shape}]`,
      );
    }
    if (t.dtype !== this.dtype)
      throw new ShapeError(`MultiheadAttention: ${name} is ${t.dtype} but the layer is ${this.dtype} (cast with astype)`);
    if (r === 2) return reshape(t, [1, ...t.shape]);
    return this.batchFirst ? t : transpose(t, [1, 0, 2]);
  }

  /**
   * Q, K, V: three GEMMs with slices of in_proj_weight, or one with the whole weight for
   * self-attention when nothing records a backward (noGrad: sampling). Under recording the three
   * products are cheaper overall: slicing one [B, T, 3E] result three ways makes the backward pad
   * each slice's cotangent to the full [B, T, 3E] with zeros and add the three (profiled on the
   * GPT step: 3 fills, 3 copies and 2 adds of the whole QKV size per block), where three GEMMs
   * only pad the [E, E] weight slices and add the [B, T, E] input cotangents.
   */
  private project(q: Tensor, k: Tensor, v: Tensor, self: boolean): Tensor[] {
    const E = this.embedDim,
      W = this.in_proj_weight,
      b = this.in_proj_bias;
    if (self && !modes.record) {
      const qkv = linear(q, W, b),
        [B, T] = q.shape;
      return [0, 1, 2].map((i) => slice(qkv, [0, 0, i * E], [B, T, E]));
    }
    return [q, k, v].map((x, i) => linear(x, slice(W, [i * E, 0], [E, E]), b === null ? null : slice(b, [i * E], [E])));
  }

  /** attnMask as an additive mask broadcasting against [B, H, Tq, Tk]. */
  private mask(m: Tensor | null | undefined, B: number, Tq: number, Tk: number): Tensor | undefined {
    if (m == null) return undefined;
    if (!(m instanceof Tensor)) throw new ArgumentError(`MultiheadAttention: attnMask must be a Tensor, got ${typeof m}`);
    const ok2 = m.shape.length === 2 && m.shape[0] === Tq && m.shape[1] === Tk;
    const ok3 = m.shape.length === 3 && m.shape[0] === B * this.numHeads && m.shape[1] === Tq && m.shape[2] === Tk;
    if (!ok2 && !ok3) {
      throw new ShapeError(
        `MultiheadAttention: attnMask must be [${Tq}, ${Tk}] or [${B * this.numHeads}, ${Tq}, ${Tk}] (B·numHeads, Tq, Tk), got [${m.shape}]`,
      );
    }
    // PyTorch's boolean mask marks what may NOT be attended: additive log(1 − m) is 0 or −∞.
    const additive = (m.dtype as string) === 'int32' ? log(sub(1, astype(ne(m, 0), this.dtype))) : m; // any nonzero is true
    return ok3 ? reshape(additive, [B, this.numHeads, Tq, Tk]) : additive;
  }
}

/** Options for {@link TransformerEncoderLayer} (PyTorch's arguments in camelCase). */
export interface TransformerEncoderLayerOptions {
  /** Width of the feed-forward block; default 2048. */
  dimFeedforward?: number;
  /** Dropout probability (attention weights, feed-forward, residuals); default 0.1. */
  dropout?: number;
  /** 'gelu' is PyTorch's: the exact erf form. */
  activation?: 'relu' | 'gelu';
  /** The LayerNorms' eps; default 1e-5. */
  layerNormEps?: number;
  /** Pre-LayerNorm blocks (x + f(norm(x))) instead of post (norm(x + f(x))). */
  normFirst?: boolean;
  /** Inputs `[B, T, E]` (true, the default here) or `[T, B, E]`. */
  batchFirst?: boolean;
  /** Whether the linear layers and LayerNorms have biases; default true. */
  bias?: boolean;
  /** Parameter dtype; default `'float32'`. */
  dtype?: DType;
  /** Seed of the initialisation and of the dropout masks. */
  seed?: number;
}

/** Options of {@link TransformerEncoderLayer.forward}. */
export interface EncoderForwardOptions {
  /** Additive (float) or PyTorch-boolean (int32, nonzero = masked) [T, T] or [B·nhead, T, T] mask. */
  mask?: Tensor | null;
  /** Each position attends only to itself and earlier ones. */
  isCausal?: boolean;
}

/** nn.TransformerEncoderLayer: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2 (PyTorch's names). */
export class TransformerEncoderLayer extends Module {
  /** The self-attention block. */
  readonly self_attn: MultiheadAttention;
  /** The feed-forward block's first layer, `dModel → dimFeedforward`. */
  readonly linear1: Linear;
  /** The feed-forward block's second layer, `dimFeedforward → dModel`. */
  readonly linear2: Linear;
  /** The LayerNorm around the attention block. */
  readonly norm1: LayerNorm;
  /** The LayerNorm around the feed-forward block. */
  readonly norm2: LayerNorm;
  private readonly drop: Dropout;
  private readonly drop1: Dropout;
  private readonly drop2: Dropout;
  /** Pre-LayerNorm (true) or post-LayerNorm (false, PyTorch's default) blocks. */
  readonly normFirst: boolean;
  /** The feed-forward block's activation. */
  readonly activation: 'relu' | 'gelu';

  constructor(dModel: number, nhead: number, opts: TransformerEncoderLayerOptions = {}) {
    if (arguments.length > 3) throw tooMany('nn.TransformerEncoderLayer', 3, arguments.length);
    super();
    opts = optionsArg('TransformerEncoderLayer', opts, [
      'dimFeedforward',
      'dropout',
      'activation',
      'layerNormEps',
      'normFirst',
      'batchFirst',
      'bias',
      'dtype',
      'seed',
    ]);
    const ff = count('TransformerEncoderLayer', 'dimFeedforward', opts.dimFeedforward ?? 2048);
    const p = opts.dropout ?? 0.1,
      dtype = dtypeOf('TransformerEncoderLayer', opts.dtype),
      bias = opts.bias ?? true;
    const act = opts.activation ?? 'relu';
    if (act !== 'relu' && act !== 'gelu')
      throw new ArgumentError(`TransformerEncoderLayer: activation must be 'relu' or 'gelu', got ${describe(act)}`);
    this.activation = act;
    this.normFirst = opts.normFirst ?? false;
    const s = (i: number) => (opts.seed === undefined ? undefined : opts.seed + 10 * i);
    this.self_attn = this.registerModule(
      'self_attn',
      new MultiheadAttention(dModel, nhead, { bias, dropout: p, batchFirst: opts.batchFirst ?? true, dtype, seed: s(0) }),
    );
    this.linear1 = this.registerModule('linear1', new Linear(dModel, ff, { bias, dtype, seed: s(1) }));
    this.drop = this.registerModule('dropout', new Dropout(p, { seed: s(2) }));
    this.linear2 = this.registerModule('linear2', new Linear(ff, dModel, { bias, dtype, seed: s(3) }));
    const eps = opts.layerNormEps ?? 1e-5;
    // PyTorch (≥ 2.1) passes bias to the LayerNorms too: bias: false has no norm1.bias, norm2.bias.
    this.norm1 = this.registerModule('norm1', new LayerNorm(dModel, { eps, bias, dtype }));
    this.norm2 = this.registerModule('norm2', new LayerNorm(dModel, { eps, bias, dtype }));
    this.drop1 = this.registerModule('dropout1', new Dropout(p, { seed: s(4) }));
    this.drop2 = this.registerModule('dropout2', new Dropout(p, { seed: s(5) }));
  }

  forward(src: Tensor, opts: EncoderForwardOptions = {}): Tensor {
    if (arguments.length > 2) throw tooMany('nn.TransformerEncoderLayer.forward', 2, arguments.length);
    optionsArg('nn.TransformerEncoderLayer.forward', opts, ['mask', 'isCausal']);
    return composite(() => {
      const sa = (x: Tensor) => this.drop1.forward(this.self_attn.forward(x, x, x, { attnMask: opts.mask, isCausal: opts.isCausal }));
      const ffn = (x: Tensor) => {
        const h = this.linear1.forward(x);
        return this.drop2.forward(
          this.linear2.forward(this.drop.forward(this.activation === 'relu' ? relu(h) : gelu(h, { approximate: 'none' }))),
        );
      };
      if (this.normFirst) {
        const x = add(src, sa(this.norm1.forward(src)));
        return add(x, ffn(this.norm2.forward(x)));
      }
      const x = this.norm1.forward(add(src, sa(src)));
      return this.norm2.forward(add(x, ffn(x)));
    });
  }
}
