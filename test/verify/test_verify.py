"""Verify mode and the argument check (docs/verify.md), asserted on data: the programs' exit status and JSON lines
(check_verify's wrong results, check_args' outcome on each rank), the statistics log's "verify" and "argument_check"
sections, and the trace's verify_difference and argument_mismatch events.

  - the real library, every path forced: verify mode compares exactly ARSHIM_VERIFY calls per key and finds no
    mismatch; reassociated sums (the n-ary kernels in reverse order) differ from the library's but are no mismatch;
  - the faulty kernels (test-only library): verify mode finds the mismatch on every path that uses ARShim's kernels and
    leaves the user's (wrong) result as the path delivered it; ARSHIM_STRICT=1 ends the job;
  - the argument check: every kind of mismatch, every path, np 2 and 3: every rank returns MPI_ERR_ARG within a second
    (verify mode includes the check; uneven nodes; the fatal error handler ends the job).

  python3 -m pytest -p arshim_plugin test/verify/test_verify.py --build BUILD --flavor mpich|openmpi"""
import os
import subprocess
import sys
import time

import pytest

VERIFY_PROGRAM = "test/verify/check_verify"
ARGS_PROGRAM = "test/verify/check_args"
REPORT = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "report", "arshim_report.py")
CALLS, VERIFY, KEYS = 10, 3, 6  # check_verify's two double SUMs of 1000 elements are one key


def scenario(harness, name):
    """np and settings of each forced path verify mode is run under."""
    sharp = os.path.join(harness.build, "test", "sharp", "libsharp_coll.so")
    return {
        "pipelined": (3, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "1K", "ARSHIM_KERNEL_FOR_MPI": "simd"}),
        "multileader": (3, {"ARSHIM_PATH": "multileader"}),
        "multileader-2x2": (4, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": "2", "ARSHIM_LEADERS": "2"}),
        "sharp-2x2": (4, {"ARSHIM_PATH": "sharp", "ARSHIM_SHARP": "on", "ARSHIM_SHARP_LIB": sharp,
                          "ARSHIM_VIRTUAL_PPN": "2"}),
    }[name]


def wrong_results(run):
    out = run.program_json("check_verify")
    assert out is not None, run.describe()
    assert out["checked"] > 0, out
    return out["wrong"]


def mismatches(run):
    """verify_difference events of calls whose difference is no known library bug (a mismatch)."""
    return [e for e in run.events("verify_difference") if not e["library_bug"]]


PATHS = ["pipelined", "multileader", "multileader-2x2", "sharp-2x2"]


@pytest.mark.parametrize("name", PATHS)
def test_the_real_library_shows_no_mismatch(harness, name):
    np, env = scenario(harness, name)
    run = harness.run(np, harness.program(VERIFY_PROGRAM), args=["--calls", CALLS],
                      env={**env, "ARSHIM_VERIFY": VERIFY}, stats=True)
    assert run.returncode == 0, run.describe()
    assert wrong_results(run) == 0, run.describe()
    verify = run.stats["verify"]
    assert verify["enabled"] and verify["calls_per_key"] == VERIFY, verify
    assert verify["calls"] == VERIFY * KEYS * np and verify["mismatches"] == 0, verify
    assert not mismatches(run), mismatches(run)


@pytest.mark.parametrize("name", PATHS)
def test_faulty_kernels_are_found_and_the_result_left_as_delivered(harness, name):
    np, env = scenario(harness, name)
    run = harness.run(np, harness.program(VERIFY_PROGRAM), args=["--calls", CALLS], shim=harness.shim("faulty"),
                      env={**env, "ARSHIM_VERIFY": VERIFY}, stats=True)
    found = mismatches(run)
    assert found, run.describe()
    # What the log's MISMATCH line names: a SUM of one of the faulty kernels' types, the rank range that differs, and
    # on the ranks that differ, the first element and the path.
    assert all(e["op"] == "MPI_SUM" and e["datatype"] in ("MPI_DOUBLE", "MPI_INT", "MPI_FLOAT",
                                                           "MPI_C_DOUBLE_COMPLEX") for e in found), found
    assert all(0 <= e["lowest_rank"] <= e["highest_rank"] < np and not e["strict_abort"] for e in found), found
    differing = [e for e in found if e["differs_here"]]
    assert differing and all(e["first_element"] >= 0 and e["path"] != "native" for e in differing), found
    assert run.stats is not None and run.stats["verify"]["mismatches"] > 0, run.describe()
    # Verify mode reports; it does not repair: the program sees the faulty path's wrong results.
    assert wrong_results(run) > 0, run.describe()


def test_reassociated_sums_differ_but_are_no_mismatch(harness):
    run = harness.run(3, harness.program(VERIFY_PROGRAM), args=["--calls", CALLS], shim=harness.shim("faulty"),
                      env={"ARSHIMTEST_KERNEL_FAULT": "reverse", "ARSHIM_PATH": "multileader",
                           "ARSHIM_VERIFY": VERIFY}, stats=True)
    verify = run.stats["verify"] if run.stats else None
    assert verify and verify["calls"] > 0 and verify["mismatches"] == 0, run.describe()
    assert verify["worst_relative_difference"] > 0, verify  # results did differ from the library's
    assert not mismatches(run), mismatches(run)


def test_the_statistics_log_and_the_report_carry_the_counts(harness, tmp_path):
    run = harness.run(3, harness.program(VERIFY_PROGRAM), args=["--calls", 3], shim=harness.shim("faulty"),
                      env={"ARSHIM_PATH": "multileader", "ARSHIM_VERIFY": 2, "ARSHIM_CHECK_ARGS": 1}, stats=True,
                      directory=str(tmp_path))
    assert run.stats is not None, run.describe()
    v, a = run.stats["verify"], run.stats["argument_check"]
    assert v["enabled"] and v["calls_per_key"] == 2 and v["calls"] == 2 * 6 * 3 and v["mismatches"] > 0, v
    assert a["enabled"] and a["calls"] == 7 * 3 * 3 and a["mismatches"] == 0, a
    # The report tool validates the log and shows the correctness section (a test of the tool's own sentences).
    log = str(tmp_path / "stats.json")
    # The summary's lines (the checks among them) come from the library's own formatter, arshim-stats-summary.
    summary_program = os.path.join(harness.build, "tools", "report", "arshim-stats-summary")
    for extra in (["--validate"], []):
        report = subprocess.run([sys.executable, REPORT, "--summary-program", summary_program] + extra + [log],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert report.returncode == 0, report.stdout
    assert "verify: 36 calls compared" in report.stdout, report.stdout
    assert "argument check: 63 calls checked (summed over ranks), 0 with" in report.stdout, report.stdout


def test_strict_mode_ends_the_job_on_a_mismatch(harness):
    run = harness.run(3, harness.program(VERIFY_PROGRAM), args=["--calls", 2], shim=harness.shim("faulty"),
                      env={"ARSHIM_PATH": "multileader", "ARSHIM_VERIFY": 1, "ARSHIM_STRICT": 1}, timeout=60)
    assert run.returncode != 0, run.describe()
    assert [e for e in mismatches(run) if e["strict_abort"]], run.describe()
    assert run.program_json("check_verify") is None, run.describe()  # ended before the program's summary


def test_the_defaults_verify_and_check_nothing(harness):
    run = harness.run(2, harness.program(VERIFY_PROGRAM), args=["--calls", 2], stats=True)
    assert run.returncode == 0 and wrong_results(run) == 0, run.describe()
    v, a = run.stats["verify"], run.stats["argument_check"]
    assert not v["enabled"] and v["calls"] == 0, v
    assert not a["enabled"] and a["calls"] == 0, a


def check_args(harness, np, mismatch, env, errors="return"):
    """Runs check_args; returns the run and each rank's outcome (rank -> its JSON line)."""
    run = harness.run(np, harness.program(ARGS_PROGRAM), args=["--mismatch", mismatch, "--errors", errors], env=env,
                      timeout=60)
    return run, {o["rank"]: o for o in run.program_jsons("check_args")}


def expected(mismatch):
    return "MPI_SUCCESS" if mismatch in ("legal", "none") else "MPI_ERR_ARG"


def assert_every_rank(run, ranks, np, mismatch, within=None):
    assert run.returncode == 0, run.describe()
    assert sorted(ranks) == list(range(np)), run.describe()
    for o in ranks.values():
        assert o["outcome"] == expected(mismatch), run.describe()
        assert o["right"] and o["comm_works"], run.describe()
        if within is not None:
            assert o["seconds"] < within, run.describe()


@pytest.mark.parametrize("mismatch", ["count", "datatype", "op", "inplace", "legal", "none"])
@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("path", ["auto", "pipelined", "multileader"])
def test_argument_check_returns_an_error_on_every_rank(harness, path, np, mismatch):
    run, ranks = check_args(harness, np, mismatch, {"ARSHIM_CHECK_ARGS": 1, "ARSHIM_PATH": path})
    assert_every_rank(run, ranks, np, mismatch, within=1.0)
    events = run.events("argument_mismatch", 0)  # rank 0's report of the mismatch
    if expected(mismatch) == "MPI_ERR_ARG":
        assert events, run.describe()
    else:
        assert not run.events("argument_mismatch"), run.events("argument_mismatch")


@pytest.mark.parametrize("mismatch", ["count", "none"])
def test_verify_mode_includes_the_argument_check(harness, mismatch):
    """Issue 41: ARSHIM_VERIFY with ranks passing different counts hung under MPICH, np 3, multileader."""
    run, ranks = check_args(harness, 3, mismatch, {"ARSHIM_VERIFY": 2, "ARSHIM_PATH": "multileader"})
    assert_every_rank(run, ranks, 3, mismatch)


@pytest.mark.parametrize("mismatch", ["none", "count"])
def test_argument_check_on_uneven_nodes(harness, mismatch):
    """2 + 1 ranks: the check's own reduction takes the same route on every rank (it hung when a rank alone on its
    node took another)."""
    run, ranks = check_args(harness, 3, mismatch, {"ARSHIM_CHECK_ARGS": 1, "ARSHIM_VIRTUAL_PPN": 2})
    assert_every_rank(run, ranks, 3, mismatch)


def test_the_fatal_error_handler_ends_the_job_with_the_report(harness):
    start = time.monotonic()
    run, _ = check_args(harness, 3, "count", {"ARSHIM_CHECK_ARGS": 1, "ARSHIM_PATH": "multileader"}, errors="fatal")
    assert run.returncode != 0, run.describe()
    assert run.events("argument_mismatch", 0), run.describe()
    assert time.monotonic() - start <= 30, run.describe()
