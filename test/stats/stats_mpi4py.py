#!/usr/bin/env python3
"""stats_mpi4py: known buffer allreduces from mpi4py, for test/stats/stats_test.py. ARShim is preloaded, not
imported. Per rank:

  sums()           6 x 4 KiB float32 sums          (line marked "site: sums")
  max_in_place()   3 x 8 B int64 max, MPI.IN_PLACE   (line marked "site: max")
  worker thread    4 x 16 B float64 sums, while the main thread runs Python (holds the GIL)  ("site: thread")
  module level     1 x 8 B int64 sum                 ("site: module")
  comm.allreduce   2 pickle-based reductions (mpi4py 3.x: point to point and bcast, no MPI_Allreduce)
                   ("site: pickle")
  5 more calls while MPI.Pcontrol(0) has paused collection.

The call-site lines are found by the test through the "site:" markers.
"""
import sys
import threading

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
size = comm.Get_size()
errors = 0


def sums():
    global errors
    for _ in range(6):
        x = np.ones(1024, dtype=np.float32)
        y = np.empty_like(x)
        comm.Allreduce(x, y, op=MPI.SUM)  # site: sums
        errors += int(not np.all(y == size))


def max_in_place():
    global errors
    for _ in range(3):
        v = np.array([comm.Get_rank()], dtype=np.int64)
        comm.Allreduce(MPI.IN_PLACE, v, op=MPI.MAX)  # site: max
        errors += int(v[0] != size - 1)


def worker(results):
    for _ in range(4):
        v = np.ones(2, dtype=np.float64)
        comm.Allreduce(MPI.IN_PLACE, v, op=MPI.SUM)  # site: thread
        results.append(bool(np.all(v == size)))


def in_a_thread():
    """The worker's captures must take the GIL from a main thread that is busy in Python."""
    global errors
    results = []
    thread = threading.Thread(target=worker, args=(results,))
    thread.start()
    spins = 0
    while thread.is_alive():
        spins += 1
    thread.join()
    errors += int(results != [True] * 4)


def pickled():
    global errors
    for _ in range(2):
        total = comm.allreduce(comm.Get_rank(), op=MPI.SUM)  # site: pickle
        errors += int(total != size * (size - 1) // 2)


sums()
max_in_place()
in_a_thread()
one = np.ones(1, dtype=np.int64)
comm.Allreduce(MPI.IN_PLACE, one, op=MPI.SUM)  # site: module
errors += int(one[0] != size)
pickled()

MPI.Pcontrol(0)
for _ in range(5):
    paused = np.zeros(2, dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, paused, op=MPI.SUM)
MPI.Pcontrol(1)

total = comm.reduce(errors, op=MPI.SUM, root=0)
if comm.Get_rank() == 0:
    print(f"stats_mpi4py: {size} ranks, {'all results correct' if total == 0 else 'WRONG RESULTS'}")
sys.exit(0 if comm.bcast(total == 0, root=0) else 1)
