"""The SHARP path (docs/sharp.md) against the test double (libsharp_coll.so, fake_sharp_coll.cpp), asserted on data:
the program's exit status and JSON line, the statistics log, and the trace: its "sharp_warning" events (one per
SHARP warning line ARShim writes) and every rank's count of warnings and errors (the "end" event). The double reports
a misuse of the API with a MISUSE line of its own, which fails any run.

  - coverage: check_allreduce through the SHARP path (every predefined datatype and op, counts 0/1/prime/large, in
    place, sub-communicators) on every layout, and with one member's SHARP operations failing;
  - scenarios: check_sharp, fault by fault: how each call ran (llt, sat, host, native) must be what the statistics
    log counts, in its "sharp" section and in its rows; and the summary line and the report tool say the same.

  python3 -m pytest -p arshim_plugin test/sharp/test_sharp.py --build BUILD --flavor mpich|openmpi"""
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "..", "..", "tools", "report", "arshim_report.py")

# Emulated layouts (np, settings): node leaders (2 nodes x 2 ranks), every rank a member (3 nodes x 1 rank), socket
# leaders (one node of two emulated sockets x 2 ranks; the node level would have nothing to reduce across nodes).
SOCKET_POLICY = os.path.join(HERE, "socket.toml")
LLT_POLICY = os.path.join(HERE, "llt.toml")
NODE = (4, {"ARSHIM_VIRTUAL_PPN": 2})
DIRECT = (3, {"ARSHIM_VIRTUAL_PPN": 1})
SOCKET = (4, {"ARSHIM_VIRTUAL_PPN": 4, "ARSHIM_POLICY": SOCKET_POLICY})
SOCKET2 = (4, {"ARSHIM_VIRTUAL_PPN": 2, "ARSHIM_POLICY": SOCKET_POLICY})  # 2 nodes x 2 sockets of one rank

# What a run must warn: {"warnings": W} the warnings and errors of all ranks together; {problem: N} the sharp_warning
# events of that kind.
QUIET = {"warnings": 0}


def sharp_on(harness):
    return {"ARSHIM_PATH": "sharp", "ARSHIM_SHARP": "on",
            "ARSHIM_SHARP_LIB": os.path.join(harness.build, "test", "sharp", "libsharp_coll.so")}


def check_warnings(run, expect):
    problems = [e["problem"] for e in run.events("sharp_warning")]
    for key, want in expect.items():
        if key == "warnings":
            got = sum(e["warnings"] + e["errors"] for e in run.events("end"))
        else:
            got = problems.count(key)
        assert got == want, f"{got} {key}, expected {want}; sharp warnings {problems}\n{run.describe()}"
    if "warnings" in expect and expect["warnings"] == 0:
        assert not problems, problems


def ran_cleanly(run):
    assert run.returncode == 0, run.describe()
    assert "MISUSE" not in run.output, f"the SHARP test double reported a misuse of the API\n{run.describe()}"
    assert len(run.events("end")) == len(run.traces), run.describe()  # every rank's count of warnings


# name: layout, extra settings, program arguments, warnings
COVERAGE = {
    "node-np4": (NODE, {}, ["--quick", "--subcomms", "--large", 20011], QUIET),
    "node-3plus1-np4": ((4, {"ARSHIM_VIRTUAL_PPN": 3}), {}, ["--quick", "--large", 20011], QUIET),
    "direct-np3": (DIRECT, {}, ["--quick", "--subcomms", "--fallbacks", "--large", 20011], QUIET),
    "socket-np4": (SOCKET, {}, ["--quick", "--large", 20011], QUIET),
    # Each communicator's 40th SHARP operation fails on one member: that communicator goes native from there on, the
    # others keep SHARP, every result stays right.
    "node-np4-faults": (NODE, {"FAKE_SHARP_FAIL_ALLREDUCE_N": 40, "FAKE_SHARP_FAIL_RANK": 1},
                        ["--quick", "--subcomms", "--large", 20011], {"allreduce_failed": 3}),
}


@pytest.mark.parametrize("name", list(COVERAGE))
def test_every_datatype_and_op_through_the_sharp_path(harness, name):
    (np, layout), extra, args, warnings = COVERAGE[name]
    env = {**sharp_on(harness), **layout, **extra, "CHECK_FLAVOR": harness.flavor, "CHECK_EXPECT_SHIM": 1,
           "CHECK_EXPECT_PATH": "sharp"}
    run = harness.run(np, harness.program("test/sharp/check_allreduce-sharp"), args=args, env=env, timeout=300)
    ran_cleanly(run)
    out = run.program_json("check_allreduce")
    assert out is not None and out["checks"] > 0 and out["failures"] == 0, run.describe()
    check_warnings(run, warnings)


MISSING_LIB = "no-such-libsharp_coll.so"  # in the build's test/sharp directory: never there
# name: layout, check_sharp's scenario, settings, warnings
SCENARIOS = {
    "ok-node": (NODE, "ok", {}, QUIET),
    "ok-direct": (DIRECT, "ok", {}, QUIET),
    "ok-socket": (SOCKET2, "ok", {}, QUIET),
    "llt-threshold": (NODE, "all_llt", {"ARSHIM_SHARP_SAT_THRESHOLD": "1G"}, QUIET),
    "llt-policy": (NODE, "all_llt", {"ARSHIM_POLICY": LLT_POLICY}, QUIET),
    "sat-threshold": (DIRECT, "all_sat", {"ARSHIM_SHARP_SAT_THRESHOLD": 0}, QUIET),
    "no-double-caps": (NODE, "no_double", {"FAKE_SHARP_NO_DTYPES": 5}, QUIET),
    "no-sat-caps": (NODE, "no_sat", {"FAKE_SHARP_NO_SAT": 1}, QUIET),
    "sat-lock-denied": (DIRECT, "no_sat", {"FAKE_SHARP_DENY_SAT_LOCK": 1}, QUIET),
    "reg-fails": (NODE, "no_sat", {"FAKE_SHARP_FAIL_REG": 1}, {"registration_failed": 1}),
    "reg-user-fails": (DIRECT, "reg_user", {"FAKE_SHARP_FAIL_REG_AFTER": 1}, QUIET),
    "no-llt-caps": (NODE, "no_llt", {"FAKE_SHARP_NO_LLT": 1}, QUIET),
    "sat-lock-refused-node": (NODE, "sat_lock", {"FAKE_SHARP_REFUSE_SAT_LOCK": 1}, QUIET),
    "sat-lock-refused-direct": (DIRECT, "sat_lock", {"FAKE_SHARP_REFUSE_SAT_LOCK": 1}, QUIET),
    "sat-lock-retry": (NODE, "sat_lock_once", {"FAKE_SHARP_REFUSE_SAT_LOCK_COUNT": 1}, QUIET),
    "fail-init": (NODE, "no_group", {"FAKE_SHARP_FAIL_INIT": 1}, {"group_not_created": 1}),
    "fail-caps": (NODE, "no_group", {"FAKE_SHARP_FAIL_CAPS": 1}, {"group_not_created": 1}),
    "fail-comm-init-one-rank": (NODE, "no_group", {"FAKE_SHARP_FAIL_COMM_INIT": 1, "FAKE_SHARP_FAIL_RANK": 1},
                                {"group_not_created": 1}),
    "fail-allreduce-node": (NODE, "fail_allreduce", {"FAKE_SHARP_FAIL_ALLREDUCE_N": 7, "FAKE_SHARP_FAIL_RANK": 1},
                            {"allreduce_failed": 1}),
    "fail-allreduce-direct": (DIRECT, "fail_allreduce", {"FAKE_SHARP_FAIL_ALLREDUCE_N": 9}, {"allreduce_failed": 1}),
    "fail-allreduce-socket": (SOCKET2, "fail_allreduce", {"FAKE_SHARP_FAIL_ALLREDUCE_N": 5, "FAKE_SHARP_FAIL_RANK": 2},
                              {"allreduce_failed": 1}),
    # ARSHIM_SHARP=on and no library: one warning, that one.
    "missing-lib-on": (NODE, "missing", {"ARSHIM_SHARP_LIB": MISSING_LIB}, {"library_missing": 1, "warnings": 1}),
    # auto and off: not a word about SHARP.
    "missing-lib-auto": (NODE, "missing", {"ARSHIM_SHARP_LIB": MISSING_LIB, "ARSHIM_SHARP": "auto"}, QUIET),
    "off": (NODE, "off", {"ARSHIM_SHARP": "off"}, QUIET),
}


def stats_agree_with_the_program(stats, out):
    """check_sharp gives rank 0's calls by how they ran; every rank runs every call the same way (the program checks
    that), so the log's SHARP counters, summed over ranks, are those times the number of ranks. Each call's row must
    say the same: rows of the sharp path carry "sharp" (llt, sat, host_<reason>), calls declined to native have
    reason sharp_unavailable. Returns the problems found."""
    ranks = out["ranks"]
    want = {"llt": out["llt"] * ranks, "sat": out["sat"] * ranks, "host": out["host"] * ranks,
            "unavailable": out["native"] * ranks}
    sharp = stats.get("sharp")
    if sharp is None:
        return ["the log has no sharp object"]
    problems = [f"sharp.{k} = {sharp.get(k)}, expected {v}" for k, v in want.items() if sharp.get(k) != v]
    host_reasons = sum(v for k, v in sharp.items() if k.startswith("host_"))
    if host_reasons != sharp.get("host"):
        problems.append(f"host reasons add up to {host_reasons}, host = {sharp.get('host')}")
    rows = {"llt": 0, "sat": 0, "host": 0, "unavailable": 0}
    for row in stats["rows"]:
        if row.get("other"):
            problems.append("a row was folded into 'other'")
        elif row["path"] == "sharp":
            kind = row.get("sharp", "")
            if kind in ("llt", "sat"):
                rows[kind] += row["calls"]
            elif kind.startswith("host_"):
                rows["host"] += row["calls"]
                if sharp.get(kind, 0) == 0:
                    problems.append(f"a row ran as {kind} but that counter is 0")
            else:
                problems.append(f"a sharp row without its kind: {row}")
        elif row["reason"] == "sharp_unavailable":
            rows["unavailable"] += row["calls"]
    problems += [f"rows count {rows[k]} {k} calls, expected {v}" for k, v in want.items() if rows[k] != v]
    return problems


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_call_runs_as_the_statistics_log_says(harness, tmp_path, name):
    (np, layout), scenario, settings, warnings = SCENARIOS[name]
    env = {**sharp_on(harness), **layout, **settings, "CHECK_FLAVOR": harness.flavor, "ARSHIM_STATS_CALLSITES": 0,
           "ARSHIM_STATS_SUMMARY": 1}  # the summary: its sharp line is checked against the log below
    if env["ARSHIM_SHARP_LIB"] == MISSING_LIB:
        env["ARSHIM_SHARP_LIB"] = os.path.join(harness.build, "test", "sharp", MISSING_LIB)
    run = harness.run(np, harness.program("test/sharp/check_sharp"), args=[scenario], env=env, stats=True,
                      directory=str(tmp_path), timeout=300)
    ran_cleanly(run)
    out = run.program_json("check_sharp")
    assert out is not None and out["failures"] == 0, run.describe()
    check_warnings(run, warnings)
    assert run.stats is not None, run.describe()
    problems = stats_agree_with_the_program(run.stats, out)
    assert not problems, problems
    # The summary the job printed is the one formatter's text of its log (its sharp line says the log's sharp
    # object; the sentence itself is tested in test/shim/test_summary.cpp): compared line for line, nothing parsed.
    summary_program = os.path.join(harness.build, "tools", "report", "arshim-stats-summary")
    printed = [line for line in run.output.splitlines() if line.startswith("arshim[0] ")]
    own = subprocess.run([summary_program, str(tmp_path / "stats.json")], capture_output=True, text=True)
    assert own.returncode == 0, own.stderr
    summary = own.stdout.splitlines()
    assert summary and any(line.startswith("arshim[0] sharp: ") for line in summary), own.stdout
    start = printed.index(summary[0]) if summary[0] in printed else -1
    assert printed[start:start + len(summary)] == summary, f"printed:\n{chr(10).join(printed)}\nfrom the log:\n{own.stdout}"
    # The report tool accepts the log, and prints the SHARP section and the rows' SHARP kinds.
    log = str(tmp_path / "stats.json")
    valid = subprocess.run([sys.executable, REPORT, "--validate", log], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    assert valid.returncode == 0, valid.stdout
    report = subprocess.run([sys.executable, REPORT, str(tmp_path / "stats.json"), "--section", "sharp", "--section",
                             "rows"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert report.returncode == 0 and re.search(r"^SHARP path", report.stdout, re.M), report.stdout
