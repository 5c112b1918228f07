"""Node memory nobody else can plant (issue 56 item 0; shim/paths/node_segment.h, docs/paths.md "Node memory nobody
else can plant"). ARShim makes its own node segments: a random name, created exclusively, mode 0600, checked by every
attaching rank, unlinked once all have attached. Under Open MPI it used to ask for MPI_Win_allocate_shared, whose
files sit at a predictable name opened without O_EXCL or O_NOFOLLOW: a directory or FIFO planted there hung the job,
a symlink made a root job overwrite the file it pointed to.

Here an unprivileged user (nobody) plants a symlink to a root-owned file, a directory, a FIFO and a writable file at
the name the job will use (the test-only library's ARSHIMTEST_SEGMENT_NAME fixes the name, which is random in the
product). Every run must finish with every result right, the planted thing untouched, and the calls that needed node
memory counted native with reason shm_unavailable. Without a fixed name the node paths serve and leave nothing in
/dev/shm. And the preload library never asks the MPI library for a shared window at all.

  python3 -m pytest -p arshim_plugin test/hardening/test_planted_segments.py --build BUILD --flavor mpich|openmpi"""
import os
import pwd
import shutil
import stat
import subprocess
import uuid

import pytest

PROGRAM = "test/mpi/check_allreduce"
PLANTS = ["symlink", "directory", "fifo", "writable-file"]


def as_nobody(*command):
    """Runs `command` as the unprivileged user nobody (the attacker)."""
    nobody = pwd.getpwnam("nobody")
    subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", "--",
                    *command], check=True)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim"
    path.write_text("root's data\n")
    os.chmod(tmp_path, 0o755)
    return path


def plant(kind, name, victim):
    target = f"/dev/shm/{name}"
    if kind == "symlink":
        as_nobody("ln", "-s", str(victim), target)
    elif kind == "directory":
        as_nobody("mkdir", target)
    elif kind == "fifo":
        as_nobody("mkfifo", "-m", "666", target)
    else:
        as_nobody("sh", "-c", f"printf planted > {target} && chmod 666 {target}")
    return target


def untouched(kind, target, victim):
    st = os.lstat(target)
    if kind == "symlink":
        return stat.S_ISLNK(st.st_mode) and victim.read_text() == "root's data\n"
    if kind == "directory":
        return stat.S_ISDIR(st.st_mode) and not os.listdir(target)
    if kind == "fifo":
        return stat.S_ISFIFO(st.st_mode)
    return stat.S_ISREG(st.st_mode) and open(target).read() == "planted"


def native_reasons(run):
    return {r["reason"]: r["calls"] for r in run.stats["fallbacks"]}


def served(run):
    return {p["path"]: p["calls"] for p in run.stats["paths"]}


@pytest.mark.parametrize("path", ["multileader", "latency"])
@pytest.mark.parametrize("kind", PLANTS)
def test_a_planted_name_is_refused_and_the_calls_go_to_the_library(harness, victim, kind, path):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is missing")
    name = f"arshim-test-{uuid.uuid4().hex}"
    target = plant(kind, name, victim)
    try:
        env = {"ARSHIMTEST_KERNEL_FAULT": "none", "ARSHIMTEST_SEGMENT_NAME": f"/{name}", "ARSHIM_PATH": path,
               "CHECK_FLAVOR": harness.flavor}
        run = harness.run(2, harness.program(PROGRAM), args=["--quick"], shim=harness.shim("faulty"), env=env,
                          stats=True, trace=False, timeout=120)
        # Exit 124: a hang; 1: a wrong result.
        assert run.returncode == 0, run.describe()
        out = run.program_json("check_allreduce")
        assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()
        assert untouched(kind, target, victim), f"the planted {kind} at {target} was changed"
        assert served(run).get(path, 0) == 0, run.stats["paths"]
        assert native_reasons(run).get("shm_unavailable", 0) > 0, run.stats["fallbacks"]
    finally:
        if os.path.isdir(target) and not os.path.islink(target):
            os.rmdir(target)
        elif os.path.lexists(target):
            os.unlink(target)


@pytest.mark.parametrize("path", ["multileader", "latency"])
def test_segments_serve_and_leave_nothing_behind(harness, path):
    before = set(os.listdir("/dev/shm"))
    env = {"ARSHIM_PATH": path, "CHECK_FLAVOR": harness.flavor, "CHECK_EXPECT_PATH": path}
    run = harness.run(4, harness.program(PROGRAM), args=["--quick"], env={**env, "ARSHIM_VIRTUAL_PPN": 2},
                      stats=True, trace=False, timeout=200)
    assert run.returncode == 0, run.describe()
    out = run.program_json("check_allreduce")
    assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()
    assert served(run).get(path, 0) > 0, run.stats["paths"]
    left = sorted(n for n in set(os.listdir("/dev/shm")) - before if n.startswith("arshim-"))
    assert not left, f"segments left in /dev/shm: {left}"


def test_the_library_never_asks_mpi_for_a_shared_window(harness):
    """The cause of the defect: MPI_Win_allocate_shared (Open MPI's osc/sm files at predictable names). The preload
    library must not import it (nor any other window allocation)."""
    symbols = subprocess.run(["nm", "-D", "--undefined-only", harness.shim()], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
    assert "MPI_Win_allocate" not in symbols, [s for s in symbols.splitlines() if "Win_allocate" in s]
    assert "shm_open" in symbols  # its own segments
