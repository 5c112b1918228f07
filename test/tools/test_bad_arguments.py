"""Every argument of every `arshim` command is checked before any work starts (issue 56 item 6): a value that cannot
work is one line on stderr naming the option, the value (escaped: a terminal escape in it arrives as \\x1b) and what
is allowed, exit status 2, nothing else printed, and nothing run. Each command that would launch something gets a
fake launcher that records being run; none may be.

The commands run as programs (tools/arshim.py); `arshim cluster` runs in-process against its faked command layer
(test/tools/cluster_fake.py); `arshim policy` and `arshim bench cma|line-floor` are compiled programs, checked where
the build has them."""
import os
import subprocess
import sys

import pytest

from conftest import DATA, SOURCE, TOOLS

ARSHIM = os.path.join(TOOLS, "arshim.py")
LOG = os.path.join(DATA, "program-openmpi.json")
ESC = "\x1b[2J\x1b]0;title\x07"  # clear the screen, set the window title
# Set up per test in `world` (tmp_path): <dir> a directory, <fifo> a FIFO, <file> a regular file, <fake> a launcher
# that records being run, <build> a build directory with the allreduce benchmark's program names.
PLACEHOLDERS = ("<dir>", "<fifo>", "<file>", "<fake>", "<build>")


def compiled_tools_dirs():
    """Directories of the built arshim-policy and C benchmarks (ARSHIM_POLICY_PROGRAM under meson, else build/)."""
    policy = os.environ.get("ARSHIM_POLICY_PROGRAM") or os.path.join(SOURCE, "build", "tools", "policy",
                                                                     "arshim-policy")
    tools = os.path.dirname(os.path.dirname(policy))
    return [d for d in (os.path.dirname(policy), os.path.join(tools, "bench")) if os.path.isdir(d)]


@pytest.fixture
def world(tmp_path):
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("a user's file\n")
    log = tmp_path / "ran.log"
    fake = tmp_path / "fake"
    fake.write_text(f'#!/bin/sh\necho "$0 $*" >> "{log}"\nexit 1\n')
    fake.chmod(0o755)
    build = tmp_path / "build"
    (build / "tools" / "allreduce_bench").mkdir(parents=True)
    (build / "tools" / "allreduce_bench" / "bench_allreduce-mpich").write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("mpirun.mpich", "mpirun.openmpi", "smpirun"):  # whatever a missed check would launch
        os.symlink(fake, bin_dir / name)
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir)] + compiled_tools_dirs() + [os.environ["PATH"]]))
    paths = {"<dir>": tmp_path / "dir", "<fifo>": tmp_path / "fifo", "<file>": tmp_path / "file", "<fake>": fake,
             "<build>": build}
    return {"env": env, "log": log, "paths": paths, "tmp": tmp_path}


def run(world, args):
    words = []
    for word in args:
        for name, path in world["paths"].items():
            word = word.replace(name, str(path))
        words.append(word)
    try:
        done = subprocess.run([sys.executable, ARSHIM, *words], capture_output=True, text=True, timeout=60,
                              env=world["env"], cwd=world["tmp"], stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"arshim {' '.join(words)}: still running after 60 s")
    return done.returncode, done.stdout, done.stderr


def printable(text):
    """No raw control character (ESC, BEL, C1) anywhere: every line is text a terminal shows as it is."""
    return all(c == "\n" or c.isprintable() for c in text)


BENCH = ["bench", "allreduce", "--build-dir", "<build>", "--mpi", "mpich"]
SIMULATE = ["simulate", "--nodes", "2", "--smpirun", "<fake>", "--out", "sim.csv"]
TUNE = ["tune", "--out", "tuned.toml"]
LAUNCHER = ["--mpi", "mpich", "--", "<fake>", "-n", "2"]

# (command line, words the one line must hold: the option and what is allowed or wrong)
CASES = [
    # arshim itself
    ([f"nope{ESC}"], ["COMMAND", "invalid choice", "\\x1b"]),
    (["bench", "nope"], ["what", "invalid choice"]),
    (["run", "--mpi", ESC, "--", "<fake>"], ["--mpi", "invalid choice", "mpich"]),
    (["run", "--lib", f"/nonexistent/lib{ESC}.so", "--mpi", "mpich", "--", "<fake>", "./app"],
     ["--lib /nonexistent/lib\\x1b[2J", "no such file"]),
    (["lib", "--mpi", "lam"], ["--mpi", "invalid choice", "openmpi"]),
    # report
    (["report", LOG, "--top", "0"], ["--top", "0:", "from 1 to"]),
    (["report", LOG, "--top", ESC], ["--top", "\\x1b[2J", "whole number"]),
    (["report", LOG, "--sort", ESC], ["--sort", "invalid choice", "calls"]),
    (["report", LOG, "--section", "nope"], ["--section", "invalid choice", "paths"]),
    (["report", LOG, "--plot", "out.txt"], ["--plot out.txt", ".png, .svg or .html"]),
    (["report", LOG, f"--bogus{ESC}"], ["unrecognized arguments", "--bogus\\x1b"]),
    (["report"], ["RUN.json", "required"]),
    # bench allreduce: the cases of issue 56 first
    (BENCH + ["--np", "0"], ["--np", "0:", "from 1 to"]),
    (BENCH + ["--np", "-2"], ["--np", "-2:", "from 1 to"]),
    (BENCH + ["--rounds", "0"], ["--rounds", "0:", "from 1 to"]),
    (BENCH + ["--rounds", "-1"], ["--rounds", "-1:", "from 1 to"]),
    (BENCH + ["--min", "64", "--max", "8"], ["--min 64 --max 8", "at most --max"]),
    (BENCH + ["--reps", "0"], ["--reps", "0:", "from 1 to"]),
    (["bench", "allreduce", "--build-dir", "<build>", "--mpi", "nope"], ["--mpi", "nope", "mpich, openmpi"]),
    (BENCH + ["--max", "1P"], ["--max", "1P", "a size from 1 to 256M"]),
    (BENCH + ["--configs", f"{ESC}x"], ["--configs", "\\x1b[2J", "allowed: native"]),
    (BENCH + ["--csv", "<dir>"], ["--csv", "a directory"]),
    (BENCH + ["--json", "<fifo>"], ["--json", "a FIFO"]),
    (BENCH + ["--json", "<dir>/missing/f.json"], ["--json", "does not exist"]),
    (BENCH + ["--np", "x"], ["--np", "x:", "whole number"]),
    (BENCH + ["--min", "0"], ["--min", "a size from 1"]),
    (BENCH + ["--factor", "1"], ["--factor", "from 2 to"]),
    (BENCH + ["--batch", "0"], ["--batch", "from 1 to"]),
    (BENCH + ["--budget", "0"], ["--budget", "a size from 1"]),
    (BENCH + ["--timeout", "-5"], ["--timeout", "from 1 to"]),
    (BENCH + ["--nodes", "0"], ["--nodes", "from 1 to"]),
    (BENCH + ["--link-gbit", "nan"], ["--link-gbit", "a number from 0"]),
    (BENCH + ["--bound"], ["--bound needs --nodes"]),
    (BENCH + ["--type", "half"], ["--type", "invalid choice", "float"]),
    (BENCH + ["--wrap", "run {host}"], ["--wrap", "{flavor} and {np}"]),
    (BENCH + ["--wrap", "'unbalanced"], ["--wrap", "No closing quotation"]),
    (BENCH + ["--compare-lib", "/nonexistent/{flavor}.so"], ["--compare-lib", "/nonexistent/mpich.so: no such file"]),
    (BENCH + ["--mpi", "openmpi"], ["--mpi openmpi", "no bench_allreduce-openmpi", "allowed here: mpich"]),
    (["bench", "allreduce", "--build-dir", "<dir>/none"], ["--build-dir", "not a directory"]),
    # bench kernels
    (["bench", "kernels", "--reps", "0"], ["--reps", "from 1 to"]),
    (["bench", "kernels", "--min", "2K", "--max", "1K"], ["--min 2K --max 1K", "at most --max"]),
    (["bench", "kernels", "--max", "2G"], ["--max", "a size from 1 to 1G"]),
    (["bench", "kernels", "--out", "<dir>"], ["--out", "a directory"]),
    (["bench", "kernels", "--csv", "<fifo>"], ["--csv", "a FIFO, not a regular file"]),
    # simulate
    (SIMULATE + ["--timeout", "-5"], ["--timeout -5", "positive number"]),
    (SIMULATE + ["--timeout", "nan"], ["--timeout nan", "positive number"]),
    (SIMULATE + ["--timeout", ESC], ["--timeout '\\x1b[2J", "not a number"]),
    (SIMULATE + ["--ppn", "0"], ["--ppn 0", "between 1 and"]),
    (SIMULATE + ["--iterations", "-1"], ["--iterations -1", "between 1 and"]),
    (SIMULATE + ["--sizes", "8,lots"], ["--sizes", "'lots' is not a size"]),
    (SIMULATE + ["--sizes", "0"], ["--sizes 0", "from 1 byte to 8G"]),
    (SIMULATE + ["--sizes", "16G"], ["--sizes 16G", "from 1 byte to 8G"]),
    (SIMULATE + ["--configs", ESC], ["--configs: unknown \\x1b[2J", "allowed: native-mpich"]),
    (SIMULATE + ["--topology", ESC], ["--topology '\\x1b[2J", "allowed: flat"]),
    (SIMULATE + ["--preset", ESC], ["--preset '\\x1b[2J", "allowed: rig"]),
    (SIMULATE + ["--link-gbit", "0"], ["--link-gbit 0", "positive number"]),
    (SIMULATE + ["--model-from", "guess"], ["--model-from 'guess'", "allowed: auto, platform, policy"]),
    (["simulate", "--out", "sim.csv"], ["--nodes", "required"]),
    (["simulate", "--nodes", "2", "--smpirun", "<fake>", "--out", "<dir>"], ["--out", "a directory"]),
    (["simulate", "--nodes", "2", "--smpirun", "<fake>", "--out", "<file>"], ["--out", "exists: pass --resume"]),
    # tune
    (TUNE + ["--budget", "0"] + LAUNCHER, ["--budget 0", "above 0"]),
    (TUNE + ["--budget", "-5"] + LAUNCHER, ["--budget -5", "above 0"]),
    (TUNE + ["--budget", ESC] + LAUNCHER, ["--budget \\x1b[2J", "e.g. 300, 90s, 5m"]),
    (TUNE + ["--max", "4"] + LAUNCHER, ["--max", "a size from 8 to 8G"]),
    (TUNE + ["--max", "1P"] + LAUNCHER, ["--max", "a size from 8 to 8G"]),
    (["tune", "--out", "<dir>"] + LAUNCHER, ["--out", "a directory"]),
    (["tune", "--out", "<fifo>"] + LAUNCHER, ["--out", "a FIFO"]),
    (TUNE + ["--wrap", "'unbalanced"] + LAUNCHER, ["--wrap", "not a command prefix"]),
    (TUNE + ["--mpi", "lam", "--", "<fake>"], ["--mpi", "invalid choice", "openmpi"]),
    (TUNE + ["--from-stats", "<fifo>"] + LAUNCHER, ["--from-stats", "a FIFO"]),
    (TUNE + ["--mpi", "mpich", "--simulate", "--nodes 2 --timeout -5"], ["--timeout -5", "positive number"]),
    (TUNE, ["no launcher line"]),
    # mpich-tests
    (["mpich-tests", "--max-np", "0"], ["--max-np", "at most 1024", "'0'"]),
    (["mpich-tests", "--max-np", "99999"], ["--max-np", "at most 1024"]),
    (["mpich-tests", "--timeout", "0"], ["--timeout", "number of seconds"]),
    (["mpich-tests", "--flavors", f"mpich,{ESC}"], ["--flavors: unknown flavor '\\x1b[2J", "mpich, openmpi"]),
    (["mpich-tests", "--configs", ","], ["--configs: empty list"]),
    (["mpich-tests", "--set", f"X{ESC}"], ["--set", "VAR=VALUE"]),
    (["mpich-tests", "--tests", "../../etc/x"], ["--tests", "'../../etc/x'", "letters, digits"]),
    (["mpich-tests", "--workdir", "<file>"], ["--workdir", "a regular file, not a directory"]),
    (["mpich-tests", "--nope"], ["unrecognized arguments: --nope"]),
]

# The compiled tools: their own checks, their messages made one escaped line by `arshim`.
COMPILED = [
    (["policy", "explain", "--bytes", ESC, "--ppn", "1", "--nodes", "1"], ["policy", "--bytes", "\\x1b[2J"]),
    (["policy", "explain", "--bytes", "8", "--ppn", "0", "--nodes", "1"], ["policy", "--ppn", "0"]),
    (["policy", "explain", "--bytes", "8", "--ppn", "1", "--nodes", "1", "--mpi", "lam"], ["policy", "--mpi", "lam"]),
    (["policy"], ["policy", "subcommand"]),
    (["bench", "cma", "--min", ESC], ["bench cma", "--min", "\\x1b[2J"]),
    (["bench", "line-floor", "--iterations", "5"], ["bench line-floor", "--iterations 5", "between 2000"]),
    (["bench", "line-floor", "--cpus", ESC], ["bench line-floor", "--cpus"]),
]


def case_id(case):
    return " ".join(case[0]).encode("unicode_escape").decode()[:60]


def check_refusal(world, args, words):
    rc, out, err = run(world, args)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and out == "", f"exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert printable(err), repr(err)
    assert lines[0].startswith("arshim"), lines[0]
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    assert "Traceback" not in err
    ran = world["log"].read_text() if world["log"].exists() else ""
    assert ran == "", f"a launcher ran before the options were checked:\n{ran}"


@pytest.mark.parametrize("args, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_arguments_are_one_escaped_line_before_any_work(world, args, words):
    check_refusal(world, args, words)
    # Nothing written where a refused command would have written.
    assert not os.path.exists(world["tmp"] / "sim.csv") and not os.path.exists(world["tmp"] / "tuned.toml")


@pytest.mark.parametrize("args, words", COMPILED, ids=[case_id(c) for c in COMPILED])
def test_compiled_tools_bad_arguments(world, args, words):
    program = {"policy": "arshim-policy", "cma": "arshim-bench-cma", "line-floor": "arshim-bench-line-floor"}[
        args[0] if args[0] == "policy" else args[1]]
    if not any(os.access(os.path.join(d, program), os.X_OK) for d in compiled_tools_dirs()):
        pytest.skip(f"{program} not built")
    check_refusal(world, args, words)


@pytest.mark.parametrize("args, line", [
    (["run", "--timeout", "soon", "--", "./a"],
     "arshim-cluster: error: --timeout must be a positive number, not 'soon'"),
    (["run", "--hosts", "1", "--", "./a"], "arshim-cluster: error: --hosts must be 2..8"),
    (["run", "--mpi", "lam", "--", "./a"], "arshim-cluster: error: unknown MPI flavor 'lam' (mpich, openmpi)"),
    (["run", "--link", ESC, "--", "./a"], "arshim-cluster: error: unknown link '\\x1b[2J\\x1b]0;title\\x07' (1gbit, "
                                         "10gbit, none, or a tc rate such as 2500mbit)"),
    (["run", "-x", "1BAD=x", "--", "./a"], "arshim-cluster: error: -x '1BAD=x': not VAR=VALUE (or VAR, this "
                                           "environment's value)"),
    (["verify", "--bytes", ESC], "arshim-cluster: error: bad size '\\x1b[2J\\x1b]0;title\\x07' (e.g. 4M, 64K)"),
    (["up", "--mtu", f"9000{ESC}"], "arshim-cluster: error: --mtu must be 1280..65535 bytes (1500: Ethernet's "
                                    "default, 9000: jumbo frames), not '9000\\x1b[2J\\x1b]0;title\\x07'"),
])
def test_cluster_bad_arguments(fake, capsys, args, line):
    assert fake.run(*args) == 2
    err = capsys.readouterr().err
    assert err == line + "\n" and printable(err)
    assert not any(c[0] in ("ip", "nsenter", "timeout") for c in fake.system.commands)


def test_cluster_shape_checks_both_values_before_applying_either(fake, capsys):
    fake.up("--hosts", "2")
    capsys.readouterr()
    assert fake.run("shape", "--mtu", "9000", "--link", "fast") == 2
    assert capsys.readouterr().err == ("arshim-cluster: error: unknown link 'fast' (1gbit, 10gbit, none, or a tc rate "
                                       "such as 2500mbit)\n")
    assert not any("mtu" in argv for argv in fake.system.commands)  # the MTU was not changed first
