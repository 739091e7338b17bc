"""The reference GPT in PyTorch, shared by bench/torch/gpt.py and scripts/fixtures/gpt.py, so the
benchmark and the key-mapping fixture are the same module.

Layout (state_dict keys; L layers, width W, vocab V, context C):
  tokEmb.weight                [V, W]   token embedding (nn.Embedding)
  posEmb.weight                [C, W]   learned positions (nn.Embedding over 0..T-1)
  blocks.{i}.ln1.weight/bias   [W]      pre-attention LayerNorm (eps 1e-5)
  blocks.{i}.attn.in_proj_weight [3W, W], in_proj_bias [3W]    nn.MultiheadAttention(W, heads,
  blocks.{i}.attn.out_proj.weight [W, W], out_proj.bias [W]      batch_first=True), causal mask
  blocks.{i}.ln2.weight/bias   [W]      pre-MLP LayerNorm
  blocks.{i}.mlp.0.weight [4W, W], mlp.0.bias [4W]   Linear, then exact GELU (mlp.1, no params)
  blocks.{i}.mlp.2.weight [W, 4W], mlp.2.bias [W]    Linear
  lnF.weight/bias              [W]      final LayerNorm
  head.weight                  [V, W]   no bias; tied: the same Parameter as tokEmb.weight
With bias=False (nanoGPT's default in train.py) every *.bias key above is absent.
forward(ids [B, T] int) → logits [B, T, V]:
  x = tokEmb(ids) + posEmb(arange(T))
  each block: h = ln1(x); x = x + attn(h, h, h, causal); x = x + mlp(ln2(x))
  logits = head(lnF(x))
"""
import math

import torch

nn = torch.nn


def layer_norm(width, bias):
    """nn.LayerNorm (eps 1e-5), without its bias when bias is False (PyTorch 1.13 has no bias=False)."""
    ln = nn.LayerNorm(width)
    if not bias:
        del ln.bias
        ln.register_parameter("bias", None)
    return ln


class Block(nn.Module):
    def __init__(self, width, heads, bias=True):
        super().__init__()
        self.ln1 = layer_norm(width, bias)
        self.attn = nn.MultiheadAttention(width, heads, dropout=0.0, bias=bias, batch_first=True)
        self.ln2 = layer_norm(width, bias)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width, bias=bias), nn.GELU(), nn.Linear(4 * width, width, bias=bias))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, width, layers, heads, context, bias=True):
        super().__init__()
        self.context = context
        self.tokEmb = nn.Embedding(vocab, width)
        self.posEmb = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads, bias) for _ in range(layers)])
        self.lnF = layer_norm(width, bias)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokEmb.weight  # weight tying

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tokEmb(ids) + self.posEmb(torch.arange(t))
        mask = torch.full((t, t), float("-inf"), dtype=x.dtype).triu(1)  # 0 on/below diagonal
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.lnF(x))


def gpt2_init(model, layers, seed=0):
    """GPT-2-style init: every Linear/Embedding/in_proj weight N(0, 0.02), the two residual
    projections (attn.out_proj.weight, mlp.2.weight) N(0, 0.02/sqrt(2·layers)), biases 0,
    LayerNorm weight 1 / bias 0."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("out_proj.weight", "mlp.2.weight")):
                p.copy_(torch.randn(p.shape, generator=g) * (0.02 / math.sqrt(2 * layers)))
            elif ".ln" in name or name.startswith("lnF"):
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)


def decay_groups(model, weight_decay):
    """AdamW groups: weight decay on matrices (dim ≥ 2: embeddings, projections) only."""
    params = list(model.parameters())  # tied weight once
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
