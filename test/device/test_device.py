"""Device (GPU) buffers never reach ARShim's host code (issue 41; docs/device.md). check_device runs with a test double
of the CUDA driver whose device memory the host cannot touch (any host access dies with SIGSEGV) and plays a
CUDA-aware MPI in its own PMPI_Allreduce. Under every forced path, with every rank's buffers on the device, one
rank's, or device and host alternating on the same key, every call must return the right values on every rank, every
call with a device buffer must go to the library with the user's op, and calls with host buffers must still be served.

  python3 -m pytest -p arshim_plugin test/device/test_device.py --build BUILD --flavor mpich|openmpi"""
import os

import pytest

PROGRAM = "test/device/check_device"
TWO_NODES = {"ARSHIM_VIRTUAL_PPN": "2"}  # 4 ranks as 2 nodes of 2: the node and cross-node stages both run


def forced(harness, path):
    env = {**TWO_NODES, "ARSHIM_PATH": path}
    if path == "sharp":
        env.update(ARSHIM_SHARP="on", ARSHIM_SHARP_LIB=os.path.join(harness.build, "test", "sharp", "libsharp_coll.so"))
    return env


def outcome(run):
    assert run.returncode == 0, run.describe()
    objects = run.program_objects("ok")
    assert objects, run.describe()
    out = objects[-1]
    assert out["ok"], run.describe()
    assert out["op_substituted"] == 0, run.describe()
    return out


def calls_by_reason(run):
    return {f["reason"]: f["calls"] for f in run.stats["fallbacks"]}


def calls_by_path(run):
    return {p["path"]: p["calls"] for p in run.stats["paths"]}


@pytest.mark.parametrize("path", ["auto", "pipelined", "multileader", "sharp", "reproducible", "latency"])
@pytest.mark.parametrize("placement", ["all", "rank0", "alternate"])
def test_device_buffers_go_to_the_library_and_host_buffers_are_still_served(harness, path, placement):
    run = harness.run(4, harness.program(PROGRAM), args=[placement], env=forced(harness, path), stats=True,
                      timeout=300)
    out = outcome(run)
    assert out["device_calls"] > 0
    reasons = calls_by_reason(run)
    assert reasons.get("device_memory", 0) > 0, run.stats["fallbacks"]
    # Calls of a communicator with a device buffer on any of its ranks never reach a path; at most every call counted.
    assert reasons["device_memory"] <= out["calls"], (reasons, out)
    assert all(e["device_runtime"] == "cuda" and e["device_check"] for e in run.events("start")), run.events("start")
    paths = calls_by_path(run)
    if placement == "all":
        # Every call went to the library (the reproducible path is ARSHIM_REPRODUCIBLE's: not forced here).
        assert set(paths) <= {"native"}, paths
    elif placement == "alternate" and path not in ("auto", "reproducible"):
        assert paths.get(path, 0) > 0, paths  # the keys' host calls


def test_host_buffers_in_a_gpu_job_are_served_as_usual(harness):
    run = harness.run(4, harness.program(PROGRAM), args=["host"], env=forced(harness, "multileader"), stats=True)
    out = outcome(run)
    assert out["device_calls"] == 0
    assert calls_by_reason(run).get("device_memory", 0) == 0, run.stats["fallbacks"]
    assert calls_by_path(run).get("multileader", 0) > 0, run.stats["paths"]


def test_reproducible_mode_still_gives_right_answers_with_device_buffers(harness):
    run = harness.run(4, harness.program(PROGRAM), args=["rank0"], env={**TWO_NODES, "ARSHIM_REPRODUCIBLE": "layout"},
                      stats=True)
    outcome(run)
    assert calls_by_reason(run).get("device_memory", 0) > 0, run.stats["fallbacks"]


def test_the_test_sees_a_path_touching_device_memory(harness):
    """The tests above can fail: with the check off, a forced path reads the device buffers and the rank dies."""
    run = harness.run(4, harness.program(PROGRAM), args=["all"],
                      env={**forced(harness, "multileader"), "ARSHIM_DEVICE_CHECK": "off"}, timeout=120)
    assert run.returncode != 0, run.describe()


# Level Zero (issue 53 item 5): a loader that is merely loaded is not a device. Debian's MPICH 5 links Intel's loader
# on every machine; before, ARShim sent every call to the library wherever it was loaded.
ZE_PROGRAM = "test/device/check_device_ze"


@pytest.fixture
def ze_program(harness):
    """The check program linked to the Level Zero loader double; not built where the MPI library links the real
    loader (test/device/meson.build)."""
    program = harness.program(ZE_PROGRAM)
    if not os.path.exists(program):
        pytest.skip(f"{os.path.basename(program)} is not built: this {harness.flavor} library links the real "
                    "libze_loader.so.1, which the double cannot stand in for")
    return program


def start_events(run):
    events = run.events("start")
    assert events, run.describe()
    return events


@pytest.mark.parametrize("path", ["auto", "multileader", "latency"])
@pytest.mark.parametrize("placement", ["all", "alternate"])
def test_level_zero_device_buffers_go_to_the_library(harness, ze_program, path, placement):
    run = harness.run(4, ze_program, args=[placement], env=forced(harness, path), stats=True,
                      timeout=300)
    out = outcome(run)
    assert out["device_calls"] > 0
    assert calls_by_reason(run).get("device_memory", 0) > 0, run.stats["fallbacks"]
    assert all(e["device_runtime"] == "level_zero" and e["device_check"] for e in start_events(run))
    paths = calls_by_path(run)
    if placement == "all":
        assert set(paths) <= {"native"}, paths
    elif path != "auto":
        assert paths.get(path, 0) > 0, paths  # the keys' host calls are asked about and served


@pytest.mark.parametrize("loader", ["no device", "no driver"])
def test_a_level_zero_loader_without_a_device_leaves_every_call_served(harness, ze_program, loader):
    env = {**forced(harness, "multileader"), "ARSHIM_LOG": "info",
           ("FAKE_ZE_DEVICES" if loader == "no device" else "FAKE_ZE_DRIVERS"): 0}
    run = harness.run(4, ze_program, args=["host"], env=env, stats=True)
    out = outcome(run)
    assert out["device_calls"] == 0
    assert calls_by_reason(run).get("device_memory", 0) == 0, run.stats["fallbacks"]
    assert calls_by_path(run).get("multileader", 0) > 0, run.stats["paths"]
    for e in start_events(run):
        assert e["device_runtime"] == "none" and not e["device_check"], e
        assert loader in e["device_found"], e


def test_a_key_whose_first_calls_had_device_buffers_still_explores_its_host_calls(harness):
    """Issue 56: a call with device buffers is no sample of the key's exploration. Before, each such call declined the
    candidate it was asked to try, so a key whose first calls carried device buffers was decided native and kept its
    later host calls on the library. Every key here explores from its first call (ARSHIM_TUNE_AFTER=1), its first
    three rounds carry device buffers, its last three host buffers, and the library is made to look 100 ms slower
    (the test hook), so an explored key can only settle on a path of ARShim's."""
    env = {**TWO_NODES, "ARSHIM_TUNE_AFTER": "1", "ARSHIMTEST_TUNE_SLOW_NATIVE": "1", "ARSHIMTEST_KERNEL_FAULT": "none"}
    run = harness.run(4, harness.program(PROGRAM), args=["first"], env=env, shim=harness.shim("faulty"), stats=True,
                      timeout=300)
    out = outcome(run)
    assert out["device_calls"] == out["calls"] // 12
    assert calls_by_reason(run).get("device_memory", 0) > 0, run.stats["fallbacks"]
    decided = run.stats["tuning"]["decided"]  # rank 0's keys that finished exploring
    assert decided, run.stats["tuning"]
    for key in decided:
        assert not any(c["declined"] for c in key["candidates"]), key
        assert key["chosen_decision"]["path"] != "native", key
