"""The independent checker (allreduce_checker.cpp: no code shared with ARShim or the other tests): every predefined
datatype x allowed op, counts 0..20000, in place and not, under the default settings at np 2, 3 and 4, on the world, a
split (ranks reversed) and a duplicated communicator: no wrong result. And the control: the library alone gives wrong
results (its known bugs), so the checker can fail. Pass or fail is the program's exit status and its own JSON line.

  python3 -m pytest -p arshim_plugin test/checker/test_checker.py --build BUILD --flavor mpich|openmpi"""
import pytest

PROGRAM = "test/checker/allreduce_checker"


def checked(run):
    """The checker's account of the run: {"cases", "wrong", "np", "comm"}."""
    out = run.program_json("checker")
    assert out is not None, run.describe()
    return out


@pytest.mark.parametrize("np", [2, 3, 4])
@pytest.mark.parametrize("comm", ["world", "split", "dup"])
def test_no_wrong_result_under_the_default_settings(harness, np, comm):
    run = harness.run(np, harness.program(PROGRAM), args=["--comm", comm, "--show", "10"], trace=False, timeout=240)
    assert run.returncode == 0, run.describe()
    out = checked(run)
    assert (out["np"], out["comm"]) == (np, comm), out
    assert out["cases"] > 0 and out["wrong"] == 0, run.describe()


def test_the_library_alone_gives_wrong_results_where_an_entry_is_in_force(harness):
    """The control: without ARShim the library's known bugs give wrong results, which the checker finds; a library
    version with no entry in force (MPICH 4.2.1, 5.0.2) gives none (else ARShim's table misses a bug of it)."""
    run = harness.run(2, harness.program(PROGRAM), args=["--show", "0"], shim=False)
    out = checked(run)
    if not harness.library_bugs_in_force():
        assert out["cases"] > 0 and out["wrong"] == 0 and run.returncode == 0, run.describe()
        return
    assert out["cases"] > 0 and out["wrong"] > 0, run.describe()
    assert run.returncode != 0, run.describe()
