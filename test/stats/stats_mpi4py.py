#!/usr/bin/env python3
"""stats_mpi4py: known buffer allreduces from mpi4py, for test/stats/stats_test.py (per rank: 6 x 4 KiB float32
sums, 3 x 8 B int64 max; 5 more calls while MPI.Pcontrol(0) has paused collection). ARShim is preloaded, not
imported."""
import sys

import numpy as np
from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    errors = 0
    for _ in range(6):
        x = np.ones(1024, dtype=np.float32)
        y = np.empty_like(x)
        comm.Allreduce(x, y, op=MPI.SUM)
        errors += int(not np.all(y == size))
    for _ in range(3):
        v = np.array([comm.Get_rank()], dtype=np.int64)
        comm.Allreduce(MPI.IN_PLACE, v, op=MPI.MAX)
        errors += int(v[0] != size - 1)
    MPI.Pcontrol(0)
    for _ in range(5):
        v = np.zeros(2, dtype=np.float64)
        comm.Allreduce(MPI.IN_PLACE, v, op=MPI.SUM)
    MPI.Pcontrol(1)
    total = comm.reduce(errors, op=MPI.SUM, root=0)
    if comm.Get_rank() == 0:
        print(f"stats_mpi4py: {size} ranks, {'all results correct' if total == 0 else 'WRONG RESULTS'}")
    return 0 if comm.bcast(total == 0, root=0) else 1


if __name__ == "__main__":
    sys.exit(main())
