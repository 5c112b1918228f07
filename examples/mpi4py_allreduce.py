#!/usr/bin/env python3
"""mpi4py_allreduce: gradient-like numpy arrays through comm.Allreduce, with and without MPI.IN_PLACE,
checked against values computed locally. An ordinary mpi4py program: ARShim is preloaded, not imported.

    mpirun -n 4 python3 mpi4py_allreduce.py [--steps N]
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="training steps to simulate")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    layer_sizes = [3, 257, 4096, 65537, 1 << 20]  # elements per "layer"
    errors = 0
    calls = 0
    for step in range(args.steps):
        for n in layer_sizes:
            base = np.arange(n, dtype=np.float32) % 17
            grad = base * (rank + 1) + step
            out = np.empty_like(grad)
            comm.Allreduce(grad, out, op=MPI.SUM)
            calls += 1
            want = base * (size * (size + 1) // 2) + step * size
            errors += int(not np.array_equal(out, want))
            # in place, float64
            g64 = grad.astype(np.float64)
            comm.Allreduce(MPI.IN_PLACE, g64, op=MPI.SUM)
            calls += 1
            errors += int(not np.array_equal(g64, want.astype(np.float64)))
        counts = np.array([rank, 1], dtype=np.int64)
        comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.MAX)
        calls += 1
        errors += int(counts[0] != size - 1 or counts[1] != 1)
    total = comm.allreduce(errors, op=MPI.SUM)  # pickled object path, not the buffer one
    if rank == 0:
        status = "all results correct" if total == 0 else f"{total} WRONG RESULTS"
        print(f"mpi4py_allreduce: {size} ranks, {calls} buffer allreduce calls per rank, {status}")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
