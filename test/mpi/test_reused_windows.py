"""Node windows taken over from freed communicators (shim/paths/window_pool.h, ARSHIM_SHM_REUSE; docs/paths.md).
check_reused_windows makes and frees communicators of several shapes and checks every result on every rank; it runs
under the settings that change what is kept, and the trace's window_taken events say whether windows were taken over
(or, with ARSHIM_SHM_REUSE=off, that none was). check_random_comms then makes, uses and frees communicators of drawn
shapes in a drawn order (seeded alike on every rank) under forced paths and virtual nodes.

  python3 -m pytest -p arshim_plugin test/mpi/test_reused_windows.py --build BUILD --flavor mpich|openmpi"""
import pytest

PROGRAM = "test/mpi/check_reused_windows"
RANDOM_PROGRAM = "test/mpi/check_random_comms"

# name: np, whether windows are taken over, settings, program arguments
CASES = {
    "default np 2": (2, True, {}, []),
    "served from the first call, np 2": (2, True, {"ARSHIM_CONTEXT_AFTER": 1}, []),
    "multileader forced, 2 x 2 virtual nodes, two leaders":
        (4, True, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_LEADERS": 2}, []),
    "uneven nodes (2 + 1), from the first call": (3, True, {"ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_CONTEXT_AFTER": 1}, []),
    "multileader forced, a 64 KiB window cap, np 3": (3, True, {"ARSHIM_PATH": "multileader", "ARSHIM_SHM_MAX": "64K"}, []),
    "ARSHIM_SHM_REUSE=off": (2, False, {"ARSHIM_SHM_REUSE": "off", "ARSHIM_CONTEXT_AFTER": 1}, []),
    "MPI_THREAD_MULTIPLE": (2, True, {"ARSHIM_CONTEXT_AFTER": 1}, ["--multiple"]),
    "3 threads churning communicators of the same members at once, np 2":
        (2, True, {"ARSHIM_CONTEXT_AFTER": 1}, ["--threads", 3]),
    "3 threads, np 3, multileader forced": (3, True, {"ARSHIM_PATH": "multileader"}, ["--threads", 3, "--cycles", 25]),
}


def checks_out(run, key):
    assert run.returncode == 0, run.describe()
    out = run.program_json(key)
    assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()


@pytest.mark.parametrize("name", list(CASES))
def test_windows_of_freed_communicators_are_taken_over(harness, name):
    np, taken, env, args = CASES[name]
    run = harness.run(np, harness.program(PROGRAM), args=args, env=env, timeout=180)
    checks_out(run, "check_reused_windows")
    events = run.events("window_taken")
    if taken:
        assert events, f"{name}: no window was taken over\n{run.describe()}"
    else:
        assert not events, f"{name}: {len(events)} windows taken over, expected none"


# name: np, seed, settings
RANDOM = {
    "seed 1, np 4, 2 x 2 virtual nodes": (4, 1, {"ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_CONTEXT_AFTER": 2}),
    "seed 2, np 5, multileader forced": (5, 2, {"ARSHIM_PATH": "multileader"}),
    "seed 3, np 3, reproducible forced": (3, 3, {"ARSHIM_PATH": "reproducible"}),
    "seed 4, np 4, online tuning": (4, 4, {"ARSHIM_TUNE": "online", "ARSHIM_CONTEXT_AFTER": 1}),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_communicators(harness, name):
    np, seed, env = RANDOM[name]
    run = harness.run(np, harness.program(RANDOM_PROGRAM), args=[seed, 300], env=env, trace=False, timeout=180)
    checks_out(run, "check_random_comms")
