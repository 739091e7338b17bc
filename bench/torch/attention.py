#!/usr/bin/python3
"""PyTorch reference for attention written out (softmax(q kᵀ / sqrt(d)) v; PyTorch 1.13 has no
fused F.scaled_dot_product_attention): B 12, H 4, d 32, T 64 and 256, float32, forward + backward
of (out · g).sum() for a fixed random g, without and with the causal mask, one thread unless
--threads. Prints one JSON line with median ms (wall, and process CPU time as *CpuMs); skips (one JSON line, exit 0) without python3-torch.

  /usr/bin/python3 bench/torch/attention.py [--threads 1] [--budget 2]
"""
import argparse
import json
import math
import os
import sys

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import torch
except ImportError:
    print(json.dumps({"bench": "torch-attention", "skipped": "python3-torch is not installed"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import load_average, median_ms  # noqa: E402

B, H, D = 12, 4, 32


def attention(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        att = att + mask
    return torch.softmax(att, dim=-1) @ v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=2.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    res = {"bench": "torch-attention", "torch": torch.__version__, "threads": args.threads, "B": B, "H": H, "d": D, **load_average()}
    for t in (64, 256):
        q, k, v = (torch.randn(B, H, t, D, requires_grad=True) for _ in range(3))
        g = torch.randn(B, H, t, D)
        causal = torch.full((t, t), float("-inf")).triu(1)
        for label, mask in (("", None), ("Causal", causal)):

            def step(mask=mask):
                q.grad = k.grad = v.grad = None
                (attention(q, k, v, mask) * g).sum().backward()

            ms, cpu, n = median_ms(step, budget_s=args.budget)
            res[f"T{t}{label}Ms"] = round(ms, 3)
            res[f"T{t}{label}CpuMs"] = round(cpu, 3)
            print(f"T={t}{' causal' if label else ''}: forward+backward {ms:.3f} ms wall, {cpu:.3f} ms CPU, {n} samples", flush=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
