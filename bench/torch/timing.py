"""Timing for the PyTorch reference benches: warm-up, then repeated samples until a time budget
(and a minimum count) is spent; the median in milliseconds."""
import statistics
import time


def median_ms(fn, budget_s=2.0, min_samples=10, warmup=3):
    for _ in range(warmup):
        fn()
    samples = []
    start = time.perf_counter()
    while len(samples) < min_samples or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3, len(samples)
