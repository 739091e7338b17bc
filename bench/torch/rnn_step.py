#!/usr/bin/python3
"""PyTorch reference for the recurrent step: nn.LSTM and nn.GRU (hidden 128, input 128, T 50,
batch 16, one layer, seq-first, float32), forward + backward of output.sum() (no optimizer), one
thread unless --threads. Prints one JSON line with the median ms of each (wall, and process CPU
time as *CpuMs); skips (one JSON line,
exit 0) without python3-torch.

  /usr/bin/python3 bench/torch/rnn_step.py [--threads 1] [--budget 2]
"""
import argparse
import json
import os
import sys

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import torch
except ImportError:
    print(json.dumps({"bench": "torch-rnn", "skipped": "python3-torch is not installed"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import load_average, median_ms  # noqa: E402

T, B, IN, HID = 50, 16, 128, 128


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=2.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    res = {"bench": "torch-rnn", "torch": torch.__version__, "threads": args.threads, "T": T, "batch": B, "input": IN, "hidden": HID, **load_average()}
    x = torch.randn(T, B, IN)
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        m = cls(IN, HID)

        def step(m=m):
            m.zero_grad(set_to_none=True)
            y, _ = m(x)
            y.sum().backward()

        ms, cpu, n = median_ms(step, budget_s=args.budget)
        with torch.no_grad():
            fwd_ms, fwd_cpu, _ = median_ms(lambda m=m: m(x), budget_s=args.budget / 2)
        res[f"{name}Ms"] = round(ms, 3)
        res[f"{name}CpuMs"] = round(cpu, 3)
        res[f"{name}FwdMs"] = round(fwd_ms, 3)
        res[f"{name}FwdCpuMs"] = round(fwd_cpu, 3)
        res[f"{name}Samples"] = n
        print(f"{name}: forward+backward {ms:.2f} ms wall, {cpu:.2f} ms CPU (forward only {fwd_ms:.2f} / {fwd_cpu:.2f}), {n} samples", flush=True)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
