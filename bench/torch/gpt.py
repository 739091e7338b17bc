#!/usr/bin/python3
"""PyTorch reference for the character-level tiny-Shakespeare GPT (the published CPU config):
4 layers, 4 heads, width 128, context 64, batch 12; AdamW lr 1e-3, 100 linear warm-up steps then
cosine decay toward 1e-4 (nanoGPT's get_lr), betas 0.9/0.99, weight decay 0.1 on matrices only, grad-norm
clip 1.0, no dropout, no biases (nanoGPT's bias=False; --bias adds them), head tied to the token
embedding, GPT-2-style init (gpt_model.py).
Data: first 90 % of the characters train, last 10 % validation; vocabulary = sorted set of the
characters of the whole file.

  /usr/bin/python3 bench/torch/gpt.py [--steps 2000] [--threads 1] [--seed 0] [--data FILE] [--bias]

Prints progress, then one JSON line: median ms/step (forward + backward + clip + AdamW step;
wall time, and process CPU time, which stays near the unloaded wall time on a busy machine),
tokens/s, wall time, validation loss over 20 random batches and over the whole validation split
(consecutive non-overlapping windows of 64 characters, each predicting its next 64 characters;
the incomplete tail window is dropped). Skips (one JSON line, exit 0) without python3-torch.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys
import time

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import torch
except ImportError:
    print(json.dumps({"bench": "torch-gpt", "skipped": "python3-torch is not installed"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_model import GPT, decay_groups, gpt2_init  # noqa: E402

F = torch.nn.functional
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA_CANDIDATES = [
    os.path.join(ROOT, "data", "tinyshakespeare.txt.gz"),
    os.path.join(ROOT, "examples", "data", "tinyshakespeare.txt.gz"),
    "/work/shared/data/tinyshakespeare.txt.gz",
]
LAYERS, HEADS, WIDTH, CONTEXT, BATCH = 4, 4, 128, 64, 12
LR, MIN_LR, WARMUP, BETAS, WD, CLIP = 1e-3, 1e-4, 100, (0.9, 0.99), 0.1, 1.0
EVAL_EVERY, EVAL_BATCHES = 250, 20


def lr_at(step, steps):
    """nanoGPT's get_lr with lr_decay_iters = steps: warm-up LR·(step+1)/(WARMUP+1), then cosine
    from LR over steps − WARMUP steps toward MIN_LR."""
    if step < WARMUP:
        return LR * (step + 1) / (WARMUP + 1)
    ratio = (step - WARMUP) / max(1, steps - WARMUP)
    return MIN_LR + 0.5 * (1 + math.cos(math.pi * min(1.0, ratio))) * (LR - MIN_LR)


def batch(data, gen):
    ix = torch.randint(0, len(data) - CONTEXT, (BATCH,), generator=gen)  # nanoGPT: randint(len - block_size)
    x = torch.stack([data[i : i + CONTEXT] for i in ix.tolist()])
    y = torch.stack([data[i + 1 : i + 1 + CONTEXT] for i in ix.tolist()])
    return x, y


@torch.no_grad()
def val_random(model, val, gen, vocab):
    model.eval()
    losses = []
    for _ in range(EVAL_BATCHES):
        x, y = batch(val, gen)
        losses.append(F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


@torch.no_grad()
def val_full(model, val, vocab):
    model.eval()
    n = (len(val) - 1) // CONTEXT
    total, count = 0.0, 0
    for s in range(0, n, 64):
        idx = range(s, min(n, s + 64))
        x = torch.stack([val[i * CONTEXT : (i + 1) * CONTEXT] for i in idx])
        y = torch.stack([val[i * CONTEXT + 1 : (i + 1) * CONTEXT + 1] for i in idx])
        total += F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1), reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=None)
    # nanoGPT's train.py default bias=False: no biases in Linear layers and LayerNorms.
    ap.add_argument("--bias", action=argparse.BooleanOptionalAction, default=False, help="Linear/LayerNorm biases (default off, as nanoGPT)")
    args = ap.parse_args()
    path = args.data or next((p for p in DATA_CANDIDATES if os.path.exists(p)), None)
    if path is None or not os.path.exists(path):
        print(json.dumps({"bench": "torch-gpt", "skipped": "tinyshakespeare.txt.gz not found"}))
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    text = gzip.open(path, "rt", encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    vocab = len(chars)

    model = GPT(vocab, WIDTH, LAYERS, HEADS, CONTEXT, bias=args.bias)
    gpt2_init(model, LAYERS, seed=args.seed)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(decay_groups(model, WD), lr=LR, betas=BETAS)
    gen = torch.Generator().manual_seed(args.seed + 1)
    vgen = torch.Generator().manual_seed(args.seed + 2)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {nparams} parameters, vocab {vocab}, train {len(train)} val {len(val)} chars", flush=True)

    times, cpu_times = [], []
    t_start = time.perf_counter()
    loss_v = float("nan")
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps)
        x, y = batch(train, gen)
        t0, c0 = time.perf_counter(), time.process_time()
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        cpu_times.append(time.process_time() - c0)
        times.append(time.perf_counter() - t0)
        loss_v = loss.item()
        if (step + 1) % EVAL_EVERY == 0 and step + 1 < args.steps:
            v = val_random(model, val, vgen, vocab)
            med = statistics.median(times) * 1e3
            print(f"step {step + 1}/{args.steps} loss {loss_v:.4f} val {v:.4f} {med:.1f} ms/step {BATCH * CONTEXT / med * 1e3:.0f} tok/s", flush=True)
    train_wall = time.perf_counter() - t_start
    v20 = val_random(model, val, vgen, vocab)
    vfull = val_full(model, val, vocab)
    med = statistics.median(times) * 1e3
    cpu_med = statistics.median(cpu_times) * 1e3
    print(f"val loss (20 batches): {v20:.4f}, whole validation split: {vfull:.4f}")
    print(
        json.dumps(
            {
                "bench": "torch-gpt",
                "torch": torch.__version__,
                "threads": args.threads,
                "seed": args.seed,
                "bias": args.bias,
                "steps": args.steps,
                "params": nparams,
                "msPerStepMedian": round(med, 3),
                "tokensPerSec": round(BATCH * CONTEXT / med * 1e3, 1),
                "cpuMsPerStepMedian": round(cpu_med, 3),
                "tokensPerSecCpu": round(BATCH * CONTEXT / cpu_med * 1e3, 1),
                "trainWallSeconds": round(train_wall, 2),
                "loadAvg1m": round(os.getloadavg()[0], 2),
                "finalTrainLoss": round(loss_v, 4),
                "valLoss20": round(v20, 4),
                "valLossFull": round(vfull, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
