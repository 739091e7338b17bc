// A GPT (Radford et al. 2018/2019) made only of public nn parts: token and learned position
// embeddings, pre-LayerNorm blocks of causal nn.MultiheadAttention and a 4× GELU MLP, a final
// LayerNorm and a head tied to the token embedding. Parameter names are those of the PyTorch
// module in bench/torch/gpt_model.py, so a state dict moves both ways through safetensors
// (docs/gpt.md has the table).
import { ArgumentError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { randn } from '../ops/create.js';
import { tidy, keep } from '../tensor/memory.js';
import { add, mul, matmul, reshape, transpose, slice, concat, composite } from '../ops/api.js';
import { scaledDotProductAttention } from '../ops/attention-api.js';
import { Module } from './module.js';
import { Linear } from './linear.js';
import { GELU, LayerNorm, Embedding } from './layers.js';
import { isBatched } from '../ops/batch.js';
import { Sequential } from './sequential.js';
import { ModuleList } from './containers.js';
import { MultiheadAttention, linear } from './attention.js';
import { count, dtypeOf } from './init.js';
import { sample, type SampleOptions } from './gpt-sample.js';
import { boolArg, describe, optionsArg, tooMany } from '../args.js';

/** A GPT's sizes (the published character-level configuration by default) plus `dtype` and `seed`. */
export interface GPTConfig {
  vocabSize: number;
  /** Transformer blocks (default 4). */
  layers?: number;
  /** Attention heads per block (default 4); width must divide by it. */
  heads?: number;
  /** Embedding width (default 128). */
  width?: number;
  /** Longest sequence, the number of learned positions (default 64). */
  context?: number;
  /** Biases in the Linear layers, attention projections and LayerNorms (default true; nanoGPT's published run has none). */
  bias?: boolean;
  dtype?: DType;
  /** Seed of the GPT-2-style initialisation (default 0). */
  seed?: number;
}

/** The head: logits = x · weightᵀ, with `weight` the token embedding's own tensor (tied). */
class TiedHead extends Module {
  readonly weight: Tensor;
  constructor(weight: Tensor) {
    super();
    this.weight = this.registerParameter('weight', weight);
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('TiedHead.forward', 1, arguments.length);
    return linear(x, this.weight, null);
  }
}

/** One pre-LayerNorm block: x + attn(ln1(x)), then + mlp(ln2(x)). */
export class GPTBlock extends Module {
  readonly ln1: LayerNorm;
  readonly attn: MultiheadAttention;
  readonly ln2: LayerNorm;
  readonly mlp: Sequential;
  constructor(width: number, heads: number, dtype: DType, bias = true) {
    if (arguments.length > 4) throw tooMany('nn.GPTBlock', 4, arguments.length);
    super();
    this.ln1 = this.registerModule('ln1', new LayerNorm(width, { dtype, bias }));
    this.attn = this.registerModule('attn', new MultiheadAttention(width, heads, { dtype, bias, batchFirst: true }));
    this.ln2 = this.registerModule('ln2', new LayerNorm(width, { dtype, bias }));
    this.mlp = this.registerModule(
      'mlp',
      new Sequential(
        new Linear(width, 4 * width, { dtype, bias }),
        new GELU({ approximate: 'none' }) /* PyTorch's nn.GELU() */,
        new Linear(4 * width, width, { dtype, bias }),
      ),
    );
  }
  forward(x: Tensor): Tensor {
    if (arguments.length > 1) throw tooMany('nn.GPTBlock.forward', 1, arguments.length);
    return composite(() => {
      const h = this.ln1.forward(x);
      const y = add(x, this.attn.forward(h, h, h, { isCausal: true }));
      return add(y, this.mlp.forward(this.ln2.forward(y)));
    });
  }
}

/** Ids as [B, T] row-major: an int32 tensor, or a flat Int32Array/number[] with its shape. */
export type TokenIds = Tensor | { ids: Int32Array | readonly number[]; shape: readonly [number, number] };

/**
 * A decoder-only Transformer language model from public nn parts: token and learned position
 * embeddings, pre-LayerNorm blocks of causal multi-head attention and a 4× GELU MLP, a final
 * LayerNorm and a head tied to the token embedding (GPT-2-style init). Its state-dict keys load
 * into the equivalent PyTorch module (docs/gpt.md). `forward(ids)` gives logits `[B, T, vocab]`.
 */
export class GPT extends Module {
  readonly vocabSize: number;
  readonly layers: number;
  readonly heads: number;
  readonly width: number;
  readonly context: number;
  /** Whether the Linear layers, attention projections and LayerNorms have biases. */
  readonly bias: boolean;
  readonly dtype: DType;
  readonly tokEmb: Embedding;
  readonly posEmb: Embedding;
  readonly blocks: ModuleList<GPTBlock>;
  readonly lnF: LayerNorm;
  readonly head: TiedHead;

  constructor(config: GPTConfig) {
    if (arguments.length > 1) throw tooMany('nn.GPT', 1, arguments.length);
    super();
    if (config === null || typeof config !== 'object')
      throw new ArgumentError(`GPT: expected a config { vocabSize, layers, heads, width, context }, got ${describe(config)}`);
    optionsArg('nn.GPT', config, ['vocabSize', 'layers', 'heads', 'width', 'context', 'bias', 'dtype', 'seed'], 'config');
    this.vocabSize = count('GPT', 'vocabSize', config.vocabSize);
    this.layers = count('GPT', 'layers', config.layers ?? 4);
    this.heads = count('GPT', 'heads', config.heads ?? 4);
    this.width = count('GPT', 'width', config.width ?? 128);
    this.context = count('GPT', 'context', config.context ?? 64);
    this.bias = boolArg('GPT', 'bias', config.bias, true);
    if (this.width % this.heads !== 0) throw new ShapeError(`GPT: width (${this.width}) must be divisible by heads (${this.heads})`);
    this.dtype = dtypeOf('GPT', config.dtype);
    const dtype = this.dtype;
    this.tokEmb = this.registerModule('tokEmb', new Embedding(this.vocabSize, this.width, { dtype }));
    this.posEmb = this.registerModule('posEmb', new Embedding(this.context, this.width, { dtype }));
    this.blocks = this.registerModule(
      'blocks',
      new ModuleList(Array.from({ length: this.layers }, () => new GPTBlock(this.width, this.heads, dtype, this.bias))),
    );
    this.lnF = this.registerModule('lnF', new LayerNorm(this.width, { dtype, bias: this.bias }));
    this.head = this.registerModule('head', new TiedHead(this.tokEmb.weight));
    this.initGpt2(config.seed ?? 0);
  }

  /**
   * GPT-2's initialisation: weights N(0, 0.02), the residual projections (attn.out_proj.weight,
   * mlp.2.weight) N(0, 0.02/√(2·layers)), biases 0, LayerNorm 1 and 0.
   */
  private initGpt2(seed: number): void {
    const residual = 0.02 / Math.sqrt(2 * this.layers);
    const fresh: Tensor[] = [];
    const record: Record<string, Tensor> = {};
    this.namedParameters().forEach(([name, p], i) => {
      if (p.shape.length >= 2) {
        const std = name.endsWith('out_proj.weight') || name.endsWith('mlp.2.weight') ? residual : 0.02;
        const z = randn(p.shape, { seed: seed * 1000 + i, dtype: this.dtype });
        fresh.push(z, (record[name] = mul(z, std)));
      } else if (name.endsWith('bias')) {
        fresh.push((record[name] = mul(p, 0)));
      } else {
        record[name] = p; // LayerNorm weight: already ones
      }
    });
    try {
      this.loadStateDict(record);
    } finally {
      for (const t of fresh) t.dispose();
    }
  }

  /** ids [B, T] (T ≤ context) → logits [B, T, vocabSize]. */
  forward(ids: TokenIds): Tensor {
    if (arguments.length > 1) throw tooMany('nn.GPT.forward', 1, arguments.length);
    const { flat, B, T } = this.checkIds(ids);
    return composite(() => {
      let x = add(reshape(this.tokEmb.forward(flat), [B, T, this.width]), this.posEmb.forward(positions(0, T)));
      for (const block of this.blocks) x = block.forward(x);
      return this.head.forward(this.lnF.forward(x));
    });
  }

  private checkIds(ids: TokenIds): { flat: Int32Array | readonly number[] | Tensor; B: number; T: number } {
    let flat: Int32Array | readonly number[] | Tensor, shape: readonly number[];
    if (ids instanceof Tensor) {
      if ((ids.dtype as string) !== 'int32') throw new ArgumentError(`GPT: ids must be an int32 tensor, got ${ids.dtype}`);
      // Mapped by vmap (per-example gradients), the tensor itself: nn.Embedding's launch reads and checks the ids.
      flat = isBatched(ids) ? ids : (ids.toArray() as Int32Array);
      shape = ids.shape;
    } else if (ids !== null && typeof ids === 'object' && 'ids' in ids && Array.isArray(ids.shape)) {
      flat = ids.ids;
      shape = ids.shape;
    } else {
      throw new ArgumentError('GPT: ids must be an int32 tensor [B, T] or { ids, shape: [B, T] }');
    }
    const n = flat instanceof Tensor ? flat.size : flat.length;
    if (shape.length !== 2 || shape[0] * shape[1] !== n || shape[1] < 1)
      throw new ShapeError(`GPT: ids must be [B, T] with ${n} ids, got shape [${shape}]`);
    if (shape[1] > this.context) throw new ShapeError(`GPT: sequence length ${shape[1]} exceeds the context of ${this.context}`);
    return { flat, B: shape[0], T: shape[1] };
  }

  /** Continues `prompt` (token ids) by `opts.tokens` seeded draws; see SampleOptions. */
  generate(prompt: ArrayLike<number>, opts: SampleOptions = {}): Int32Array {
    return sample(this, prompt, opts);
  }

  /** An empty key/value cache for token-by-token decoding (see GPTCache). */
  cache(): GPTCache {
    return new GPTCache(this);
  }
}

function positions(from: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => from + i);
}

/**
 * Keys and values of every block for the tokens seen so far ([1, heads, t, headDim] each), so a
 * new token costs one query row against t cached keys: O(t) per token instead of recomputing
 * the O(t²) prefix. Batch size 1. Call inside noGrad; dispose() frees the cached tensors.
 */
export class GPTCache {
  private keys: Tensor[] = [];
  private values: Tensor[] = [];
  /** Tokens held (their positions are 0 .. length − 1). */
  length = 0;

  constructor(private readonly model: GPT) {
    if (arguments.length > 1) throw tooMany('nn.GPTCache', 1, arguments.length);
  }

  /** Appends `ids` at positions length .. length + n − 1 and returns the last token's logits [vocabSize]. */
  append(ids: readonly number[] | Int32Array): Float64Array | Float32Array {
    const m = this.model,
      n = ids.length;
    if (n === 0) throw new ArgumentError('GPTCache.append: no ids');
    if (this.length + n > m.context)
      throw new ShapeError(
        `GPTCache.append: ${this.length} cached + ${n} new tokens exceed the context of ${m.context}; reset() and append the window again`,
      );
    if (this.length > 0 && n > 1) throw new ArgumentError('GPTCache.append: after the first call, append one token at a time');
    return tidy(() => {
      const H = m.heads,
        d = m.width / H,
        E = m.width;
      let x = add(reshape(m.tokEmb.forward(ids), [1, n, E]), m.posEmb.forward(positions(this.length, n)));
      let l = 0;
      for (const block of m.blocks) {
        const h = block.ln1.forward(x);
        const qkv = linear(h, block.attn.in_proj_weight, block.attn.in_proj_bias);
        const heads = (i: number) => transpose(reshape(slice(qkv, [0, 0, i * E], [1, n, E]), [1, n, H, d]), [0, 2, 1, 3]);
        let k = heads(1),
          v = heads(2);
        if (this.length > 0) {
          const [k0, v0] = [this.keys[l], this.values[l]];
          [k, v] = [concat([k0, k], 2), concat([v0, v], 2)];
          k0.dispose();
          v0.dispose();
        }
        this.keys[l] = keep(k);
        this.values[l] = keep(v);
        // First call: causal over the prompt; later: one query row sees every cached key.
        const o = scaledDotProductAttention(heads(0), k, v, { causal: this.length === 0 && n > 1 });
        const a = block.attn.out_proj.forward(reshape(transpose(o, [0, 2, 1, 3]), [1, n, E]));
        const y = add(x, a);
        x = add(y, block.mlp.forward(block.ln2.forward(y)));
        l++;
      }
      this.length += n;
      const last = slice(m.lnF.forward(x), [0, n - 1, 0], [1, 1, E]);
      return matmul(reshape(last, [1, E]), transpose(m.head.weight)).toArray() as Float64Array | Float32Array;
    });
  }

  /** Drops every cached key and value. */
  reset(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
    this.keys = [];
    this.values = [];
    this.length = 0;
  }

  dispose(): void {
    this.reset();
  }
}
