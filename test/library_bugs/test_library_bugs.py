"""Known library bugs routed around (policy/library_bugs.cpp, docs/library-bugs.md): check_library_bugs calls every
entry's trigger at counts 1, 2, 17, 1000, in place, on world, a cold duplicate and a split. Under every forced path
at np 2 and 3 every result is right and the statistics log counts the calls computed with ARShim's kernels by entry;
left to the library (ARSHIM_LIBRARY_BUGS=ignore, native), the same program finds wrong results, so the test can fail.

  python3 -m pytest -p arshim_plugin test/library_bugs/test_library_bugs.py --build BUILD --flavor mpich|openmpi"""
import pytest

PROGRAM = "test/library_bugs/check_library_bugs"


def account(run):
    """The program's count of its calls and wrong results over all ranks: {"calls", "wrong"}."""
    out = run.program_json("library_bugs")
    assert out is not None, run.describe()
    return out


@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("path", ["auto", "pipelined", "multileader"])
def test_the_known_bugs_are_routed_around(harness, np, path):
    run = harness.run(np, harness.program(PROGRAM), env={"ARSHIM_PATH": path}, stats=True, trace=False)
    assert run.returncode == 0, run.describe()
    out = account(run)
    assert out["calls"] > 0 and out["wrong"] == 0, run.describe()
    # The statistics count the calls that hit a bug in force and were computed with ARShim's kernels (a library
    # version with none in force, such as MPICH 4.2.1, has none to count: its own results must be right).
    assert run.stats is not None, run.describe()
    assert sorted(run.stats["library_bugs"]) == harness.library_bugs_in_force(), run.stats["library_bugs"]
    if harness.library_bugs_in_force():
        assert sum(run.stats["library_bugs"].values()) > 0, run.stats["library_bugs"]


@pytest.mark.parametrize("np", [2, 3])
def test_the_library_alone_is_wrong_exactly_where_an_entry_is_in_force(harness, np):
    """The control: with the table ignored, the library's own reduction gives the wrong results the test above would
    see where the table has entries in force for this library version, and right ones where it has none (else the
    table misses a bug of this version)."""
    run = harness.run(np, harness.program(PROGRAM), env={"ARSHIM_PATH": "native", "ARSHIM_LIBRARY_BUGS": "ignore"},
                      stats=True, trace=False)
    out = account(run)
    if harness.library_bugs_in_force():
        assert out["wrong"] > 0, run.describe()
    else:
        assert out["wrong"] == 0, run.describe()
    assert run.stats["library_bugs"] == {}, run.stats["library_bugs"]
