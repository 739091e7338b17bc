#!/usr/bin/python3
"""PyTorch reference for the Fashion-MNIST CNN (what `adjoint train --dataset fashion-mnist --model
cnn` builds: conv 5×5 1→16 pad 2, ReLU, max-pool 2, conv 5×5 16→32 pad 2, ReLU, max-pool 2,
linear 1568→10; Adam lr 1e-3, batch 128, cross-entropy), float32, one thread unless --threads.
Times the train step (zero_grad + forward + backward + step) on real batches as the median of
repeated samples, and with --epochs N also trains N whole epochs (469 steps, the last of 96 rows)
and reports their wall and CPU seconds. Prints one JSON line last; skips (one JSON line, exit 0)
without python3-torch or without the data.

  /usr/bin/python3 bench/torch/fashion_cnn.py [--threads 1] [--budget 3] [--epochs 0]
        [--data /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import json
import os
import sys
import time

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import numpy as np
    import torch
except ImportError:
    print(json.dumps({"bench": "torch-fashion-cnn", "skipped": "python3-torch is not installed"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import load_average, median_ms  # noqa: E402

BATCH = 128


def idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=3.0)
    ap.add_argument("--epochs", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    images = os.path.join(args.data, "train-images-idx3-ubyte.gz")
    if not os.path.exists(images):
        print(json.dumps({"bench": "torch-fashion-cnn", "skipped": f"no Fashion-MNIST data at {args.data}"}))
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x_all = torch.from_numpy(idx(images, 16).astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    y_all = torch.from_numpy(idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz"), 8).astype(np.int64))
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = x_all.shape[0]
    steps = (n + BATCH - 1) // BATCH

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()

    order = torch.randperm(n)
    k = [0]

    def timed_step():
        i = (k[0] % (steps - 1)) * BATCH
        k[0] += 1
        sel = order[i:i + BATCH]
        step(x_all[sel], y_all[sel])

    step_ms, step_cpu, samples = median_ms(timed_step, budget_s=args.budget)
    print(f"Fashion CNN batch {BATCH} Adam step: {step_ms:.3f} ms wall, {step_cpu:.3f} ms CPU ({samples} samples)", flush=True)
    out = {
        "bench": "torch-fashion-cnn",
        "torch": torch.__version__,
        "threads": args.threads,
        "stepMs": round(step_ms, 4),
        "stepCpuMs": round(step_cpu, 4),
        "stepsPerEpoch": steps,
        **load_average(),
    }
    if args.epochs > 0:
        walls, cpus = [], []
        for e in range(args.epochs):
            perm = torch.randperm(n)
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(0, n, BATCH):
                sel = perm[i:i + BATCH]
                step(x_all[sel], y_all[sel])
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            print(f"epoch {e + 1}: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU", flush=True)
        out["epochSec"] = [round(w, 3) for w in walls]
        out["epochCpuSec"] = [round(c, 3) for c in cpus]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
