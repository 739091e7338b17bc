#!/usr/bin/python3
"""PyTorch reference for the MLP train step (784-256-256-10, ReLU, batch 128, float32,
cross-entropy, Adam lr 1e-3: zero_grad + forward + backward + step) and GEMM 512³ (torch.mm,
float32) in GFLOP/s, one thread unless --threads. Also the same step with plain SGD (lr 0.01)
and with Adam's foreach implementation (torch.optim.Adam(..., foreach=True)): PyTorch 1.13's
default Adam on CPU updates one parameter at a time, which here took about 4 ms of a 6 ms step;
foreach is its fastest Adam on CPU. Prints one JSON line (median wall time, and process CPU time
as *Cpu*); skips (one JSON line, exit 0) without python3-torch.

  /usr/bin/python3 bench/torch/mlp_step.py [--threads 1] [--budget 2]
"""
import argparse
import json
import os
import sys

import openblas_threads  # noqa: F401  (before torch: sizes OpenBLAS's own thread pool)

try:
    import torch
except ImportError:
    print(json.dumps({"bench": "torch-mlp", "skipped": "python3-torch is not installed"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import load_average, median_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=2.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    x = torch.rand(128, 784)
    y = torch.randint(0, 10, (128,))

    def timed(name, opt):
        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        ms, cpu, n = median_ms(step, budget_s=args.budget)
        print(f"MLP 784-256-256-10 batch 128 {name} step: {ms:.3f} ms wall, {cpu:.3f} ms CPU ({n} samples)", flush=True)
        return ms, cpu

    mlp_ms, mlp_cpu = timed("Adam", torch.optim.Adam(model.parameters(), lr=1e-3))
    foreach_ms, foreach_cpu = timed("Adam (foreach)", torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True))
    sgd_ms, sgd_cpu = timed("SGD", torch.optim.SGD(model.parameters(), lr=0.01))
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    out = torch.empty(512, 512)
    gemm_ms, gemm_cpu, n_gemm = median_ms(lambda: torch.mm(a, b, out=out), budget_s=args.budget)
    gflops = 2 * 512**3 / (gemm_ms * 1e-3) / 1e9
    gflops_cpu = 2 * 512**3 / (gemm_cpu * 1e-3) / 1e9
    print(f"GEMM 512³: {gemm_ms:.3f} ms wall ({gflops:.1f} GFLOP/s), {gemm_cpu:.3f} ms CPU ({gflops_cpu:.1f} GFLOP/s), {n_gemm} samples", flush=True)
    print(
        json.dumps(
            {
                "bench": "torch-mlp",
                "torch": torch.__version__,
                "threads": args.threads,
                "mlpStepMs": round(mlp_ms, 4),
                "mlpStepCpuMs": round(mlp_cpu, 4),
                "mlpAdamForeachMs": round(foreach_ms, 4),
                "mlpAdamForeachCpuMs": round(foreach_cpu, 4),
                "mlpSgdMs": round(sgd_ms, 4),
                "mlpSgdCpuMs": round(sgd_cpu, 4),
                "gemm512Ms": round(gemm_ms, 4),
                "gemm512Gflops": round(gflops, 2),
                "gemm512CpuMs": round(gemm_cpu, 4),
                "gemm512CpuGflops": round(gflops_cpu, 2),
                **load_average(),
            }
        )
    )


if __name__ == "__main__":
    main()
