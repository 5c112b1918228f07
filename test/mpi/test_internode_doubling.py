"""ARShim's recursive doubling among nodes (shim/paths/internode.h; docs/scale.md "Small calls at hundreds of nodes"):
the inter-node step ARSHIM_INTERNODE=auto gives the latency path's vectors and the multi-leader path's partitions of
up to 4 KiB. Runs on virtual nodes (ARSHIM_VIRTUAL_PPN), with ARSHIM_PHASE_TIMES=1 so that each rank's "phases"
trace event counts the steps that took it:
  - check_allreduce (results against values the program computes itself, every type and op, counts 0, 1, primes, in
    place, sub-communicators): the latency path on power-of-two and other node counts (2, 3, 5 and 6 nodes: the
    extra nodes folded in pairs first), at one rank per node (no node window) and on uneven nodes; the multi-leader
    path's small partitions (auto) and large ones (doubling forced); the library forced (no doubling);
  - check_same_bits: float and double sums whose bits depend on the order, and MIN/MAX over -0/+0 and NaN payloads:
    every rank gets the same bits (the program checks it; MIN/MAX up to 4 KiB, the sizes the latency path serves),
    and a rerun gives the same digest. (Mutations tried: leaving the folded-in nodes without the result fails both
    kinds; reducing each exchange in the order of the partners' own vectors first, not the lower block's, fails the
    MIN/MAX agreement: with NaNs of two payloads the result's payload is the first operand's.)

  python3 -m pytest -p arshim_plugin test/mpi/test_internode_doubling.py --build BUILD --flavor mpich|openmpi"""
import pytest

SAME_BITS = "test/reproducible/check_same_bits"
QUICK = ["--quick", "--large", 1021]  # the large case within the latency path's 4 KiB for 4-byte types

# name: np, ranks per node, path, settings, program arguments, whether steps take the doubling
CASES = {
    "latency, 2 nodes x 2": (4, 2, "latency", {}, QUICK, True),
    "latency, 3 nodes x 2": (6, 2, "latency", {}, QUICK + ["--subcomms"], True),
    "latency, 5 nodes x 1, no window": (5, 1, "latency", {}, QUICK + ["--subcomms", "--in-place-first"], True),
    "latency, 6 nodes x 1": (6, 1, "latency", {}, QUICK + ["--in-place-first"], True),
    "latency, uneven nodes 2 + 2 + 1": (5, 2, "latency", {}, QUICK + ["--subcomms"], True),
    "latency, library forced, 3 nodes x 2": (6, 2, "latency", {"ARSHIM_INTERNODE": "library"}, QUICK, False),
    "multileader, 3 nodes x 2, small partitions": (6, 2, "multileader", {"ARSHIM_LEADERS": 2}, QUICK, True),
    "multileader, doubling forced, uneven nodes 2 + 2 + 1, large partitions":
        (5, 2, "multileader", {"ARSHIM_LEADERS": 2, "ARSHIM_INTERNODE": "doubling"}, ["--quick", "--large", 300007],
         True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_results_are_right_and_steps_take_the_doubling_where_expected(harness, name):
    np, ppn, path, settings, args, doubling = CASES[name]
    harness.check_internode_steps(name, np, path, ppn, settings, args, "doubling_steps", doubling)


def same_bits(run):
    assert run.returncode == 0, run.describe()
    objects = run.program_objects("ranks")
    assert objects and objects[-1]["ok"], run.describe()  # every rank the same bits, each sum within its bound
    return objects[-1]["digest"]


@pytest.mark.parametrize("np, ppn", [(5, 1), (6, 2), (7, 2)], ids=["5 nodes x 1", "3 nodes x 2", "4 nodes 2+2+2+1"])
@pytest.mark.parametrize("minmax", [False, True], ids=["sum", "min-max"])
def test_every_rank_gets_the_same_bits_and_reruns_repeat_them(harness, np, ppn, minmax):
    env = {"ARSHIM_PATH": "latency", "ARSHIM_VIRTUAL_PPN": ppn}
    # MIN/MAX: the sizes the latency path serves (up to 4 KiB) must agree on every rank too (larger ones go native)
    args = ["--calls", 3] + (["--minmax", "--agree-up-to", 4096] if minmax else [])
    digests = {same_bits(harness.run(np, harness.program(SAME_BITS), args=args, env=env, timeout=300))
               for _ in range(2)}
    assert len(digests) == 1, digests
