"""No floating-point trap from ARShim (issue 56 item 2): a program that traps FE_INVALID, FE_DIVBYZERO and FE_OVERFLOW
(gfortran -ffpe-trap, feenableexcept) must not die of anything ARShim computes: a path, a kernel over finite data,
the start line, the finalize summary and statistics log. The finalize report used to convert the +-infinity of unused
communicator slots to int (undefined, raises FE_INVALID): SIGFPE in MPI_Finalize with ARSHIM_LOG=info or ARSHIM_STATS.

The test library fe_trap.c enables the traps in a constructor; check_allreduce (finite values only) runs under the
default and every forced path with the summary, the statistics log and the info log on. The control: the same run
natively must pass (the library itself raises nothing here), so a failure is ARShim's.

  python3 -m pytest -p arshim_plugin test/hardening/test_fp_traps.py --build BUILD --flavor mpich|openmpi"""
import os

import pytest

PROGRAM = "test/mpi/check_allreduce"
# hwloc (inside both MPIs' MPI_Init) parses topology XML with libxml2 on Debian 13, and libxml2 (its XPath NaN
# init there) raises FE_INVALID: a trapping program dies natively in MPI_Init there, before ARShim does anything.
# HWLOC_LIBXML=0 makes hwloc use its own XML code, so the control run passes and a trap left is ARShim's.
LIBRARY_QUIET = {"HWLOC_LIBXML": 0}
SETTINGS = dict(LIBRARY_QUIET, ARSHIM_LOG="info", ARSHIM_STATS_SUMMARY=1, ARSHIM_PHASE_TIMES=1)


def trap_lib(harness):
    return os.path.join(harness.build, "test", "hardening", "libarshim-test-fe-trap.so")


def checked(run):
    assert run.returncode == 0, run.describe()
    out = run.program_json("check_allreduce")
    assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()
    assert "Floating point exception" not in run.output and "SIGFPE" not in run.output, run.describe()


def test_the_library_alone_raises_no_trap(harness):
    checked(harness.run(2, harness.program(PROGRAM), args=["--quick"], shim=trap_lib(harness),
                        env=dict(LIBRARY_QUIET, CHECK_FLAVOR=harness.flavor), timeout=200))


@pytest.mark.parametrize("path", ["auto", "pipelined", "multileader", "latency", "reproducible"])
def test_arshim_raises_no_trap(harness, path):
    env = dict(SETTINGS, ARSHIM_VIRTUAL_PPN=2, CHECK_FLAVOR=harness.flavor)
    if path != "auto":
        env["ARSHIM_PATH"] = path
    run = harness.run(4, harness.program(PROGRAM), args=["--quick"], shim=f"{harness.shim()}:{trap_lib(harness)}",
                      env=env, stats=True, timeout=300)
    checked(run)
    assert run.stats["totals"]["calls"] > 0
