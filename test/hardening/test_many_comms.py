"""Many live communicators (ARSHIM_MAX_COMMS, docs/paths.md "Communicators ARShim makes"): check_many_comms keeps 1500
communicators at once, which both libraries allow natively (MPICH: 2048 context ids per process), and must run under
ARShim with every result right; with a small ARSHIM_MAX_COMMS under each forced path that makes windows or
communicators, calls beyond the limit go native (comm_limit) and the room comes back when communicators are freed (the
program checks both with ARShim's query API). At MPICH's limit (--exhaust) ARShim must decline, agreed, and never
abort. Pass or fail: the exit status and the program's JSON line.

  python3 -m pytest -p arshim_plugin test/hardening/test_many_comms.py --build BUILD --flavor mpich|openmpi"""
import os

import pytest

PROGRAM = "test/hardening/check_many_comms"
SOCKET_POLICY = 'version = 1\n[[rule]]\nname = "sharp, socket leaders"\npath = "sharp"\nsharp_leaders = "socket"\n'


def sharp(harness):
    return {"ARSHIM_SHARP": "on",
            "ARSHIM_SHARP_LIB": os.path.join(harness.build, "test", "sharp", "libsharp_coll.so"),
            "ARSHIM_VIRTUAL_PPN": 2}


def passes(harness, np, args, env=None, shim=True):
    run = harness.run(np, harness.program(PROGRAM), args=args, env=env, shim=shim, trace=False, timeout=300)
    assert run.returncode == 0, run.describe()
    out = run.program_json("check_many_comms")
    assert out is not None and out["failures"] == 0 and out["checks"] > 0, run.describe()
    return out


# name: np, settings, program arguments (None: without ARShim)
LIMITS = {
    "native, 1500 live communicators": (2, None, [1500, 10]),
    "ARShim's default, 1500 live communicators": (2, {}, [1500, 10]),
    "multileader forced, 1500 live communicators": (2, {"ARSHIM_PATH": "multileader"}, [1500, 10]),
    "multileader forced, ARSHIM_MAX_COMMS=3, 2 x 2 virtual nodes":
        (4, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_MAX_COMMS": 3}, [40, 4, "--limit"]),
    "multileader forced, ARSHIM_MAX_COMMS=5, no window reuse, np 3":
        (3, {"ARSHIM_PATH": "multileader", "ARSHIM_SHM_REUSE": "off", "ARSHIM_MAX_COMMS": 5}, [30, 3, "--limit"]),
    "ARShim's ring at one rank per node, ARSHIM_MAX_COMMS=2, np 3":
        (3, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 1, "ARSHIM_INTERNODE": "ring", "ARSHIM_MAX_COMMS": 2},
         [30, 3, "--limit"]),
    # Beyond the limit the reproducible path folds without a window (collectives over the communicator): still served.
    "reproducible forced, ARSHIM_MAX_COMMS=2, np 3": (3, {"ARSHIM_PATH": "reproducible", "ARSHIM_MAX_COMMS": 2}, [30, 3]),
}


@pytest.mark.parametrize("name", list(LIMITS))
def test_many_live_communicators(harness, name):
    np, env, args = LIMITS[name]
    passes(harness, np, args, env=env, shim=env is not None)


def test_sharp_beyond_the_limit(harness):
    passes(harness, 4, [30, 3, "--limit"], env={"ARSHIM_PATH": "sharp", **sharp(harness), "ARSHIM_MAX_COMMS": 3})


# name: np, settings (the SHARP ones completed by the test double's)
EXHAUST = {
    "the policy, np 2": (2, {}, [12]),
    "multileader, 2 x 2 virtual nodes, two leaders":
        (4, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_LEADERS": 2}, [4]),
    "ARShim's ring, np 3": (3, {"ARSHIM_PATH": "multileader", "ARSHIM_VIRTUAL_PPN": 1, "ARSHIM_INTERNODE": "ring"}, [4]),
    "reproducible, 2 x 2 virtual nodes": (4, {"ARSHIM_PATH": "reproducible", "ARSHIM_VIRTUAL_PPN": 2}, [4]),
    "SHARP (test double), 2 x 2 virtual nodes": (4, {"ARSHIM_PATH": "sharp", "sharp": True}, [4]),
    "SHARP socket leaders, 2 x 2 virtual nodes": (4, {"socket policy": True, "sharp": True}, [4]),
}


@pytest.mark.parametrize("free", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("name", list(EXHAUST))
def test_every_context_id_taken(harness, tmp_path, name, free):
    """At MPICH's limit: the program holds every context id but FREE, so ARShim's own communicators and windows cannot
    be made; it must decline (agreed on every rank) and never abort, whatever the path. Open MPI has no such limit."""
    if harness.flavor != "mpich":
        pytest.skip("MPICH's context ids only")
    np, settings, calls = EXHAUST[name]
    env = {k: v for k, v in settings.items() if k.startswith("ARSHIM_")}
    if settings.get("sharp"):
        env.update(sharp(harness))
    if settings.get("socket policy"):
        policy = tmp_path / "socket.toml"
        policy.write_text(SOCKET_POLICY)
        env["ARSHIM_POLICY"] = str(policy)
    passes(harness, np, ["--exhaust", free] + calls, env=env)
