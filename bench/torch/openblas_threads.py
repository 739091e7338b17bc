"""Imported before torch by every reference script. OpenBLAS sizes a thread pool of its own from
OPENBLAS_NUM_THREADS when it loads, and torch.set_num_threads does not resize it: unset, the
GEMMs of a "one-thread" step ran on both cores of the development VM (the GPT step unpinned:
50.6 ms of wall time, 101 ms of CPU time), and pinned to one core its idle threads took turns
with the compute thread. So the count is the script's --threads (1 by default), unless the
environment already sets it."""
import os
import sys

_argv = sys.argv[1:]
THREADS = _argv[_argv.index("--threads") + 1] if "--threads" in _argv[:-1] else "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", THREADS)
