// A GPT made of public adjoint parts, to copy and change: the same layout and parameter names as
// adjoint's nn.GPT and as the PyTorch module in bench/torch/gpt_model.py, so weights move between
// all three through safetensors.
import { nn, add, mul, matmul, reshape, transpose, randn, tidy } from 'adjoint';

/** The head: logits = x · weightᵀ with the token embedding's own tensor (weight tying). */
class TiedHead extends nn.Module {
  constructor(weight) {
    super();
    this.weight = this.registerParameter('weight', weight);
  }
  forward(x) {
    const [B, T, W] = x.shape;
    return reshape(matmul(reshape(x, [B * T, W]), transpose(this.weight)), [B, T, this.weight.shape[0]]);
  }
}

/** Pre-LayerNorm block: x + attn(ln1(x)) with a causal mask, then + mlp(ln2(x)). */
class Block extends nn.Module {
  constructor(width, heads) {
    super();
    this.ln1 = this.registerModule('ln1', new nn.LayerNorm(width));
    this.attn = this.registerModule('attn', new nn.MultiheadAttention(width, heads, { batchFirst: true }));
    this.ln2 = this.registerModule('ln2', new nn.LayerNorm(width));
    // nn.GELU({ approximate: 'none' }) is PyTorch's default nn.GELU() (exact erf form).
    this.mlp = this.registerModule(
      'mlp',
      new nn.Sequential(new nn.Linear(width, 4 * width), new nn.GELU({ approximate: 'none' }), new nn.Linear(4 * width, width)),
    );
  }
  forward(x) {
    const h = this.ln1.forward(x);
    const y = add(x, this.attn.forward(h, h, h, { isCausal: true }));
    return add(y, this.mlp.forward(this.ln2.forward(y)));
  }
}

export class GPT extends nn.Module {
  constructor({ vocabSize, layers = 4, heads = 4, width = 128, context = 64, seed = 0 }) {
    super();
    Object.assign(this, { vocabSize, width, context });
    this.tokEmb = this.registerModule('tokEmb', new nn.Embedding(vocabSize, width));
    this.posEmb = this.registerModule('posEmb', new nn.Embedding(context, width));
    this.blocks = this.registerModule('blocks', new nn.ModuleList(Array.from({ length: layers }, () => new Block(width, heads))));
    this.lnF = this.registerModule('lnF', new nn.LayerNorm(width));
    this.head = this.registerModule('head', new TiedHead(this.tokEmb.weight));
    // GPT-2 init: weights N(0, 0.02), residual projections N(0, 0.02/√(2·layers)), biases 0.
    const record = {};
    this.namedParameters().forEach(([name, p], i) => {
      if (p.shape.length >= 2) {
        const std = /out_proj\.weight$|mlp\.2\.weight$/.test(name) ? 0.02 / Math.sqrt(2 * layers) : 0.02;
        record[name] = tidy(() => mul(randn(p.shape, { seed: seed * 1000 + i }), std));
      } else record[name] = name.endsWith('bias') ? mul(p, 0) : p;
    });
    this.loadStateDict(record);
  }

  /** Token ids [B, T] (an int32 tensor, as data.lmBatches yields, or { ids: Int32Array | number[], shape: [B, T] }) → logits [B, T, vocabSize]. */
  forward(input) {
    const { ids, shape } = input.ids !== undefined ? input : { ids: input, shape: input.shape };
    const [B, T] = shape;
    let x = add(reshape(this.tokEmb.forward(ids), [B, T, this.width]), this.posEmb.forward([...Array(T).keys()]));
    for (const block of this.blocks) x = block.forward(x);
    return this.head.forward(this.lnF.forward(x));
  }
}
