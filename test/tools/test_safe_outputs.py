"""Every file an `arshim` command writes, with something planted at its name (issue 56 item 4): a symbolic link to a
victim file, a FIFO, a directory. The rule (tools/arshim/files.py, docs/arshim.1 FILES): an output is written whole
to a new file and renamed over the name, so a symbolic link there is replaced and never followed (the victim stays
as it was), and a FIFO, device or directory at the name is refused in one line, exit status 2, before the work that
would fill it. `arshim simulate --out` is stricter (documented): a name that exists is refused unless --resume, and
--resume appends only to a regular file. No command may block on a FIFO: every run has a timeout.

The commands run as programs (tools/arshim.py) on small inputs: a recorded statistics log for report, merged CSVs
for bench kernels, and for the commands that measure (bench allreduce, tune, simulate) fake launchers on PATH that
record that they ran and answer at once, so no MPI job and no simulation runs."""
import json
import os
import stat
import subprocess
import sys

import pytest

from arshim import ToolError, files

from conftest import DATA, TOOLS

ARSHIM = os.path.join(TOOLS, "arshim.py")
LOG = os.path.join(DATA, "program-openmpi.json")
VICTIM_TEXT = "the user's own file\n"
TIMEOUT = 60
PLANTS = ("symlink", "fifo", "directory")


def run(*args, env=None, cwd=None):
    try:
        done = subprocess.run([sys.executable, ARSHIM, *map(str, args)], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"arshim {' '.join(map(str, args))}: still running after {TIMEOUT} s (blocked on a FIFO?)")
    return done.returncode, done.stdout, done.stderr


def plant(kind, path, victim):
    """A symbolic link to the victim, a FIFO or a directory at `path`."""
    if kind == "symlink":
        os.symlink(victim, path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        os.mkdir(path)


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text(VICTIM_TEXT)
    return path


def refused(result, prefix, name):
    """Exit status 2 and exactly one line on stderr naming the file; nothing on stdout."""
    rc, out, err = result
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1, f"exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert lines[0].startswith(prefix) and os.path.basename(str(name)) in lines[0], lines[0]
    assert "Traceback" not in err and out == ""
    return lines[0]


def replaced(path, victim):
    """The name now holds a regular file of the command's (the link replaced, not followed)."""
    assert not os.path.islink(path) and stat.S_ISREG(os.lstat(path).st_mode)
    assert victim.read_text() == VICTIM_TEXT


def untouched(path, kind, victim):
    """What was planted is still there, as it was."""
    if kind == "symlink":
        assert os.path.islink(path) and os.readlink(path) == str(victim)
    elif kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)
    else:
        assert os.path.isdir(path) and not os.listdir(path)
    assert victim.read_text() == VICTIM_TEXT


def expect(result, kind, path, victim, prefix, written=None):
    """files.py's rule: a symbolic link replaced (exit 0), a FIFO or a directory refused in one line (exit 2)."""
    if kind == "symlink":
        rc, out, err = result
        assert rc == 0, err
        replaced(path, victim)
        if written:
            written(path)
    else:
        line = refused(result, prefix, path)
        assert ("a FIFO" if kind == "fifo" else "a directory") in line
        untouched(path, kind, victim)


def fake_program(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def calls(log):
    return log.read_text().splitlines() if log.exists() else []


# ---- arshim report --plot -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PLANTS)
@pytest.mark.parametrize("ext", [".png", ".svg", ".html"])
def test_report_plot(tmp_path, victim, kind, ext):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"plot{ext}"
    plant(kind, out, victim)
    magic = {".png": b"\x89PNG", ".svg": b"<?xml", ".html": b"<!DOCTYPE html>"}[ext]
    expect(run("report", LOG, "--plot", out), kind, out, victim, "arshim report: --plot ",
           lambda path: path.read_bytes().startswith(magic) or pytest.fail(f"{path}: not a {ext} file"))


# ---- arshim bench kernels --out -----------------------------------------------------------------------------------

def kernels_csv(tmp_path):
    path = tmp_path / "mpich.csv"
    path.write_text("case,bytes,cache,impl,gbps\nsum-float,1024,hot,avx2,10.5\nsum-float,1024,hot,mpich,5.25\n")
    return path


@pytest.mark.parametrize("kind", PLANTS)
def test_bench_kernels_out(tmp_path, victim, kind):
    out = tmp_path / "kernels.csv"
    plant(kind, out, victim)
    expect(run("bench", "kernels", "--csv", kernels_csv(tmp_path), "--out", out), kind, out, victim,
           "arshim bench kernels: argument --out: ",
           lambda path: path.read_text().startswith("case,bytes,cache,avx2,mpich"))


# ---- arshim bench allreduce --csv / --json ------------------------------------------------------------------------

@pytest.fixture
def fake_bench(tmp_path):
    """A build directory with the benchmark program's name in it, and an mpirun.mpich on PATH that records its
    command line and prints the program's CSV."""
    build = tmp_path / "build"
    (build / "tools" / "allreduce_bench").mkdir(parents=True)
    (build / "tools" / "allreduce_bench" / "bench_allreduce-mpich").write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "mpirun.log"
    fake_program(bin_dir, "mpirun.mpich", f'echo "$*" >> "{log}"\n'
                 'printf "bytes,reps,median_us,min_us,p90_us\\n8,5,2.000,1.500,2.500\\n"\n')
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    return {"env": env, "log": log, "args": ["--build-dir", build, "--mpi", "mpich", "--configs", "native",
                                              "--rounds", "1", "--min", "8", "--max", "8"]}


@pytest.mark.parametrize("kind", PLANTS)
@pytest.mark.parametrize("option", ["--csv", "--json"])
def test_bench_allreduce_outputs(tmp_path, victim, fake_bench, kind, option):
    out = tmp_path / f"figures{option.replace('--', '.')}"
    plant(kind, out, victim)
    result = run("bench", "allreduce", *fake_bench["args"], option, out, env=fake_bench["env"])
    expect(result, kind, out, victim, f"arshim bench allreduce: argument {option}: ",
           lambda path: "native" in path.read_text())
    # Refused before the benchmark ran: its results would have been lost.
    assert len(calls(fake_bench["log"])) == (1 if kind == "symlink" else 0)


def test_bench_allreduce_missing_directory_before_any_run(tmp_path, fake_bench):
    refused(run("bench", "allreduce", *fake_bench["args"], "--csv", tmp_path / "no-such-dir" / "f.csv",
                env=fake_bench["env"]), "arshim bench allreduce: argument --csv: ", "f.csv")
    assert calls(fake_bench["log"]) == []


# ---- arshim tune --out, OUT.state.json, OUT.samples.json ----------------------------------------------------------

@pytest.fixture
def fake_tune(tmp_path):
    """arshim tune on a simulated cluster of 1 x 2 ranks with a fake smpirun (every size 100 us) and a fake
    `arshim policy tune-table`: a whole tuning run in a second, writing the state, the samples and the table."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "smpirun.log"
    smpirun = fake_program(bin_dir, "smpirun", f'echo "$*" >> "{log}"\n'
                           'while [ "$1" != "--iterations" ]; do shift; done\nshift 2\n'
                           'for s in "$@"; do echo "probe $s 100.0"; done\n')
    arshim = fake_program(bin_dir, "arshim", 'case "$*" in\n'
                          '  *--crossovers*) echo \'{"crossovers": [], "median_error": 0.0}\' ;;\n'
                          '  *) echo "# tuned table" ;;\nesac\n')
    probes = []
    for kind in ("native", "arshim"):
        probe = bin_dir / f"probe-{kind}"
        probe.write_text("")
        probes += [f"--simulate-probe-{kind}", probe]
    return {"log": log, "args": ["--simulate", f"--nodes 1 --ppn 2 --smpirun {smpirun}", "--mpi", "mpich",
                                 "--max", "8", "--arshim", arshim, *probes]}


@pytest.mark.parametrize("kind", PLANTS)
@pytest.mark.parametrize("suffix", ["", ".state.json", ".samples.json"])
def test_tune_outputs(tmp_path, victim, fake_tune, kind, suffix):
    out = tmp_path / "tuned.toml"
    target = tmp_path / f"tuned.toml{suffix}"
    plant(kind, target, victim)
    result = run("tune", "--out", out, *fake_tune["args"])
    expect(result, kind, target, victim, "arshim tune: --out ")
    if kind == "symlink":
        assert out.read_text() == "# tuned table\n"
        state = json.loads((tmp_path / "tuned.toml.state.json").read_text())
        assert state["flavor"] == "mpich" and state["measurements"]
    else:
        assert calls(fake_tune["log"]) == []  # refused before anything was measured
        assert suffix == "" or not out.exists()


# ---- arshim simulate --out ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PLANTS)
@pytest.mark.parametrize("resume", [False, True])
def test_simulate_out(tmp_path, victim, kind, resume):
    log = tmp_path / "smpirun.log"
    smpirun = fake_program(tmp_path, "smpirun", f'echo "$*" >> "{log}"\nexit 1\n')
    out = tmp_path / "sweep.csv"
    plant(kind, out, victim)
    line = refused(run("simulate", "--nodes", "2", "--smpirun", smpirun, "--out", out,
                       *(["--resume"] if resume else [])), "arshim simulate: --out ", out)
    assert {"symlink": "a symbolic link", "fifo": "a FIFO", "directory": "a directory"}[kind] in line
    untouched(out, kind, victim)
    assert calls(log) == []


# ---- arshim mpich-tests --workdir ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["symlink", "fifo", "file"])
def test_mpich_tests_workdir_that_is_no_directory(tmp_path, victim, kind):
    workdir = tmp_path / "work"
    if kind == "file":
        workdir.write_text(VICTIM_TEXT)
    else:
        plant(kind, workdir, victim)
    refused(run("mpich-tests", "--workdir", workdir, "--source", tmp_path / "no-source", "--list"),
            "arshim mpich-tests: error: --workdir ", workdir)
    assert victim.read_text() == VICTIM_TEXT


# ---- the writers themselves (files.py) ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", PLANTS)
def test_check_output(tmp_path, victim, kind):
    path = tmp_path / "out"
    plant(kind, path, victim)
    if kind == "symlink":
        assert files.check_output(str(path), "--out") == str(path)
    else:
        with pytest.raises(ToolError, match=f"^--out {path}: a (FIFO|directory), not a regular file"):
            files.check_output(str(path), "--out")


def test_check_output_names():
    with pytest.raises(ToolError, match="an empty file name"):
        files.check_output("", "--out")
    with pytest.raises(ToolError, match=r"^--out /nonexistent/\\x1b\[2J/f: its directory /nonexistent/\\x1b\[2J "
                                        "does not exist$"):
        files.check_output("/nonexistent/\x1b[2J/f", "--out")


def test_check_output_in_a_directory_not_writable(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes in any directory")
    (tmp_path / "ro").mkdir(mode=0o500)
    try:
        with pytest.raises(ToolError, match="cannot write in its directory"):
            files.check_output(str(tmp_path / "ro" / "out.csv"), "--csv")
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_write_file_refuses_a_device(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(ToolError, match="a character device, not a regular file"):
        files.write_file(str(device), "x")
    assert stat.S_ISCHR(os.lstat(device).st_mode)  # not replaced by a regular file


def test_write_file_bytes_and_a_fifo_is_not_opened(tmp_path):
    files.write_file(str(tmp_path / "a.png"), b"\x89PNG")
    assert (tmp_path / "a.png").read_bytes() == b"\x89PNG"
    os.mkfifo(tmp_path / "f")
    with pytest.raises(ToolError, match="a FIFO"):
        files.write_file(str(tmp_path / "f"), "x")
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]  # no temporary file left behind


@pytest.mark.parametrize("kind", PLANTS)
def test_open_output_streams(tmp_path, victim, kind):
    path = tmp_path / "run.log"
    plant(kind, path, victim)
    for append in (False, True):
        with pytest.raises(OSError):
            files.open_output(str(path), append)
    untouched(path, kind, victim)


def test_open_output_truncates_or_appends_a_regular_file(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("old\n")
    with os.fdopen(files.open_output(str(path), append=True), "a") as f:
        f.write("more\n")
    assert path.read_text() == "old\nmore\n"
    with os.fdopen(files.open_output(str(path)), "w") as f:
        f.write("new\n")
    assert path.read_text() == "new\n"
