"""`arshim report` and `arshim tune --from-stats` on hostile logs (the report tool as a program, in a subprocess
with a time and memory limit so that a hang or a runaway read fails the test instead of the machine).

Every refused file: exit status 2 and exactly one line on stderr, `arshim report: FILE: reason`. Strings of a
valid log that try to reach the terminal (escapes, a newline forging a line) are printed escaped."""
import json
import os
import resource
import subprocess
import sys

import pytest

MEMORY = 2 << 30  # address space of the report: /dev/zero read whole would exceed it within a second


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(script, *args, timeout=60):
    try:
        p = subprocess.run([sys.executable, script, *map(str, args)], capture_output=True, timeout=timeout,
                           preexec_fn=limit_memory, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{os.path.basename(script)} {' '.join(map(str, args))}: still running after {timeout} s")
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def assert_refused(result, path, reason=None):
    rc, out, err = result
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1, f"exit {rc}, stderr:\n{err}"
    assert lines[0].startswith(f"arshim report: {path}: "), lines[0]
    assert "Traceback" not in err
    if reason:
        assert lines[0] == f"arshim report: {path}: {reason}"


def save(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def make_fifo(tmp_path):
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    return path


def make_dir(tmp_path):
    path = tmp_path / "dir.json"
    path.mkdir()
    return path


# Files that are no log at all: refused whether printed or validated.
UNREADABLE = {
    "deep-nesting": (lambda t, log: save(t, "deep.json", "[" * 100000), "JSON nested deeper than 64 levels"),
    "non-utf8": (lambda t, log: save(t, "latin1.json", json.dumps(log).replace('"vm"', '"v\\u00e9"').encode()
                                     .replace(b"\\u00e9", b"\xe9")), "not UTF-8 text (byte 0xe9 at offset"),
    "huge-integer": (lambda t, log: save(t, "huge.json", json.dumps(log).replace(
        f'"bytes": {log["totals"]["bytes"]}', f'"bytes": {10 ** 400}', 1)), "an integer beyond 2**63 (401 digits)"),
    "nan": (lambda t, log: save(t, "nan.json", json.dumps(log).replace(
        f'"time_s": {log["paths"][0]["time_s"]}', '"time_s": NaN', 1)), "NaN is not a JSON number"),
    "float-overflow": (lambda t, log: save(t, "inf.json", json.dumps(log).replace(
        f'"time_s": {log["paths"][0]["time_s"]}', '"time_s": 1e400', 1)), "a number beyond the range of a double"),
    "fifo": (lambda t, log: make_fifo(t), "a FIFO, not a regular file"),
    "directory": (lambda t, log: make_dir(t), "a directory, not a regular file"),
    "dev-zero": (lambda t, log: "/dev/zero", "a character device, not a regular file"),
}


@pytest.mark.parametrize("mode", ["print", "validate"])
@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_file(tmp_path, report_script, sample_log, case, mode):
    make, reason = UNREADABLE[case]
    path = make(tmp_path, sample_log())
    result = run(report_script, *(["--validate"] if mode == "validate" else []), path)
    assert_refused(result, path)
    assert reason in result[2]


def mutated(mutate):
    def make(tmp_path, log):
        mutate(log)
        return save(tmp_path, "mutated.json", json.dumps(log))
    return make


# Files that are JSON but no valid log: refused before any field is used.
INVALID = {
    "empty-object": (lambda t, log: save(t, "empty.json", "{}"), "not an ARShim statistics log"),
    "schema-only": (lambda t, log: save(t, "minimal.json", '{"schema": "arshim-stats/1"}'),
                    "not a valid arshim-stats/1 log: $.: 'scope' is a required property"),
    "calls-a-string": (mutated(lambda d: d["paths"][0].update(calls="many")), "$.paths.0.calls: 'many' is not"),
    "time-a-string": (mutated(lambda d: d["paths"][0].update(time_s="fast")), "$.paths.0.time_s: 'fast' is not"),
    "bucket-bound-float": (mutated(lambda d: d["buckets"][1].update(bytes_min=8.5)), "$.buckets.1.bytes_min: 8.5"),
    "run-an-array": (mutated(lambda d: d.update(run=[])), "$.run: [] is not of type 'object'"),
    "communicators-an-object": (mutated(lambda d: d.update(communicators={"a": 1})), "$.communicators: "),
    "nodes-without-ppn": (mutated(lambda d: d["run"].pop("ppn")), "$.run: 'nodes' without 'ppn'"),
    # Counts are never negative (issue 56): a log saying so is refused, not printed.
    "negative-calls": (mutated(lambda d: d["totals"].update(calls=-5)), "$.totals.calls: -5 is less than the minimum of 0"),
    "negative-bytes": (mutated(lambda d: d["paths"][0].update(bytes=-1)), "$.paths.0.bytes: -1 is less than the minimum"),
    "negative-ranks": (mutated(lambda d: d["rows"][0].update(ranks=-2)), "$.rows.0.ranks: -2 is less than the minimum"),
    "negative-np": (mutated(lambda d: d["run"].update(np=-4)), "$.run.np: -4 is less than the minimum of 1"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_log(tmp_path, report_script, sample_log, case):
    make, reason = INVALID[case]
    path = make(tmp_path, sample_log())
    result = run(report_script, path)
    assert_refused(result, path)
    assert reason in result[2]


def test_two_logs_one_invalid(tmp_path, report_script, sample_log):
    from conftest import DATA
    path = mutated(lambda d: d.update(run=[]))(tmp_path, sample_log())
    assert_refused(run(report_script, os.path.join(DATA, "sweep-native.json"), path), path)


def test_file_name_with_a_newline_stays_one_line(tmp_path, report_script):
    path = save(tmp_path, "a\narshim[0] error: FORGED.json", "[" * 100000)
    rc, out, err = run(report_script, path)
    assert rc == 2 and len(err.splitlines()) == 1 and "\\narshim[0] error: FORGED.json" in err


HOSTILE = "\x1b[2J\x1b]0;title\x07\narshim[0] error: FORGED\x9b2J\u202e"


def hostile_log(log):
    """A valid log whose strings try to reach the terminal: labels, function and file names, settings, versions."""
    log["communicators"][0]["label"] = "comm " + HOSTILE
    sites = log["callsites"]["sites"]
    log["callsites"].update(recorded=True, enabled=True)
    site = {"site": "0x1", "calls": 1, "bytes": 8, "ranks": 1, "time_s": 1e-6, "avg_us": 1.0, "call_min_us": 1.0,
            "call_max_us": 1.0, "per_rank": {m: {"min": 1, "avg": 1, "max": 1} for m in ("calls", "time_s")}}
    frame = {"function": "", "function_offset": "0x1", "file": "", "line": 7, "module": "", "offset": "0x1"}
    for changes in ({"function": "fn " + HOSTILE, "file": "/src/" + HOSTILE + ".c"},  # function (file:line)
                    {"module": "mod " + HOSTILE},  # module+offset
                    {"function": "__pyx_pw_" + "9" * 5000 + "x", "binding": "mpi4py"}):  # no Cython name
        sites.append(dict(site, frames=[dict(frame, **changes)]))
    log["run"]["hostname"] = "host " + HOSTILE
    log["run"]["command"].append(HOSTILE)
    log["run"]["mpi"]["version"] = "MPI $\\frac{$ \ud800 " + HOSTILE
    log["run"]["policy_source"] = "policy " + HOSTILE
    log["run"]["arshim_version"] = "0.1 " + HOSTILE
    log["run"]["settings"]["ARSHIM_LOG"] = {"value": HOSTILE, "source": "environment"}
    log["run"]["settings"]["ARSHIM_FORGED\n"] = {"value": "x", "source": "environment"}
    log["library_bugs"] = {"bug " + HOSTILE: 3}
    return log


def assert_harmless(text):
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\u202e" not in text
    assert not any(line.startswith("arshim[0] error: FORGED") for line in text.splitlines())


@pytest.mark.parametrize("extra", [[], ["--all-settings", "--sort", "calls"]])
def test_log_strings_are_printed_escaped(tmp_path, report_script, sample_log, extra):
    path = save(tmp_path, "hostile.json", json.dumps(hostile_log(sample_log())))
    rc, out, err = run(report_script, path, *extra)
    assert rc == 0 and err == "", err
    assert_harmless(out + err)
    assert "comm \\x1b[2J\\x1b]0;title\\x07\\narshim[0] error: FORGED\\x9b2J\\u202e" in out
    assert "fn \\x1b[2J" in out and "mod \\x1b[2J" in out and "host \\x1b[2J" in out
    assert "ARSHIM_FORGED\\n=x" in out


def test_comparison_prints_escaped(tmp_path, report_script, sample_log):
    a = save(tmp_path, "a.json", json.dumps(hostile_log(sample_log())))
    rc, out, err = run(report_script, a, a)
    assert rc == 0 and err == "", err
    assert_harmless(out)


def test_plot_labels_and_html_are_escaped(tmp_path, report_script, sample_log):
    pytest.importorskip("matplotlib")
    a = save(tmp_path, "a\x1b[2J.json", json.dumps(hostile_log(sample_log("sweep-native.json"))))
    b = save(tmp_path, "b.json", json.dumps(hostile_log(sample_log("sweep-pipelined.json"))))
    for out_name in ("one.png", "cmp.html"):
        out_path = tmp_path / out_name
        args = [a, "--plot", out_path] if out_name == "one.png" else [a, b, "--plot", out_path]
        rc, out, err = run(report_script, *args, timeout=180)
        assert rc == 0 and out_path.stat().st_size > 10000, err
        assert_harmless(out + err)
    page = (tmp_path / "cmp.html").read_text()
    assert_harmless(page)
    assert "MPI \\$\\\\frac{\\$" in page or "MPI $\\\\frac{$" in page  # the version, escaped, not mathtext


# `arshim tune --from-stats FILE`: the log is checked before anything is launched.

def recorder(tmp_path, name):
    """A program that only leaves a mark that it ran."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\ntouch '{tmp_path}/{name}.ran'\nexit 1\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("case", ["deep-nesting", "huge-integer", "fifo", "dev-zero", "schema-only",
                                  "calls-a-string"])
def test_tune_checks_the_log_before_measuring(tmp_path, tune_script, sample_log, case):
    make = {**UNREADABLE, **INVALID}[case][0]
    log = make(tmp_path, sample_log())
    launcher, arshim = recorder(tmp_path, "mpirun"), recorder(tmp_path, "arshim")
    rc, out, err = run(tune_script, "--arshim", arshim, "--mpi", "mpich", "--probe-mpich", "/bin/true",
                       "--out", tmp_path / "tuned.toml", "--budget", "10s", "--from-stats", log, "--", launcher,
                       "-n", "1")
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"arshim tune: --from-stats {log}: "), err
    assert not os.path.exists(f"{launcher}.ran") and not os.path.exists(f"{arshim}.ran")
    assert not os.path.exists(tmp_path / "tuned.toml.state.json")
