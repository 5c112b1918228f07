"""arshim mpich-tests (tools/arshim/mpich_coll.py) without MPI: reading coll/testlist.in, the runs and their
command lines, judging a run (its statistics log, built here as JSON and validated against the schema like every
log; known library bugs, excerpts, hung ranks' stacks), the tally and exit status, finding the source, and `arshim
mpich-tests` as a program (bad options, --list on a small fake test suite)."""
import copy
import json
import os
import subprocess
import sys

import pytest

from arshim import mpich_coll as mc
from conftest import DATA

ARSHIM = os.path.join(os.path.dirname(mc.__file__), "..", "arshim.py")

TESTLIST = """\
allred 4 arg=-count=10
allred 7 arg=-count=10
allred 4 arg=-count=100
allredmany 4
allred3 10
allred5 5
allred5 10
# a comment: allred9 4
bcast 4 env=MPIR_CVAR_X=1 timeLimit=300   # trailing comment
@largetest@gather_big 8 mem=20.1
iallred 2

"""

# What an ARShim run prints for people (shown in excerpts, never parsed for a verdict).
SUMMARY_OK = """\
 No Errors
arshim[0] summary: 476 MPI_Allreduce calls on 4 ranks, 6.8 MiB, 1.292 s in allreduce (sum over ranks)
arshim[0] path              calls       bytes     time_s     avg_us timed_min_us timed_max_us   rank_s min..max
arshim[0] native              177    11.5 KiB     0.0017       9.60         0.29        79.68    0.000..0.001
arshim[0] multileader         162     6.6 MiB     1.0728    6622.07       132.62     28295.76    0.244..0.294
arshim[0] native because: cold_communicator=161 tuned=16
arshim[0] verify: 299 calls compared with the library's result (summed over ranks): 0 mismatches; worst relative difference 0
arshim[0] argument check: 476 calls checked (summed over ranks), 0 with arguments that differ across ranks
"""
with open(os.path.join(DATA, "program-openmpi.json")) as f:
    RECORDED = json.load(f)  # a statistics log the shim wrote (test/stats/data): the base of the logs below


def arshim_log(np_=4, verify=0, arguments=0, without=(), other=(), verify_calls=1000, check_args=True):
    """The statistics log of an ARShim run of the suite (ARSHIM_VERIFY=1000 ARSHIM_CHECK_ARGS=1): np_ ranks, the
    start-up check's findings (ranks without ARShim, ranks with another build), verify's and the argument check's
    mismatches; 177 native and 162 multileader calls, 299 verified."""
    doc = copy.deepcopy(RECORDED)
    run = doc["run"]
    run["np"] = np_
    run["settings"]["ARSHIM_VERIFY"] = {"value": str(verify_calls), "source": "environment"}
    run["settings"]["ARSHIM_CHECK_ARGS"] = {"value": "1" if check_args else "0", "source": "environment"}
    run["startup_check"] = {"checked": True, "all_loaded": not without and not other, "timeout_s": 30,
                            "ranks_without_arshim": list(without)[:8], "ranks_without_arshim_count": len(without),
                            "ranks_other_build": list(other)[:8], "ranks_other_build_count": len(other)}
    template = doc["paths"][0]
    doc["paths"] = [dict(template, path="native", calls=177), dict(template, path="multileader", calls=162)]
    doc["verify"] = {"enabled": verify_calls > 0, "calls_per_key": verify_calls, "calls": 299 if verify_calls else 0,
                     "mismatches": verify, "library_bug_calls": 0, "library_bug_differences": 0,
                     "unordered_elements": 0, "worst_relative_difference": 0.0}
    doc["argument_check"] = {"enabled": check_args, "calls": 476 if check_args else 0, "mismatches": arguments}
    return doc


@pytest.fixture
def stats_of(tmp_path):
    """Writes a log (a dict, or text as it is) and reads it back as the tool does: (log, None) or (None, problem)."""
    def write(doc, name="run.stats.json"):
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return mc.read_stats(str(path))
    return write


# ---------------------------------------------------------------------------------------------------------------
# The test list and the runs

def test_testlist_entries_skip_comments():
    entries = mc.testlist_entries(TESTLIST)
    names = [e[0] for e in entries]
    assert "allred9" not in names and "" not in names
    assert not mc.plan_runs(["gather_big"], entries, 4)  # behind a configure substitution: never a program's name
    assert entries[0] == ("allred", 4, ("-count=10",), ())
    assert ("bcast", 4, (), ("MPIR_CVAR_X=1",)) in entries
    assert entries[-1] == ("iallred", 2, (), ())


def test_in_testlist_matches_whole_names_at_line_start():
    assert mc.in_testlist(TESTLIST, "allred")
    assert mc.in_testlist(TESTLIST, "iallred")
    assert not mc.in_testlist(TESTLIST, "allred9")  # only in a comment
    assert not mc.in_testlist(TESTLIST, "allred2")  # a prefix of nothing listed
    assert not mc.in_testlist(TESTLIST, "gather_big")  # behind a configure substitution
    assert mc.in_testlist("  allred2\n", "allred2")


@pytest.mark.parametrize("source,calls", [
    ("  MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, comm);", True),
    ("x = MPI_Allreduce (a, b, 1, MPI_INT, MPI_SUM, comm);", True),
    ("MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, comm);", True),
    ("MPI_Iallreduce(a, b, 1, MPI_INT, MPI_SUM, comm, &r);", False),
    ("PMPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, comm);", False),
    ("MPI_Allreduce_init(a, b, 1, MPI_INT, MPI_SUM, comm, i, &r);", False),
    ("/* see MPI_Allreduce */", False),
])
def test_calls_allreduce(source, calls):
    assert mc.calls_allreduce("#include <mpi.h>\n" + source + "\n") is calls


def test_plan_runs_caps_ranks_and_merges_duplicates():
    runs = mc.plan_runs(["allred", "allred3", "allred5", "iallred"], mc.testlist_entries(TESTLIST), 4)
    assert [(r.label, r.np, r.listed) for r in runs] == [
        ("allred(-count=10)", 4, 4),  # the 7-rank entry becomes the same run
        ("allred(-count=100)", 4, 4),
        ("allred3", 4, 10),
        ("allred5", 4, 5),  # 5 and 10 ranks: one run, the first listed count kept
        ("iallred", 2, 2),
    ]
    wide = mc.plan_runs(["allred"], mc.testlist_entries(TESTLIST), 8)
    assert [(r.label, r.np) for r in wide] == [("allred(-count=10)", 4), ("allred(-count=10)", 7),
                                               ("allred(-count=100)", 4)]


def test_plan_runs_follows_the_program_order():
    runs = mc.plan_runs(["iallred", "allredmany"], mc.testlist_entries(TESTLIST), 4)
    assert [r.name for r in runs] == ["iallred", "allredmany"]


def test_list_lines():
    assert mc.run_list_line(mc.Run("allred3", 4, 10)) == "  allred3                      np=4 (testlist: 10)"
    assert mc.run_list_line(mc.Run("allred", 4, 4, ("-count=10",))) == "  allred(-count=10)            np=4"
    assert mc.run_list_line(mc.Run("bcast", 2, 2, (), ("A=1", "B=2"))).endswith("np=2 env: A=1 B=2")


# ---------------------------------------------------------------------------------------------------------------
# Command lines

def test_native_run_preloads_nothing():
    run = mc.Run("allred", 4, 7, ("-count=10",), ("MPIR_CVAR_X=1",))
    cmd = mc.run_command("/src/test/mpi/mpirun.sh", "mpich", run, "native", "/w/lib/libarshim-mpich.so",
                         ["ARSHIM_LOG=info"])
    assert cmd == ["/src/test/mpi/mpirun.sh", "mpich", "4", "none", "MPIR_CVAR_X=1", "--", "./allred", "-count=10"]


def test_arshim_runs_get_the_library_the_forced_path_the_checks_and_set():
    run = mc.Run("allred2", 4, 4)
    cmd = mc.run_command("m.sh", "openmpi", run, "pipelined-1K", "/w/lib/libarshim-openmpi.so", ["ARSHIM_LOG=info"],
                         "/w/logs/allred2.pipelined-1K.stats.json")
    assert cmd == ["m.sh", "openmpi", "4", "/w/lib/libarshim-openmpi.so", "ARSHIM_PATH=pipelined",
                   "ARSHIM_SEGMENT_BYTES=1K", *mc.CHECK_VARS, "ARSHIM_LOG=info",
                   "ARSHIM_STATS=/w/logs/allred2.pipelined-1K.stats.json", "--", "./allred2"]
    default = mc.run_command("m.sh", "mpich", run, "default", "lib.so")
    assert default[4:-2] == list(mc.CHECK_VARS)
    assert mc.stats_name(mc.Run("allred", 4, 4, ("-count=100",)), "default") == "allred_-count=100_.default.stats.json"


@pytest.mark.parametrize("np_,applies", [(1, False), (2, True), (3, False), (4, True), (5, True), (10, True)])
def test_virtual_nodes_of_two_need_an_even_count_or_four_ranks(np_, applies):
    assert (mc.config_vars("multileader-vppn2", np_) is not None) is applies
    assert (mc.run_command("m.sh", "mpich", mc.Run("t", np_, np_), "multileader-vppn2", "l.so") is not None) is applies
    assert mc.config_vars("multileader", np_) == ["ARSHIM_PATH=multileader"]


def test_log_names_are_plain():
    assert mc.log_name(mc.Run("allred", 4, 4, ("-count=100",)), "native") == "allred_-count=100_.native.log"
    assert mc.log_name(mc.Run("t", 2, 2, ("a b", "../x")), "default") == "t_a_b_.._x_.default.log"


# ---------------------------------------------------------------------------------------------------------------
# Judging a run

def test_passing_runs(stats_of):
    assert mc.judge("native", 0, False, " No Errors\n", 240) == []
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(arshim_log())) == []


def test_exit_status_time_out_and_missing_no_errors():
    assert mc.judge("native", 1, False, " No Errors\n", 240) == ["exit status 1"]
    assert mc.judge("native", 124, False, "", 240) == ["killed by the launcher's time limit, exit 124",
                                                      "no ' No Errors' line"]
    assert mc.judge("native", 143, True, " No Errors\n", 30) == ["no end after 30 s: hang (stopped)"]
    assert mc.judge("native", 0, False, "  Found 3 errors\n", 240) == ["no ' No Errors' line (Found 3 errors)"]


def test_an_arshim_run_without_its_log_fails(tmp_path):
    missing = mc.read_stats(str(tmp_path / "absent.json"))
    assert missing[0] is None and missing[1].startswith("no statistics log")
    # The summary on stderr is no substitute: the verdict is the log's
    assert mc.judge("multileader", 0, False, SUMMARY_OK, 240, 4, *missing) == [missing[1]]
    # a run that failed anyway is not also blamed for the log its rank 0 never wrote
    assert mc.judge("multileader", 1, False, " No Errors\n", 240, 4, *missing) == ["exit status 1"]


@pytest.mark.parametrize("text,reason", [
    ("", "statistics log unusable: "),
    ("{\"schema\": \"arshim-stats/1\"", "statistics log unusable: "),
    (json.dumps({"schema": "other/1"}), "statistics log unusable: not an ARShim statistics log"),
    (json.dumps(dict(arshim_log(), totals="many")), "statistics log unusable: not a valid arshim-stats/1 log"),
])
def test_an_unusable_log_fails(stats_of, text, reason):
    stats, problem = stats_of(text)
    assert stats is None and problem.startswith(reason)
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, stats, problem) == [problem]


def test_verify_and_argument_check_counts_come_from_the_log(stats_of):
    got = mc.judge("default", 0, False, SUMMARY_OK, 240, 4, *stats_of(arshim_log(verify=2, arguments=5)))
    assert got == ["verify: 2 mismatches", "argument check: 5 calls with arguments that differ"]


@pytest.mark.parametrize("section", ["verify", "argument_check"])
def test_a_log_without_a_mode_section_is_no_zero(stats_of, section):
    doc = arshim_log()
    del doc[section]
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(doc)) == [
        f"statistics log without its {section} section"]


def test_a_mode_that_did_not_run_is_a_failure(stats_of):
    doc = arshim_log()
    doc["verify"]["enabled"] = False
    doc["argument_check"]["enabled"] = False
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(doc)) == [
        "verify off although ARSHIM_VERIFY=1000", "argument check off although ARSHIM_CHECK_ARGS=1"]
    # --set turned them off: nothing to blame
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4,
                    *stats_of(arshim_log(verify_calls=0, check_args=False))) == []


def test_ranks_without_arshim_come_from_the_log(stats_of):
    got = mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(arshim_log(without=[1], other=[3])))
    assert got == ["ARShim disabled at start (not loaded on ranks 1; another build on ranks 3): nothing was checked"]
    got = mc.judge("default", 0, False, " No Errors\n", 240, 16, *stats_of(arshim_log(16, without=range(4, 16))))
    assert got == ["ARShim disabled at start (not loaded on ranks 4, 5, 6, 7, 8, 9, 10, 11 and 4 more): nothing was "
                   "checked"]


def test_a_log_of_another_run_or_without_the_check(stats_of):
    assert mc.judge("default", 0, False, " No Errors\n", 240, 2, *stats_of(arshim_log(4))) == [
        "statistics log of 4 ranks, the run had 2"]
    doc = arshim_log()
    doc["run"]["startup_check"] = {"checked": False}
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(doc)) == [
        "ARShim's start-up check did not run (MPI_Init not intercepted)"]
    del doc["run"]["startup_check"]
    assert mc.judge("default", 0, False, " No Errors\n", 240, 4, *stats_of(doc)) == [
        "statistics log without run.startup_check (an older ARShim?)"]


def test_mismatch_and_arguments_differ_lines(stats_of):
    # Lines for people can only add a reason (the log's counts decide)
    log = SUMMARY_OK + "arshim[1] MISMATCH at call 3\narshim[2] MISMATCH at call 3\n" \
                       "arshim[0] error: MPI_Allreduce arguments differ across the 3 ranks\n"
    assert mc.judge("default", 0, False, log, 240, 4, *stats_of(arshim_log())) == [
        "2 MISMATCH lines", "1 'arguments differ' lines"]
    # native runs are judged by MPICH's verdict only
    assert mc.judge("native", 0, False, log, 240) == []


def errors(*pairs):
    return "".join(f"({i}) Error for type {t} and op {o}\n" for i, (t, o) in enumerate(pairs)) + " Found 4 errors\n"


def test_known_bug_open_mpi_avx_sum():
    log = errors(("MPI_UNSIGNED_CHAR", "MPI_SUM"), ("MPI_INT8_T", "MPI_SUM"), ("MPI_UNSIGNED_CHAR", "MPI_SUM"))
    assert mc.known_bug_of("openmpi", log) == ("Open MPI 4.1.x op/avx saturates 8/16-bit integer SUM (ompi#8045) "
                                               "[MPI_INT8_T:MPI_SUM, MPI_UNSIGNED_CHAR:MPI_SUM]")
    assert mc.known_bug_of("mpich", log) is None  # not a bug of that library


def test_known_bugs_together_and_unknown_errors():
    log = errors(("MPI_UNSIGNED_LONG", "MPI_MAX"), ("MPI_SHORT", "MPI_SUM"))
    assert mc.known_bug_of("openmpi", log) == (
        "Open MPI 4.1.x op/avx saturates 8/16-bit integer SUM (ompi#8045);"
        "Open MPI 4.1.2-4.1.4 compares MPI_UNSIGNED_LONG as signed in MIN/MAX (ompi#10525) "
        "[MPI_SHORT:MPI_SUM, MPI_UNSIGNED_LONG:MPI_MAX]")
    assert mc.known_bug_of("openmpi", log + errors(("MPI_INT", "MPI_SUM"))) is None  # one unexplained error
    assert mc.known_bug_of("mpich", errors(("MPI_UINT32_T", "MPI_MIN"))).startswith("MPICH 4.0.x compares unsigned")
    assert mc.known_bug_of("mpich", errors(("MPI_INT", "MPI_MIN"))) is None
    assert mc.known_bug_of("openmpi", "exit status 1\n") is None  # no error line at all


def test_excerpt_picks_the_lines_that_tell():
    log = ("# /src/test/mpi/mpirun.sh mpich 4 none -- ./allred\n"
           + "".join(f"({i}) Error for type MPI_INT and op MPI_SUM\n" for i in range(10))
           + "12 Error lines\nnothing here\nanother\x1b[2J error\n" + SUMMARY_OK)
    lines = mc.excerpt(log)
    assert lines[0] == "      | (0) Error for type MPI_INT and op MPI_SUM"
    assert len([ln for ln in lines if "Error for type" in ln]) == 8
    assert not any("12 Error lines" in ln or "mpirun.sh" in ln or "argument check" in ln for ln in lines)
    assert "      | arshim[0] summary: 476 MPI_Allreduce calls" in "\n".join(lines)
    assert any(ln.startswith("      | arshim[0] verify:") for ln in lines)
    assert len(mc.excerpt(log, verbose=True)) == len(log.splitlines())
    assert "\x1b" not in "".join(mc.excerpt("bad\x1b[2J error\n", verbose=True))


GDB = """\
### arshim mpich-tests: no end after 30 s; stopping the run
### backtrace of rank process 4242
#0  0x00007f3a1c in __GI___poll (fds=0x1, nfds=1, timeout=-1) at ../sysdeps/poll.c:29
#1  0x00007f3a2d in ?? ()
#2  arshim::(anonymous namespace)::node_wait (c=...) at shim/node.cpp:88
#3  0x000055d1 in main (argc=1, argv=0x7ffd) at allred.c:40
### backtrace of rank process 4243
#0  MPIR_Wait_impl (request_ptr=0x0) at src/mpi/request/wait.c:10
"""


def test_stack_summary_one_line_per_rank():
    assert mc.stack_summary(GDB) == ["stack of pid 4242: __GI___poll < arshim::{anon}::node_wait < main",
                                     "stack of pid 4243: MPIR_Wait_impl"]
    assert mc.stack_summary(SUMMARY_OK) == []
    assert any(ln.endswith("stack of pid 4243: MPIR_Wait_impl") for ln in mc.excerpt(GDB))


def test_arshim_digest_and_warnings():
    log = arshim_log()
    assert mc.arshim_digest(log) == "paths: native=177 multileader=162; verified 299 calls"
    assert mc.arshim_digest(None) == ""
    assert mc.arshim_digest(arshim_log(verify_calls=0)) == "paths: native=177 multileader=162"
    assert mc.warning_count(SUMMARY_OK + "arshim[1] warning: x\narshim[0] error: y\nsome arshim[0] warning: z\n") == 2
    assert mc.passed_digest("native", SUMMARY_OK) == ""
    assert mc.passed_digest("native", " No Errors\narshim[3] warning: x\n") == "; 1 ARShim warning/error lines (see log)"
    assert mc.passed_digest("default", SUMMARY_OK + "arshim[0] error: y\n", log).endswith(
        "verified 299 calls; 1 ARShim warning/error lines (see log)")


def test_descendants_of_a_run():
    table = {100: (1, "timeout"), 101: (100, "mpirun.openmpi"), 102: (101, "allred"), 103: (101, "allred"),
             200: (1, "allred"), 104: (102, "sh"), 300: (103, "averyveryverylongname"[:15])}
    assert mc.descendants(table, 100, "allred") == [102, 103]
    assert mc.descendants(table, 100, "averyveryverylongname") == [300]
    assert mc.descendants(table, 999, "allred") == []


# ---------------------------------------------------------------------------------------------------------------
# The tally

def tally_of(verdicts):
    runs = [mc.Run("allred", 4, 4, ("-count=10",)), mc.Run("iallred", 2, 2)]
    tally = mc.Tally(runs, ["mpich", "openmpi"], ["native", "default"])
    for (run, flavor, config), verdict in zip([(r, f, c) for r in runs for f in tally.flavors for c in tally.configs],
                                              verdicts):
        tally.record(run, flavor, config, verdict, None if verdict in (mc.OK, mc.NA) else f"{run.label}: {verdict}")
    return tally


def test_tally_exit_statuses():
    assert tally_of([mc.OK] * 8).exit_status() == 0
    assert tally_of([mc.OK] * 7 + [mc.NA]).exit_status() == 0
    assert tally_of([mc.BUG] + [mc.OK] * 7).exit_status() == 3
    assert tally_of([mc.BUG, mc.FAIL] + [mc.OK] * 6).exit_status() == 1
    assert tally_of([mc.NOT_BUILT] + [mc.OK] * 7).exit_status() == 1


def test_tally_table_and_total():
    tally = tally_of([mc.OK, mc.OK, mc.BUG, mc.OK, mc.OK, mc.FAIL, mc.NA, mc.NOT_BUILT])
    table = tally.table()
    assert table[1:4] == ["", "  mpich                    np  native            default          ",
                          "  allred(-count=10)        4   ok                ok               "]
    assert table[-1] == "  iallred                  2   n/a               build            "
    assert tally.total_line(61) == ("Total: 8 runs: 4 ok, 2 FAIL, 1 known library bug (native), 1 not applicable; "
                                    "1 min 01 s")
    assert tally.failures == ["allred(-count=10): bug", "iallred: FAIL", "iallred: build"]


# ---------------------------------------------------------------------------------------------------------------
# The source

def test_newest_tarball_in_version_order(tmp_path):
    for name in ("mpich_4.0.2.orig.tar.xz", "mpich_4.0.10.orig.tar.xz", "mpich_4.0.2-3.dsc", "other.tar.xz"):
        (tmp_path / name).write_text("")
    assert mc.tarball_in(str(tmp_path)) == str(tmp_path / "mpich_4.0.10.orig.tar.xz")
    assert mc.tarball_in(str(tmp_path / "absent")) is None


def fake_suite(root, tests=None, version="4.0.2"):
    """A minimal test/mpi: the harness files, version.m4, coll/ with testlist.in and the given sources."""
    suite = root / "mpich-x" / "test" / "mpi"
    (suite / "util").mkdir(parents=True)
    (suite / "coll").mkdir()
    for name in mc.HARNESS_SOURCES:
        (suite / "util" / name).write_text("")
    (suite / "version.m4").write_text(f"m4_define([MPICH_VERSION_m4],[{version}])dnl\n")
    (suite / "coll" / "testlist.in").write_text(TESTLIST)
    tests = tests or {"allred": "MPI_Allreduce(a, b, n, t, o, c);", "iallred": "MPI_Iallreduce(a);",
                      "allred3": "MPI_Allreduce (a, b, n, t, o, c);", "allred9": "MPI_Allreduce(a);"}
    for name, body in tests.items():
        (suite / "coll" / f"{name}.c").write_text(f"int main(void) {{ {body} }}\n")
    return suite


def test_extracted_trees_are_found(tmp_path):
    suite = fake_suite(tmp_path)
    assert mc.extracted_suite(str(tmp_path)) == str(suite)
    assert mc.extracted_suite(str(tmp_path / "mpich-x")) == str(suite)
    assert mc.extracted_suite(str(suite)) == str(suite)
    assert mc.extracted_suite(str(suite / "coll")) is None
    assert mc.suite_version(str(suite)) == "4.0.2"


def test_programs_that_call_allreduce_and_are_listed(tmp_path, capsys):
    coll = str(fake_suite(tmp_path) / "coll")
    assert mc.select_programs(coll, TESTLIST, None) == ["allred", "allred3"]
    assert "skipping allred9: not in coll/testlist.in" in capsys.readouterr().err
    assert mc.select_programs(coll, TESTLIST, "allred3.c,allred,allred3") == ["allred3", "allred"]
    with pytest.raises(mc.CheckError, match="--tests: no test nope in"):
        mc.select_programs(coll, TESTLIST, "nope")
    with pytest.raises(mc.CheckError, match="allred9 is not in .*testlist.in"):
        mc.select_programs(coll, TESTLIST, "allred9")


# ---------------------------------------------------------------------------------------------------------------
# As a program

def run(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    done = subprocess.run([sys.executable, ARSHIM, "mpich-tests", *args], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("args,message", [
    (["--max-np", "0"], "--max-np wants a positive integer of at most 1024, got '0'"),
    (["--timeout", "1.5"], "--timeout wants a positive number of seconds of at most 604800, got '1.5'"),
    (["--flavors", "mpich,lam"], "--flavors: unknown flavor 'lam' (allowed: mpich, openmpi)"),
    (["--configs", ","], "--configs: empty list"),
    (["--set", "NOVALUE"], "wants VAR=VALUE, got 'NOVALUE'"),
    (["--set", "ARSHIM_STATS=/tmp/x.json", "--list"],
     "--set ARSHIM_STATS: each run's statistics log is set by the tool (a run is judged on it)"),
    (["--source", "/nonexistent/mpich", "--list"], "--source /nonexistent/mpich: no such file or directory"),
])
def test_bad_options_are_one_line_and_exit_2(args, message):
    rc, out, err = run(*args)
    assert rc == 2
    assert err.strip().splitlines()[-1] == f"arshim mpich-tests: error: {message}" or message in err
    assert "Traceback" not in err


def test_list_on_a_fake_suite(tmp_path):
    suite = fake_suite(tmp_path)
    rc, out, err = run("--source", str(tmp_path), "--workdir", str(tmp_path / "w"), "--list",
                       env_extra={"ARSHIM_LOG": "info"})
    assert rc == 0, err
    assert f"==> MPICH test suite: {suite} (MPICH 4.0.2)" in out
    assert out.splitlines()[-4:] == [
        "==> 3 test runs from 2 programs (allred allred3); ranks capped at 4",
        "  allred(-count=10)            np=4",
        "  allred(-count=100)           np=4",
        "  allred3                      np=4 (testlist: 10)",
    ]
    assert "ignoring the environment's ARSHIM_LOG" in err


def test_version_warning_and_incomplete_harness(tmp_path):
    suite = fake_suite(tmp_path, version="4.1.0")
    rc, out, err = run("--source", str(suite), "--list", "--tests", "allred")
    assert rc == 0 and "written for MPICH 4.0.2's tests, the source is 4.1.0" in err
    os.unlink(suite / "util" / "dtypes.c")
    rc, out, err = run("--source", str(suite), "--list")
    assert rc == 2 and err.strip().endswith("util/dtypes.c missing")


# ---------------------------------------------------------------------------------------------------------------
# Runs, with a stand-in for test/mpi/mpirun.sh (no MPI): what is printed and recorded for each verdict

FAKE_MPIRUN = """\
#!/bin/sh
# mpirun.sh FLAVOR NP LIB [VAR=VALUE ...] -- PROGRAM: prints what the program named in the test would, and with
# ARShim writes the statistics log $STATSLOG where ARSHIM_STATS says (./nolog: none)
flavor=$1 lib=$3 stats=
while [ "$1" != -- ]; do case $1 in ARSHIM_STATS=*) stats=${1#ARSHIM_STATS=} ;; esac; shift; done
case $2 in
  ./good) echo " No Errors"; [ "$lib" = none ] || { cat "$SUMMARY"; cp "$STATSLOG" "$stats"; } ;;
  ./nolog) echo " No Errors"; [ "$lib" = none ] || cat "$SUMMARY" ;;
  ./avx) echo "(0) Error for type MPI_INT8_T and op MPI_SUM"; echo " Found 1 errors"; exit 1 ;;
  ./hang) exec sleep 60 ;;
esac
"""


@pytest.fixture
def runner(tmp_path, monkeypatch):
    mpirun = tmp_path / "mpirun.sh"
    mpirun.write_text(FAKE_MPIRUN)
    mpirun.chmod(0o755)
    (tmp_path / "summary").write_text(SUMMARY_OK)
    monkeypatch.setenv("SUMMARY", str(tmp_path / "summary"))
    (tmp_path / "stats.json").write_text(json.dumps(arshim_log()))
    monkeypatch.setenv("STATSLOG", str(tmp_path / "stats.json"))
    for flavor in ("mpich", "openmpi"):
        (tmp_path / "build" / flavor).mkdir(parents=True)
        (tmp_path / "logs" / flavor).mkdir(parents=True)
    opts = mc.argparse.Namespace(timeout=1, backtraces=False, verbose=False, mpirun_sh=str(mpirun), set=[])
    built = {"mpich": {"good", "hang", "nolog"}, "openmpi": {"good", "avx"}}
    return mc.Runner(opts, str(tmp_path), {"mpich": "/l/mpich.so", "openmpi": "/l/ompi.so"}, None, built)


def verdicts(runner, cases, capsys):
    runs = {name: mc.Run(name, np_, np_) for name, np_, _, _ in cases}
    tally = mc.Tally(list(runs.values()), ["mpich", "openmpi"], list(mc.CONFIGS))
    for name, _, flavor, config in cases:
        runner.run(runs[name], flavor, config, f"{name} {flavor} {config}", tally)
    return [tally.cells[runs[n], f, c] for n, _, f, c in cases], capsys.readouterr().out, tally


def test_runs_that_pass(runner, capsys):
    cells, out, tally = verdicts(runner, [("good", 4, "mpich", "native"), ("good", 4, "openmpi", "multileader")],
                                 capsys)
    assert cells == [mc.OK, mc.OK] and tally.exit_status() == 0
    lines = out.splitlines()
    assert lines[0].startswith("ok   good mpich native  ") and lines[0].endswith("s")
    assert lines[1].endswith("s  paths: native=177 multileader=162; verified 299 calls")
    with open(os.path.join(runner.workdir, "logs", "openmpi", "good.multileader.log")) as f:
        assert f.readline().startswith(f"# {runner.opts.mpirun_sh} openmpi 4 /l/ompi.so ARSHIM_PATH=multileader ")


def test_a_run_without_its_log_fails_and_an_earlier_log_is_not_judged(runner, capsys):
    stale = os.path.join(runner.workdir, "logs", "mpich", "nolog.default.stats.json")
    with open(stale, "w") as f:
        json.dump(arshim_log(), f)  # a passing run's log, left by an earlier run in the same --workdir
    cells, out, _ = verdicts(runner, [("nolog", 4, "mpich", "default")], capsys)
    assert cells == [mc.FAIL] and not os.path.exists(stale)
    assert "no statistics log (ARShim wrote none" in out


def test_a_log_with_mismatches_fails_the_run(runner, capsys, tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps(arshim_log(verify=3)))
    runner.env["STATSLOG"] = str(tmp_path / "bad.json")  # the runs' environment is the runner's
    cells, out, tally = verdicts(runner, [("good", 4, "openmpi", "default")], capsys)
    assert cells == [mc.FAIL] and tally.exit_status() == 1
    assert "FAIL good openmpi default" in out and "verify: 3 mismatches" in out


def test_known_bug_not_built_and_not_applicable(runner, capsys):
    cells, out, tally = verdicts(runner, [("avx", 4, "openmpi", "native"), ("avx", 4, "mpich", "native"),
                                          ("good", 3, "mpich", "multileader-vppn2")], capsys)
    assert cells == [mc.BUG, mc.NOT_BUILT, mc.NA] and tally.exit_status() == 1
    assert "known library bug, not ARShim: Open MPI 4.1.x op/avx saturates" in out
    assert "      | (0) Error for type MPI_INT8_T and op MPI_SUM" in out
    assert "FAIL avx mpich native  not built (see " in out
    assert "skip good mpich multileader-vppn2  (needs np even or >= 4)" in out


def test_an_arshim_run_with_the_bug_is_a_failure(runner, capsys):
    cells, out, _ = verdicts(runner, [("avx", 4, "openmpi", "default")], capsys)
    assert cells == [mc.FAIL]
    assert "exit status 1; no ' No Errors' line (Found 1 errors)" in out


def test_a_hung_run_is_stopped(runner, capsys):
    cells, out, tally = verdicts(runner, [("hang", 2, "mpich", "native")], capsys)
    assert cells == [mc.FAIL] and runner.current is None
    assert "no end after 1 s: hang (stopped); no ' No Errors' line" in out
    with open(os.path.join(runner.workdir, "logs", "mpich", "hang.native.log")) as f:
        assert "### arshim mpich-tests: no end after 1 s; stopping the run" in f.read()
    assert tally.failures[0].startswith("hang np=2 mpich native: no end after 1 s")
