"""Reproducible mode (docs/reproducible.md), bit for bit, asserted on data: check_reproducible's exit status and its
JSON line (its wrong results, the results that differ from the rank-order fold, its digests of the results), and the
statistics log.

  layout: every floating-point type, SUM and PROD, is the rank-order fold the program computes itself, and the same
          bits (digests) under every path forced, every node layout (ARSHIM_VIRTUAL_PPN 1, 2, 4 at np 4), every
          algorithm, every ISA this CPU has, and both MPIs; without reproducible mode the check fails (it can);
  any-np: float and double SUM exact before one rounding: the same bits for np 1, 2, 3, 4, 7 and for permuted rank
          orders, never less accurate than the rank-order sum.

Both MPIs in one session (the digests must agree across them): run with --flavor mpich; the Open MPI runs use a
second harness on the same build.

  python3 -m pytest -p arshim_plugin test/reproducible/test_reproducible.py --build BUILD --flavor mpich"""
import os

import pytest

import arshim_harness

PROGRAM = "test/reproducible/check_reproducible"
FLAVORS = ["mpich", "openmpi"]
REFERENCE = {}  # mode -> the first run's digests: every later run must give the same bits


@pytest.fixture(scope="module")
def harnesses(harness):
    return {f: harness if f == harness.flavor else arshim_harness.Harness(harness.build, f) for f in FLAVORS}


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """A policy file per algorithm of the reproducible path."""
    directory = tmp_path_factory.mktemp("policies")
    files = {}
    for algorithm in ("gather", "exchange", "node"):
        files[algorithm] = str(directory / f"{algorithm}.toml")
        with open(files[algorithm], "w") as f:
            f.write(f'version = 1\n[[rule]]\nreproducible = true\npath = "reproducible"\nalgorithm = "{algorithm}"\n')
    return files


def isas():
    with open("/proc/cpuinfo") as f:
        flags = set(f.read().split())
    return ["scalar", "avx2"] + (["avx512"] if {"avx512f", "avx512bw"} <= flags else [])


def layouts(harness, policies):
    """name -> settings of every layout run (np 4)."""
    sharp = os.path.join(harness.build, "test", "sharp", "libsharp_coll.so")
    cases = {
        "default policy": {},
        "ARSHIM_PATH=native": {"ARSHIM_PATH": "native"},
        "ARSHIM_PATH=pipelined": {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "4K"},
        "ARSHIM_PATH=multileader, 2x2 nodes": {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 2},
        "ARSHIM_PATH=sharp, 2x2 nodes": {"ARSHIM_PATH": "sharp", "ARSHIM_SHARP": "on", "ARSHIM_SHARP_LIB": sharp,
                                         "ARSHIM_VIRTUAL_PPN": 2},
        "one node of 4": {"ARSHIM_VIRTUAL_PPN": 4},
        "2 nodes x 2, chain, 2 leaders": {"ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_LEADERS": 2, "ARSHIM_POLICY": policies["node"],
                                          "ARSHIM_POLICY_MODE": "prepend"},
        "4 nodes x 1": {"ARSHIM_VIRTUAL_PPN": 1},
        "gather": {"ARSHIM_POLICY": policies["gather"], "ARSHIM_POLICY_MODE": "prepend"},
        "exchange": {"ARSHIM_POLICY": policies["exchange"], "ARSHIM_POLICY_MODE": "prepend"},
        "small shared memory (chunks)": {"ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_SHM_MAX": "64K"},
    }
    for isa in isas():
        cases[f"ARSHIM_KERNEL={isa}, 2x2 nodes"] = {"ARSHIM_KERNEL": isa, "ARSHIM_VIRTUAL_PPN": 2}
    return cases


def result(run):
    out = run.program_json("check_reproducible")
    assert out is not None, run.describe()
    return out


def same_bits(mode, run, out):
    """The run's digests are the first run's of this mode."""
    assert out["digests"], run.describe()
    reference = REFERENCE.setdefault(mode, out["digests"])
    differing = {k: (v, reference.get(k)) for k, v in out["digests"].items() if reference.get(k) != v}
    assert out["digests"] == reference, f"other bits than the first run: {differing}"


@pytest.mark.parametrize("flavor", FLAVORS)
def test_layout_every_path_layout_algorithm_and_isa_gives_the_rank_order_fold(harnesses, policies, flavor):
    harness = harnesses[flavor]
    failures = []
    for name, settings in layouts(harness, policies).items():
        run = harness.run(4, harness.program(PROGRAM), args=["--mode", "layout"],
                          env={"ARSHIM_REPRODUCIBLE": "layout", **settings}, trace=False)
        out = result(run)
        if run.returncode != 0 or out["wrong"] or out["fold_differences"]:
            failures.append(f"{flavor}, {name}: not the rank-order fold\n{run.describe()}")
            continue
        try:
            same_bits("layout", run, out)
        except AssertionError as e:
            failures.append(f"{flavor}, {name}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_layout_without_reproducible_mode_differs_from_the_fold(harnesses, flavor):
    """The control: without reproducible mode the library and the paths sum in other orders (the check can fail)."""
    harness = harnesses[flavor]
    run = harness.run(4, harness.program(PROGRAM), args=["--mode", "layout"], env={"ARSHIM_VIRTUAL_PPN": 2},
                      trace=False)
    assert result(run)["fold_differences"] > 0, run.describe()


def test_mixed_calls_only_the_floating_point_sums_take_the_reproducible_path(harnesses):
    """Its 24 floating-point calls per rank (6 types x SUM, PROD x in place or not) on the reproducible path, its 24 int
    MAX calls and its last check (a long SUM) elsewhere, and one user op that the library serves, counted as not
    reproducible."""
    harness = harnesses["mpich"]
    run = harness.run(2, harness.program(PROGRAM), args=["--mode", "layout", "--counts", 1000],
                      env={"ARSHIM_REPRODUCIBLE": "layout"}, stats=True, trace=False)
    assert run.returncode == 0 and result(run)["wrong"] == 0, run.describe()
    assert run.stats["totals"]["calls"] == 100, run.stats["totals"]
    paths = {p["path"]: p["calls"] for p in run.stats["paths"]}
    assert paths.get("reproducible") == 48, paths
    reasons = {f["reason"]: f["calls"] for f in run.stats["fallbacks"]}
    assert reasons.get("not_reproducible") == 2, reasons


@pytest.mark.parametrize("flavor", FLAVORS)
def test_any_np_exact_sums_give_the_same_bits_for_every_np_and_rank_order(harnesses, flavor):
    harness = harnesses[flavor]
    failures = []
    for np in (1, 2, 3, 4, 7):
        for order in (0, 3):
            if np == 1 and order != 0:
                continue
            run = harness.run(np, harness.program(PROGRAM), args=["--mode", "exact", "--order", order],
                              env={"ARSHIM_REPRODUCIBLE": "any-np", "ARSHIM_VIRTUAL_PPN": 2}, trace=False)
            out = result(run)
            try:
                assert run.returncode == 0 and out["wrong"] == 0, f"not the exact global sum\n{run.describe()}"
                same_bits("exact", run, out)
            except AssertionError as e:
                failures.append(f"{flavor}, np {np}, order {order}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_any_np_wide_exponents_are_correctly_rounded_in_any_order_and_path(harnesses, policies, flavor):
    harness = harnesses[flavor]
    failures = []
    for order, settings in [(0, {}), (5, {}), (0, {"ARSHIM_PATH": "native", "ARSHIM_VIRTUAL_PPN": 1}),
                            (7, {"ARSHIM_VIRTUAL_PPN": 2}), (0, {"ARSHIM_POLICY": policies["exchange"]})]:
        run = harness.run(4, harness.program(PROGRAM), args=["--mode", "accuracy", "--order", order],
                          env={"ARSHIM_REPRODUCIBLE": "any-np", **settings}, trace=False)
        out = result(run)
        try:
            # wrong: a sum not correctly rounded, or further from the exact sum than the rank-order sum.
            assert run.returncode == 0 and out["wrong"] == 0, run.describe()
            same_bits("accuracy", run, out)
        except AssertionError as e:
            failures.append(f"{flavor}, order {order}, {settings}: {e}")
    assert not failures, "\n".join(failures)
