"""Timing for the PyTorch reference benches: warm-up, then repeated samples until a time budget
(and a minimum count) is spent. Returns the median wall time and the median process CPU time in
milliseconds: on a shared, oversubscribed machine wall time mostly measures waiting for a core,
while CPU time (one compute thread) stays close to the unloaded wall time."""
import os
import statistics
import time


def median_ms(fn, budget_s=2.0, min_samples=10, warmup=3):
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    start = time.perf_counter()
    while len(wall) < min_samples or time.perf_counter() - start < budget_s:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3, len(wall)


def load_average():
    """1-minute load average and core count, recorded with every result."""
    return {"loadAvg1m": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
