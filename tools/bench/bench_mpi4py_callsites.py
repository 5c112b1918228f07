#!/usr/bin/env python3
"""bench_mpi4py_callsites: what an mpi4py MPI_Allreduce costs, per call, from Python (docs/stats.md "Overhead").

Times `comm.Allreduce` of one float64 on MPI.COMM_SELF (no communication: what is left is mpi4py, the library and
ARShim) in repetitions of --iters calls and prints the median time per call. Run it once per configuration, e.g.
with and without Python call sites:

  mpirun.openmpi -n 1 python3 bench_mpi4py_callsites.py                                  # the library alone
  mpirun.openmpi -n 1 -x LD_PRELOAD=libarshim-openmpi.so -x ARSHIM_STATS=/tmp/s.json \\
                 -x ARSHIM_STATS_PYTHON=0 python3 bench_mpi4py_callsites.py                 # sites: mpi4py's module
  ... -x ARSHIM_STATS_PYTHON=1 ...                                                         # sites: Python lines

--thread adds a Python thread that spins (holds the GIL between switch intervals) during the timing.
"""
import argparse
import statistics
import sys
import threading
import time

import numpy as np
from mpi4py import MPI


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iters", type=int, default=20000, help="calls per repetition (default 20000)")
    parser.add_argument("--reps", type=int, default=11, help="repetitions; the median is reported (default 11)")
    parser.add_argument("--thread", action="store_true", help="a busy Python thread runs during the timing")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print every repetition's time per call")
    args = parser.parse_args()
    if args.iters < 1 or args.reps < 1:
        parser.error("--iters and --reps must be at least 1")
    comm = MPI.COMM_SELF
    x = np.ones(1, dtype=np.float64)
    y = np.empty_like(x)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin, daemon=True)
    if args.thread:
        spinner.start()
    for _ in range(1000):  # warm-up: the site's first call registers it
        comm.Allreduce(x, y, op=MPI.SUM)
    per_call = []
    for _ in range(args.reps):
        start = time.perf_counter_ns()
        for _ in range(args.iters):
            comm.Allreduce(x, y, op=MPI.SUM)
        per_call.append((time.perf_counter_ns() - start) / args.iters)
    stop.set()
    if args.verbose:
        print("per call, every repetition (ns): " + " ".join(f"{v:.0f}" for v in per_call))
    print(f"mpi4py Allreduce 8 B on COMM_SELF: median {statistics.median(per_call):.1f} ns per call "
          f"(min {min(per_call):.1f}, {args.reps} x {args.iters} calls{', busy thread' if args.thread else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
