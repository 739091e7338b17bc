"""PyTorch's GPT training step as a server for paired benchmarks (bench/gpt-paired.ts): the model,
optimiser and data of gpt.py on one thread; each line "N" on stdin runs N steps and prints one JSON
line with the process-CPU ms of each. Skips (one JSON line) without python3-torch.

  /usr/bin/python3 bench/torch/gpt_steps.py
"""
import gzip
import json
import os
import sys
import time

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import torch
except ImportError:
    print(json.dumps({"skipped": "python3-torch is not installed"}), flush=True)
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import BATCH, BETAS, CLIP, CONTEXT, DATA_CANDIDATES, HEADS, LAYERS, LR, WD, WIDTH, batch  # noqa: E402
from gpt_model import GPT, decay_groups, gpt2_init  # noqa: E402

F = torch.nn.functional


def main():
    path = next((p for p in DATA_CANDIDATES if os.path.exists(p)), None)
    if path is None:
        print(json.dumps({"skipped": "tinyshakespeare.txt.gz not found"}), flush=True)
        return
    torch.set_num_threads(1)
    torch.manual_seed(0)
    text = gzip.open(path, "rt", encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    train = data[: int(0.9 * len(data))]
    vocab = len(chars)
    model = GPT(vocab, WIDTH, LAYERS, HEADS, CONTEXT)
    gpt2_init(model, LAYERS, seed=0)
    opt = torch.optim.AdamW(decay_groups(model, WD), lr=LR, betas=BETAS)
    gen = torch.Generator().manual_seed(1)
    print(json.dumps({"ready": torch.__version__}), flush=True)
    for line in sys.stdin:
        cpu = []
        for _ in range(int(line)):
            x, y = batch(train, gen)
            c0 = time.process_time()
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            opt.step()
            cpu.append((time.process_time() - c0) * 1e3)
        print(json.dumps({"cpuMs": cpu}), flush=True)


if __name__ == "__main__":
    main()
