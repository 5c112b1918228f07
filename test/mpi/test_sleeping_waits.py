"""Sleeping waits of the node protocol across nodes (ARSHIM_SLEEP_AFTER_US, shim/paths/node_shm.h wait_sleeping; docs/
cluster.md): a rank that has waited that long sleeps on a futex until the rank it waits for publishes. Here every wait
sleeps at once (1 us), and the test library makes the safety-net timeout 100 s instead of 2 ms, so a publisher that
does not wake its sleepers stalls the run past its time limit instead of costing 2 ms. check_allreduce's results are
verified on every rank; ARSHIM_PHASE_TIMES makes every rank's "phases" trace event count the waits that slept, so the
test cannot pass without sleeping.

  python3 -m pytest -p arshim_plugin test/mpi/test_sleeping_waits.py --build BUILD --flavor mpich|openmpi"""
import pytest

PROGRAM = "test/mpi/check_allreduce"

# name: np, settings. 2 x 2 and 3 x 2 virtual nodes with a 64 KiB window (many chunks, an inter-node step each), one
# and two leaders; the reproducible chain on 2 x 2 (its stores wake as well).
CASES = {
    "multileader 2 x 2, two leaders": (4, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": 2, "ARSHIM_SHM_MAX": "64K",
                                           "CHECK_EXPECT_PATH": "multileader"}),
    "multileader 3 x 2, one leader": (6, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": 1, "ARSHIM_SHM_MAX": "64K",
                                          "CHECK_EXPECT_PATH": "multileader"}),
    "reproducible chain 2 x 2, then the multi-leader path on its window":
        (4, {"ARSHIM_REPRODUCIBLE": "layout", "ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": 2,
             "ARSHIM_SHM_MAX": "64K"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sleeping_waits_are_woken(harness, name):
    np, settings = CASES[name]
    env = {"ARSHIMTEST_KERNEL_FAULT": "none", "ARSHIMTEST_SLEEP_TIMEOUT_MS": 100000, "ARSHIM_SLEEP_AFTER_US": 1,
           "ARSHIM_PHASE_TIMES": 1, "ARSHIM_VIRTUAL_PPN": 2, "CHECK_FLAVOR": harness.flavor, "CHECK_EXPECT_SHIM": 1,
           **settings}
    run = harness.run(np, harness.program(PROGRAM), args=["--quick", "--large", 20011], shim=harness.shim("faulty"),
                      env=env, timeout=90)
    # Exit 124: the run stalled (a sleeping rank never woken); 1: a wrong result.
    assert run.returncode == 0, run.describe()
    out = run.program_json("check_allreduce")
    assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()
    assert run.trace_totals("phases", "sleeps") > 0, f"no wait slept: {run.events('phases')}"
