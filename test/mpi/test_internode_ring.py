"""ARSHIM_INTERNODE (docs/cluster.md "Three nodes"): the multi-leader path's inter-node step on ARShim's ring. Every
run is check_allreduce (results checked against values the program computes itself, every type and op, in place,
sub-communicators) on virtual nodes of 2 ranks, multi-leader forced, with ARSHIM_PHASE_TIMES=1 so that each rank's
"phases" trace event counts its inter-node steps and those that took the ring:
  - auto on 3 nodes with a large case (partitions of >= 64 KiB): some steps on the ring;
  - auto on 2 nodes: none (a power of two: the library's allreduce);
  - ring forced on 2 nodes, and on uneven nodes (2 + 2 + 1 ranks: one leader each): steps on the ring, right
    results; library forced on 3 nodes: none;
  - one rank per node (PPN=1: no node window): auto on 3 nodes, the large calls round the ring over all ranks;
    forced on 2 and 5 nodes, every call (counts 0, 1, below the rank count, primes) round it.

  python3 -m pytest -p arshim_plugin test/mpi/test_internode_ring.py --build BUILD --flavor mpich|openmpi"""
import pytest

LARGE = ["--quick", "--large", 300007]

# name: np, ranks per node, whether steps take the ring, settings, program arguments
CASES = {
    "auto, 3 nodes x 2, large partitions": (6, 2, True, {"ARSHIM_LEADERS": 2}, LARGE),
    "auto, 2 nodes x 2": (4, 2, False, {"ARSHIM_LEADERS": 2}, LARGE),
    "library forced, 3 nodes x 2": (6, 2, False, {"ARSHIM_LEADERS": 2, "ARSHIM_INTERNODE": "library"}, LARGE),
    # One leader: a leader's partition is the whole chunk (up to 4 MiB where the leaders take the ring), so each ring
    # step moves half (2 nodes) or a third (3 nodes) of it.
    "auto, 3 nodes x 2, one leader, blocks in pieces": (6, 2, True, {"ARSHIM_LEADERS": 1}, LARGE),
    "ring forced, 2 nodes x 2, one leader, blocks in pieces":
        (4, 2, True, {"ARSHIM_LEADERS": 1, "ARSHIM_INTERNODE": "ring"}, LARGE),
    "ring forced, 3 nodes x 2, many chunks":
        (6, 2, True, {"ARSHIM_LEADERS": 2, "ARSHIM_INTERNODE": "ring", "ARSHIM_SHM_MAX": "64K"},
         ["--quick", "--subcomms", "--large", 20011]),
    "ring forced, 2 nodes x 2, pipeline_k 3":
        (4, 2, True, {"ARSHIM_LEADERS": 2, "ARSHIM_PIPELINE_K": 3, "ARSHIM_INTERNODE": "ring"},
         ["--quick", "--large", 20011]),
    "ring forced, uneven nodes 2 + 2 + 1": (5, 2, True, {"ARSHIM_LEADERS": 2, "ARSHIM_INTERNODE": "ring"},
                                            ["--quick", "--subcomms", "--large", 20011]),
    "auto, 3 nodes x 1, the whole call on the ring": (3, 1, True, {}, ["--quick", "--subcomms", "--large", 300007]),
    "ring forced, 2 nodes x 1, every count": (2, 1, True, {"ARSHIM_INTERNODE": "ring"},
                                              ["--quick", "--in-place-first", "--large", 20011]),
    "ring forced, 5 nodes x 1, every count": (5, 1, True, {"ARSHIM_INTERNODE": "ring"},
                                              ["--quick", "--subcomms", "--in-place-first", "--large", 20011]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_internode_steps_take_the_ring_where_expected(harness, name):
    np, ppn, ring, settings, args = CASES[name]
    harness.check_internode_steps(name, np, "multileader", ppn, settings, args, "ring_steps", ring)
