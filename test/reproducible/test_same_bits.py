"""Same job, same bits (issue 41; docs/reproducible.md): under the default settings a job rerun on the same layout
gives bit-identical results, as the library does, even when timing noise would steer online tuning's guard elsewhere.
A test hook forces guard's decisions to differ between runs (the library or ARShim's path made to look 100 ms slower);
the digests of every float and double SUM result (test/reproducible/check_same_bits.c) must not change, and must equal
the library's wherever the route is the library's.

  python3 -m pytest -p arshim_plugin test/reproducible/test_same_bits.py --build BUILD --flavor mpich|openmpi"""

import pytest

PROGRAM = "test/reproducible/check_same_bits"
# Alternate hooks: the library looks slow (guard would keep ARShim's path), or ARShim's one-leader and two-leader node
# paths look slow (guard would take the library's allreduce).
HOOKS = [{"ARSHIMTEST_TUNE_SLOW_NATIVE": "1"}, {"ARSHIMTEST_TUNE_SLOW_LEADERS": "1"},
         {"ARSHIMTEST_TUNE_SLOW_NATIVE": "1"}, {"ARSHIMTEST_TUNE_SLOW_LEADERS": "2"},
         {"ARSHIMTEST_TUNE_SLOW_NATIVE": "1"}]


def result(run):
    assert run.returncode == 0, run.describe()
    objects = run.program_objects("ranks")
    assert objects, run.describe()
    out = objects[-1]
    assert out["ok"], run.describe()
    return out


def library_keys(run):
    """The keys (type, size) every call of which went to the library: the policy chose native for them."""
    keys = set()
    for event in run.events("decision", 0):
        if event["decision"]["path"] == "native" and event["op"] == "MPI_SUM":
            kind = "float" if event["datatype"] == "MPI_FLOAT" else "double"
            keys.add(f"{kind} {event['bytes']}")
    return keys


@pytest.mark.parametrize("layout", ["one node", "2 virtual nodes"])
def test_reruns_give_the_same_bits_whatever_guard_would_choose(harness, layout):
    env = {"ARSHIM_VIRTUAL_PPN": "2"} if layout == "2 virtual nodes" else {}
    native = result(harness.run(4, harness.program(PROGRAM), shim=False, env=env))
    digests, runs = set(), []
    for hook in HOOKS:
        run = harness.run(4, harness.program(PROGRAM), shim=harness.shim("faulty"),
                          env={**env, "ARSHIMTEST_KERNEL_FAULT": "none", "ARSHIM_TUNE_AFTER": "1", **hook},
                          timeout=180)  # guard explores every key it may, from its first call
        out = result(run)
        digests.add(out["digest"])
        runs.append((run, out))
    assert len(digests) == 1, [(h, o["keys"]) for h, (_, o) in zip(HOOKS, runs)]
    # Where the library serves the key, ARShim's results are the library's, bit for bit.
    for run, out in runs:
        for key in library_keys(run):
            assert out["keys"][key] == native["keys"][key], (key, out["keys"][key], native["keys"][key])
    # The default explored nothing it could not give the same bits for: no float or double SUM was tuned.
    for run, _ in runs:
        assert not [e for e in run.events("tuned") if e["datatype"] == "float" and e["op"] == "sum"], run.events("tuned")


def test_on_two_ranks_guard_explores_float_sums_and_every_route_gives_the_librarys_bits(harness):
    """Two values sum to the same bits in either order (shim/core/router.h order_sensitive): on a communicator of two
    ranks guard times the library against ARShim's paths for float and double sums too, and keeps the faster. Whichever
    route the timings pick, every key's bits are the library's."""
    native = result(harness.run(2, harness.program(PROGRAM), shim=False))
    chosen = set()
    for hook in (HOOKS[0], HOOKS[3]):  # the library made to look slow, then ARShim's two-leader node path
        run = harness.run(2, harness.program(PROGRAM), shim=harness.shim("faulty"),
                          env={"ARSHIMTEST_KERNEL_FAULT": "none", "ARSHIM_TUNE_AFTER": "1", **hook}, timeout=180)
        out = result(run)
        assert out["keys"] == native["keys"], (hook, out["keys"], native["keys"])
        tuned = [e for e in run.events("tuned", 0) if e["datatype"] == "float" and e["op"] == "sum"]
        assert tuned, run.events("tuned", 0)  # guard did explore float sums on two ranks
        chosen.add(tuple(sorted((e["bytes_min"], e["chosen"]) for e in tuned)))
    assert len(chosen) == 2, chosen  # the hooks steered guard to different routes, with the same bits


def test_the_digests_see_a_change_of_route(harness):
    """The test above can fail: the data rounds differently in the library's order and in ARShim's node order, so two
    runs that route differently give different digests (which is what guard's exploration of a float sum did before
    issue 41, when timing noise chose the route)."""
    native = result(harness.run(4, harness.program(PROGRAM), env={"ARSHIM_PATH": "native"}))
    node = result(harness.run(4, harness.program(PROGRAM), env={"ARSHIM_PATH": "multileader"}))
    assert native["digest"] != node["digest"]
    assert [k for k in native["keys"] if native["keys"][k] != node["keys"][k]], (native["keys"], node["keys"])


@pytest.mark.parametrize("np_, layout", [(2, "one node"), (4, "one node"), (4, "2 virtual nodes")])
def test_minmax_reruns_give_the_same_bits_whatever_guard_would_choose(harness, np_, layout):
    """MIN/MAX over signed zeros and NaNs with payloads (check_same_bits --minmax; issue 56 item 1): max(-0, +0) and a
    NaN against a number give the operand looked at first, so the library's order and ARShim's differ in the bits.
    Guard steered both ways by the test hooks: one digest per configuration (shim/core/router.h order_sensitive)."""
    env = {"ARSHIM_VIRTUAL_PPN": "2"} if layout == "2 virtual nodes" else {}
    digests = {}
    for hook in HOOKS[:4]:
        run = harness.run(np_, harness.program(PROGRAM), args=["--minmax"], shim=harness.shim("faulty"),
                          env={**env, "ARSHIMTEST_KERNEL_FAULT": "none", "ARSHIM_TUNE_AFTER": "1", **hook},
                          timeout=240)
        out = result(run)
        digests.setdefault(out["digest"], []).append((hook, out["keys"]))
        # Guard explored no float MIN/MAX key: their bits depend on the order.
        assert not [e for e in run.events("tuned") if e["datatype"] in ("float", "double") and
                    e["op"] in ("min", "max")], run.events("tuned")
    assert len(digests) == 1, digests


def test_the_minmax_digests_see_a_change_of_route(harness):
    """The test above can fail: the library's operand order and ARShim's node order give different bits for these
    values, so two runs that route differently give different digests (what guard's exploration of MIN/MAX did before
    issue 56, when timing noise chose the route)."""
    native = result(harness.run(4, harness.program(PROGRAM), args=["--minmax"], env={"ARSHIM_PATH": "native"}))
    node = result(harness.run(4, harness.program(PROGRAM), args=["--minmax"], env={"ARSHIM_PATH": "multileader"}))
    assert native["digest"] != node["digest"], (native["keys"], node["keys"])
