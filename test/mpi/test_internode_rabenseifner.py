"""ARShim's reduce-scatter + allgather among nodes (shim/paths/internode.h rabenseifner_allreduce; docs/scale.md
"Third pass"): the inter-node step ARSHIM_INTERNODE=auto gives the multi-leader path's partitions from 8 nodes where
Open MPI's own rules would send the whole partition at every step, forced here on a few virtual nodes
(ARSHIM_VIRTUAL_PPN) with ARSHIM_PHASE_TIMES=1, so that each rank's "phases" trace event counts the steps that took
it:
  - check_allreduce (results against values the program computes itself, every type and op, counts 0, 1, primes, in
    place, sub-communicators): the latency path at one rank per node on 5 nodes (one pair folded in and out; most
    vectors hold fewer elements than the 4 blocks, so some blocks are empty), the multi-leader path on a power of two
    of nodes and on uneven nodes 2 + 2 + 1 with large partitions; under auto on 3 nodes it is never taken (below 8);
  - check_same_bits: float and double sums whose bits depend on the order, and MIN/MAX over -0/+0 and NaN payloads:
    every rank gets the same bits and a rerun gives the same digest. Each block is reduced by one member and copied
    to the others, so the ranks agree whatever order a step reduces in; the order fixed by the layout is what makes
    reruns repeat.

  python3 -m pytest -p arshim_plugin test/mpi/test_internode_rabenseifner.py --build BUILD --flavor mpich|openmpi"""
import pytest

SAME_BITS = "test/reproducible/check_same_bits"
FORCED = {"ARSHIM_INTERNODE": "rabenseifner"}

# name: np, ranks per node, path, settings, program arguments, whether steps take ARShim's reduce-scatter + allgather
CASES = {
    "latency, 5 nodes x 1, no window": (5, 1, "latency", FORCED, ["--quick", "--large", 1021, "--subcomms",
                                                                  "--in-place-first"], True),
    "multileader, 2 nodes x 2, two leaders": (4, 2, "multileader", {**FORCED, "ARSHIM_LEADERS": 2},
                                              ["--quick", "--large", 100003], True),
    "multileader, uneven nodes 2 + 2 + 1, large partitions":
        (5, 2, "multileader", {**FORCED, "ARSHIM_LEADERS": 2}, ["--quick", "--large", 300007, "--subcomms"], True),
    "multileader, auto, 3 nodes x 2": (6, 2, "multileader", {"ARSHIM_LEADERS": 2}, ["--quick", "--large", 300007],
                                       False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_results_are_right_and_steps_take_it_where_expected(harness, name):
    np, ppn, path, settings, args, taken = CASES[name]
    harness.check_internode_steps(name, np, path, ppn, settings, args, "rabenseifner_steps", taken)


@pytest.mark.parametrize("minmax", [False, True], ids=["sum", "min-max"])
def test_every_rank_gets_the_same_bits_and_reruns_repeat_them(harness, minmax):
    """3 nodes x 2 (one pair of nodes folded), two leaders: each leader's partition goes through the step."""
    env = {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": 2, "ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_PHASE_TIMES": 1,
           **FORCED}
    args = ["--calls", 3] + (["--minmax"] if minmax else [])
    digests = set()
    for _ in range(2):
        run = harness.run(6, harness.program(SAME_BITS), args=args, env=env, timeout=300)
        assert run.returncode == 0, run.describe()
        objects = run.program_objects("ranks")
        assert objects and objects[-1]["ok"], run.describe()  # every rank the same bits, each sum within its bound
        assert run.trace_totals("phases", "rabenseifner_steps") > 0, run.events("phases")
        digests.add(objects[-1]["digest"])
    assert len(digests) == 1, digests
