"""The latency path (issue 43; docs/paths.md "The latency path"): back-to-back small calls alternating among three
communicators (test/mpi/check_sequence.c), each result checked on every rank by a value that encodes the call's
sequence number, on one node (np 2, and np 4 oversubscribed: waits that yield), on 2 x 2 and uneven 3 + 2 virtual nodes
(the leaders' library step and the result slot), in place or not; and the mutation checks: the same run with the path's
waits removed, or with one buffer of slots instead of two while ranks pause before reading (test hooks of the
test-only library), must report wrong sums.

  python3 -m pytest -p arshim_plugin test/mpi/test_latency.py --build BUILD --flavor mpich|openmpi"""
import re

import pytest

PROGRAM = "test/verify/check_sequence"  # built by test/verify/meson.build (beside the test-only library)


def wrong(run):
    m = re.search(r"check_sequence: (\d+) ranks, (\d+) calls of (\d+) element\(s\), (\d+) wrong", run.output)
    assert m, run.describe()
    return int(m.group(4))


def latency_calls(run):
    return {p["path"]: p["calls"] for p in run.stats["paths"]}.get("latency", 0)


@pytest.mark.parametrize("np_, env, calls, count", [
    (2, {}, 1000000, 1),
    (2, {}, 100000, 500),        # payload lines beyond the header's 56 bytes
    (4, {}, 100000, 1),          # oversubscribed: 4 ranks on 2 cores
    (4, {"ARSHIM_VIRTUAL_PPN": "2"}, 10000, 3),
    (5, {"ARSHIM_VIRTUAL_PPN": "3"}, 4000, 1),  # uneven nodes: 3 + 2 (MPICH oversubscribed: ~2 ms a call)
], ids=["np2-1M-calls", "np2-4000B", "np4-oversubscribed", "2x2-nodes", "3+2-nodes"])
def test_no_result_is_lost_or_reordered(harness, np_, env, calls, count):
    run = harness.run(np_, harness.program(PROGRAM), args=[calls, count], env={"ARSHIM_PATH": "latency", **env},
                      stats=True, trace=False, timeout=400)
    assert run.returncode == 0 and wrong(run) == 0, run.describe()
    # Every call of a warm communicator went the latency path (the duplicate's and the split's first calls are cold).
    assert latency_calls(run) >= np_ * (calls - 3 * 8), run.stats["paths"]


@pytest.mark.parametrize("buffers", ["two", "one"])
def test_the_sequence_check_sees_a_reused_slot(harness, buffers):
    """One communicator, so that a rank can run a whole call ahead of another on it, and ranks that pause between
    seeing the others' slots and reading them (the test library's `delay` kernels): with the path's two buffers no sum
    is wrong; with one (a test hook), the rank ahead overwrites its slot with the next call's value while the paused
    rank is still to read it, and the check must see wrong sums."""
    env = {"ARSHIM_PATH": "latency", "ARSHIMTEST_KERNEL_FAULT": "delay"}
    if buffers == "one":
        env["ARSHIMTEST_LATENCY_FAULT"] = "one-buffer"
    run = harness.run(2, harness.program(PROGRAM), args=[4000, 1, 1], shim=harness.shim("faulty"), env=env,
                      stats=True, trace=False, timeout=200)
    if buffers == "two":
        assert run.returncode == 0 and wrong(run) == 0, run.describe()
        assert latency_calls(run) >= 2 * (4000 - 8), run.stats["paths"]
    else:
        assert wrong(run) > 0, run.describe()
        assert run.returncode != 0


def test_the_sequence_check_sees_a_missing_wait(harness):
    run = harness.run(2, harness.program(PROGRAM), args=[100000, 1], shim=harness.shim("faulty"),
                      env={"ARSHIM_PATH": "latency", "ARSHIMTEST_KERNEL_FAULT": "none",
                           "ARSHIMTEST_LATENCY_FAULT": "no-wait"}, trace=False, timeout=200)
    assert wrong(run) > 0, run.describe()
    assert run.returncode != 0


@pytest.mark.parametrize("np_, ppn", [(4, "2"), (4, "1"), (5, "2")], ids=["2x2", "4x1", "2+2+1"])
def test_a_window_that_fails_on_one_rank_is_agreed_not_a_hang(harness, np_, ppn):
    """World rank 0's window fails (a test hook, ARSHIMTEST_FAIL_SHM=rank:0) while every other rank's is made: the
    path must decline on every rank alike, with nobody left in a collective the others skipped (the leaders' split
    once was skipped by a node whose window had failed, and the other nodes waited in it for ever), and the calls go
    to the library with right sums."""
    run = harness.run(np_, harness.program(PROGRAM), args=[200, 3], shim=harness.shim("faulty"),
                      env={"ARSHIM_PATH": "latency", "ARSHIM_VIRTUAL_PPN": ppn, "ARSHIMTEST_KERNEL_FAULT": "none",
                           "ARSHIMTEST_FAIL_SHM": "rank:0"}, stats=True, trace=False, timeout=120)
    assert run.returncode == 0 and wrong(run) == 0, run.describe()
    assert latency_calls(run) == 0, run.stats["paths"]
