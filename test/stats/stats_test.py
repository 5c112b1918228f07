#!/usr/bin/env python3
"""Statistics log integration tests: run an MPI program with ARShim preloaded and ARSHIM_STATS set, then compare
the log with what the program did.

  stats_test.py CASE --flavor F --shim LIB --mpirun mpirun.sh --report arshim_report.py --program PROG [--source S]

Cases: c, c-depth2 (every call timed, ARSHIM_STATS_SAMPLE=1: exact times and call-site counts), c-nosites (the
default sampling), c-sampled (ARSHIM_STATS_SAMPLE=5: counts exact, the expected number of timed calls per row,
plausible estimates), c-bad-sample (ARSHIM_STATS_SAMPLE=0: one line, the default) (test/stats/stats_program.c),
fortran (stats_fortran.f90, use mpi_f08, -g),
fortran-example (examples/fortran_allreduce.f90, use mpi, no debug info), mpi4py, mpi4py-depth2, mpi4py-nopython
(stats_mpi4py.py: Python file:line call sites, or mpi4py's module frame under ARSHIM_STATS_PYTHON=0), bad-path,
bad-path-per-rank, exit-early, abort.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3"
failures = []


def check(condition, message):
    if condition:
        print(f"  ok   {message}")
    else:
        print(f"  FAIL {message}")
        failures.append(message)
    return condition


def run(args, variables, program, np_, timeout=240):
    # Online tuning would add its exploration calls to the rows and reasons these tests count exactly (test/tune
    # checks its statistics).
    variables = ["ARSHIM_TUNE=off"] + variables
    command = [args.mpirun, args.flavor, str(np_), args.shim] + variables + ["--"] + program
    print("$ " + " ".join(command))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    print(proc.stdout, end="")
    print(proc.stderr, end="", file=sys.stderr)
    return proc


def validate(args, files):
    proc = subprocess.run([PYTHON, args.report, "--validate"] + files, capture_output=True, text=True)
    print(proc.stdout + proc.stderr, end="")
    return proc.returncode == 0


def log_rows_by_key(doc):
    """(communicator label, datatype, op, bucket) -> [calls, bytes], summed over paths and reasons."""
    labels = {c["id"]: c["label"] for c in doc["communicators"]}
    out = collections.defaultdict(lambda: [0, 0])
    for r in doc["rows"]:
        key = (labels[r["communicator"]], r["datatype"], r["op"], r["bucket"])
        out[key][0] += r["calls"]
        out[key][1] += r["bytes"]
    return dict(out)


def common_checks(doc, np_, flavor, total_calls, total_bytes):
    check(doc["schema"] == "arshim-stats/1" and doc["scope"] == "job", "schema arshim-stats/1, job scope")
    run_ = doc["run"]
    check(run_["np"] == np_ and run_["mpi"]["flavor"] == flavor, f"run metadata: np {np_}, flavor {flavor}")
    check(run_["nodes"] >= 1 and run_["ppn"]["max"] >= 1, "run metadata: nodes and ppn")
    startup = run_.get("startup_check", {})
    check(startup.get("checked") is True and startup.get("all_loaded") is True
          and startup.get("ranks_without_arshim") == [] and startup.get("ranks_without_arshim_count") == 0
          and startup.get("ranks_other_build_count") == 0,
          f"run.startup_check: every one of the {np_} ranks loaded ARShim ({startup})")
    check(run_["settings"]["ARSHIM_STATS"]["source"] == "environment", "settings echo ARSHIM_STATS as set")
    check(len(run_["settings"]) >= 20 and all(k.startswith("ARSHIM_") for k in run_["settings"]),
          "every ARSHIM_* setting echoed")
    tot = doc["totals"]
    check(tot["calls"] == total_calls, f"total calls {tot['calls']} == {total_calls}")
    check(tot["bytes"] == total_bytes, f"total bytes {tot['bytes']} == {total_bytes}")
    check(sum(r["calls"] for r in doc["paths"]) == total_calls, "paths table sums to the total")
    check(sum(r["calls"] for r in doc["buckets"]) == total_calls, "buckets table sums to the total")
    check(sum(r["bytes"] for r in doc["buckets"]) == total_bytes, "buckets table bytes sum to the total")
    check(sum(r["calls"] for r in doc["rows"]) == total_calls, "rows sum to the total")
    check(sum(r["calls"] for r in doc["communicators"]) == total_calls, "communicators sum to the total")
    t = doc["time"]
    check(t["allreduce_s"]["total"] > 0 and t["wall_s"]["min"] > 0, "allreduce and wall time measured")
    share = t["allreduce_share"]["overall"]
    # Sampled times are estimates: at most the wall time give or take three standard errors.
    error = 3 * doc["totals"].get("time_s_error", 0.0) / t["allreduce_s"]["total"] * share if share > 0 else 0
    check(0 < share <= 1.0 + error, f"share of wall time {share:.4f} in (0, 1] (+{error:.4f}: 3 standard errors)")
    for path in doc["paths"]:
        for b in [r for r in doc["buckets"] if r["path"] == path["path"]]:
            if not check(b["call_min_us"] <= b["avg_us"] <= b["call_max_us"] + 1e-9,
                         f"{path['path']} bucket {b['bucket']}: min <= avg <= max per call"):
                break


def sites_checks(doc, total_calls):
    """`total_calls`: the calls the sites must account for (every call when every call is timed; under sampling the
    timed calls' weights, see timed_per_row)."""
    cs = doc["callsites"]
    check(cs["enabled"] and cs["recorded"], "call sites recorded")
    check(sum(s["calls"] for s in cs["sites"]) + cs["dropped_calls"] == total_calls,
          f"call sites account for {total_calls} calls")
    return cs["sites"]


FIRST_TIMED = 8  # a row's first calls are all timed (shim/stats/counters.h kFirstTimed)
DEFAULT_SAMPLE = 64


def timed_per_row(calls, period):
    """(timed calls, calls they stand for) of one thread's row of `calls` calls: its first FIRST_TIMED calls, then
    the first call of every period after them, standing for the whole period."""
    first = min(calls, FIRST_TIMED)
    later = (max(0, calls - FIRST_TIMED) + period - 1) // period
    return first + later, first + later * period


def sampling_checks(doc, period, rank_docs=(), per_rank=None):
    """Times taken 1 in `period` per row: the log says so, rows time what the period implies (per rank: the rank
    files against the program's own per-rank calls), estimates are plausible, and every call timed when period 1."""
    sampling = doc.get("sampling", {})
    exact = all(timed_per_row(c, period)[0] == c for rows in (per_rank or {}).values() for c, _ in rows.values())
    check(sampling.get("period") == period and sampling.get("first_timed") == FIRST_TIMED,
          f"log: sampling period {sampling.get('period')} == {period}, first {FIRST_TIMED} timed")
    check(sampling.get("times") == ("exact" if exact else "estimated")
          and sampling.get("callsite_counts") == sampling.get("times"),
          f"log: times and call-site counts {sampling.get('times')} ({'exact' if exact else 'estimated'})")
    check(sampling.get("timed_calls") == doc["totals"]["timed_calls"] == sum(r["timed_calls"] for r in doc["rows"]),
          "timed calls: sampling, totals and rows agree")
    tables = [("totals", [doc["totals"]]), ("paths", doc["paths"]), ("buckets", doc["buckets"]),
              ("communicators", doc["communicators"]), ("rows", doc["rows"])]
    for name, rows in tables:
        ok = all(0 < r["timed_calls"] <= r["calls"] and r["time_s"] > 0 and r["time_s_error"] >= 0
                 and abs(r["avg_us"] * r["calls"] - 1e6 * r["time_s"]) <= 1e-3 * r["calls"] + 1e-6 * 1e6 * r["time_s"]
                 for r in rows)
        check(ok, f"{name}: 0 < timed calls <= calls, time > 0, time = avg x calls, error >= 0")
    if period == 1:
        check(all(r["timed_calls"] == r["calls"] and r["time_s_error"] == 0 for _, rows in tables for r in rows),
              "every call timed: no sampling error")
    for rank, rank_doc in enumerate(rank_docs):
        labels = {c["id"]: c["label"] for c in rank_doc["communicators"]}
        got = collections.Counter()
        rows_per_key = collections.Counter()
        for r in rank_doc["rows"]:
            key = (labels[r["communicator"]], r["datatype"], r["op"], r["bucket"])
            got[key] += r["timed_calls"]
            rows_per_key[key] += 1
        want = {key: timed_per_row(calls, period)[0] for key, (calls, _) in per_rank[rank].items()
                if rows_per_key[key] == 1}  # one row per key (a key split over paths is timed per row)
        check(want and all(got[key] == n for key, n in want.items()),
              f"rank {rank}: timed calls per row = first {FIRST_TIMED} + one in {period} ({len(want)} rows)")


def finalize_summary_checks(args, stderr, log, written):
    """The summary the job printed at MPI_Finalize is, line for line, arshim-stats-summary's text of its log: the
    library makes the summary's rows from the log's document and formats them with the one formatter
    (shim/stats/summary.h) that arshim report runs too."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("arshim[0] summary: ")), None)
    end = next((i for i, line in enumerate(lines) if line.startswith("arshim[0] statistics written to ")), None)
    if not check(start is not None and end is not None and start < end, "the summary's first and last lines"):
        return
    own = subprocess.run([args.summary_program, log, "--written", written], capture_output=True, text=True)
    check(own.returncode == 0 and lines[start:end + 1] == own.stdout.splitlines(),
          f"the finalize summary is arshim-stats-summary's text of the log ({end + 1 - start} lines)")
    if lines[start:end + 1] != own.stdout.splitlines():
        print("       printed:", lines[start:end + 1], "\n       from the log:", own.stdout.splitlines(), own.stderr)


def report_checks(args, path, doc):
    proc = subprocess.run([PYTHON, args.report, path], capture_output=True, text=True)
    check(proc.returncode == 0, "arshim report prints the log")
    lines = proc.stdout.splitlines()
    if "All rows (communicator x path x size x datatype x op x reason)" in lines:
        start = lines.index("All rows (communicator x path x size x datatype x op x reason)") + 3
        printed = [l for l in lines[start:] if l.strip()]
        check(len(printed) == len(doc["rows"]), f"report prints every row ({len(printed)} of {len(doc['rows'])})")
    else:
        check(False, "report has the rows table")


def source_line(path, needle):
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if needle in line:
                return number
    return -1


# ------------------------------------------------------------------------------------------------------------------

def case_c(args, variant):
    np_ = 3
    with tempfile.TemporaryDirectory() as tmp:
        expect_file = os.path.join(tmp, "expect.json")
        # Contexts built at a communicator's first call, as the program's expectations assume (its dup and split
        # communicators make only a few calls each); cold communicators are tested in test/hardening.
        variables = ["ARSHIM_STATS_PER_RANK=1", "ARSHIM_CONTEXT_AFTER=1"]
        period = 1  # every call timed: call-site counts exact
        if variant == "c":
            pattern = os.path.join(tmp, "run-%j.json")
            variables += ["ARSHIM_PATH=pipelined", "ARSHIM_SEGMENT_BYTES=64K", "ARSHIM_STATS_SAMPLE=1"]
        elif variant == "c-depth2":
            pattern = os.path.join(tmp, "run-%r.json")
            variables += ["ARSHIM_STATS_DEPTH=2", "ARSHIM_STATS_SAMPLE=1"]
        elif variant == "c-sampled":
            pattern = os.path.join(tmp, "run.json")
            period = 5  # rows of 20 calls: 8 timed, then 3 of the remaining 12 (standing for 15 calls)
            variables += [f"ARSHIM_STATS_SAMPLE={period}"]
        elif variant == "c-bad-sample":
            pattern = os.path.join(tmp, "run.json")
            period = DEFAULT_SAMPLE
            variables += ["ARSHIM_STATS_SAMPLE=0", "ARSHIM_STATS_CALLSITES=0"]
        else:
            pattern = os.path.join(tmp, "run.json")
            period = DEFAULT_SAMPLE
            variables += ["ARSHIM_STATS_CALLSITES=0", "ARSHIM_STATS_SUMMARY=0"]
        no_sites = variant in ("c-nosites", "c-bad-sample")
        proc = run(args, [f"ARSHIM_STATS={pattern}"] + variables, [args.program, expect_file], np_)
        check(proc.returncode == 0 and f"stats_program: {np_} ranks done" in proc.stdout, "program succeeded")
        # Whether the job printed a summary; what it says is checked as a whole against the log below.
        summary = any(line.startswith("arshim[0] summary: ") for line in proc.stderr.splitlines())
        if variant == "c-bad-sample":
            lines = [l for l in proc.stderr.splitlines() if "ARSHIM_STATS_SAMPLE" in l]
            want = ('arshim[0] warning: ARSHIM_STATS_SAMPLE="0": expected an integer in [1, 65536]; '
                    f'using the default ({DEFAULT_SAMPLE})')
            check(lines == [want], f"one line for the bad value: {want} (got {lines})")
        if variant == "c-nosites":
            check(not summary, "ARSHIM_STATS_SUMMARY=0: no summary")
        else:
            check(summary, "summary printed (default on with ARSHIM_STATS)")
        files = sorted(glob.glob(os.path.join(tmp, "run*.json")))
        print("files:", [os.path.basename(f) for f in files])
        if variant == "c":
            job_files = [f for f in files if ".rank" not in f]
            rank_files = [f for f in files if ".rank" in f]
            check(len(job_files) == 1 and re.search(r"run-.+\.json$", job_files[0]) and "%j" not in job_files[0],
                  "%j expanded in the job file name")
        elif variant == "c-depth2":
            job_files = [os.path.join(tmp, "run-all.json")]
            rank_files = [os.path.join(tmp, f"run-{r}.json") for r in range(np_)]
            check(all(os.path.exists(f) for f in job_files + rank_files), "%r: run-all.json and run-<rank>.json")
        else:
            job_files = [os.path.join(tmp, "run.json")]
            rank_files = [os.path.join(tmp, f"run.rank{r}.json") for r in range(np_)]
            check(all(os.path.exists(f) for f in job_files + rank_files), "run.json and run.rank<N>.json")
        check(len(rank_files) == np_, f"{np_} per-rank files")
        # The writer's temporary files are hidden (".<name>.<random>", shim/stats/log_file.h): none may be left.
        check(not glob.glob(os.path.join(tmp, ".*")) and not glob.glob(os.path.join(tmp, "*.tmp.*")),
              "no temporary files left")
        if not (job_files and os.path.exists(job_files[0]) and os.path.exists(expect_file)):
            check(False, "log and expectations exist")
            return
        check(validate(args, job_files + rank_files), "job and per-rank logs valid against the schema")
        with open(job_files[0]) as f:
            doc = json.load(f)
        with open(expect_file) as f:
            want = json.load(f)

        expected = collections.defaultdict(lambda: [0, 0])
        per_rank = collections.defaultdict(dict)
        for r in want["rows"]:
            key = (r["comm"], r["datatype"], r["op"], r["bucket"])
            expected[key][0] += r["calls"]
            expected[key][1] += r["bytes"]
            per_rank[r["rank"]][key] = [r["calls"], r["bytes"]]
        total_calls = sum(v[0] for v in expected.values())
        total_bytes = sum(v[1] for v in expected.values())
        common_checks(doc, np_, args.flavor, total_calls, total_bytes)
        if summary:  # what people read is the formatter's text of this log (its sentences: test/shim/test_summary.cpp)
            finalize_summary_checks(args, proc.stderr, job_files[0], job_files[0])
        got = log_rows_by_key(doc)
        check(got == dict(expected), "calls and bytes per (communicator, datatype, op, size) equal the program's")
        if got != dict(expected):
            for key in sorted(set(got) | set(expected), key=str):
                if got.get(key) != expected.get(key):
                    print(f"       {key}: log {got.get(key)} program {expected.get(key)}")
        fallbacks = {r["reason"]: r["calls"] for r in doc["fallbacks"] if r["fallback"]}
        check(fallbacks == want["reasons"], f"fallback reasons {fallbacks} == {want['reasons']}")
        paths = {r["path"]: r["calls"] for r in doc["paths"]}
        want_paths = {p: n for p, n in want["paths"].items() if n}
        check(paths == want_paths, f"calls per path {paths} == the query API's {want_paths}")
        if variant == "c":
            check(paths.get("pipelined", 0) > 0, "ARSHIM_PATH=pipelined served calls")
        check(doc["totals"]["paused_calls"] == want["paused"],
              f"paused calls {doc['totals']['paused_calls']} == {want['paused']} (MPI_Pcontrol(0))")
        comms = {c["label"]: c for c in doc["communicators"]}
        check(set(comms) == {"world", "self", "size 2 stride 2"}, f"communicators {sorted(comms)}")
        if "world" in comms:
            check(comms["world"]["instances"] == 2 and comms["world"]["ranks"] == np_,
                  "world and its dup share one row (2 instances, 3 ranks)")
        # per-rank extremes of an evenly spread row
        row = [r for r in doc["rows"] if r["datatype"] == "float" and r["bucket"] == 4 and r["op"] == "sum"
               and comms.get("world", {}).get("id") == r["communicator"]]
        check(len(row) == 1 and row[0]["per_rank"]["calls"] == {"min": 20.0, "avg": 20.0, "max": 20.0}
              and row[0]["ranks"] == np_, "8 B double sums: 20 calls on each of 3 ranks (min/avg/max)")
        split_id = comms.get("size 2 stride 2", {}).get("id")
        row = [r for r in doc["rows"] if r["op"] == "max" and r["communicator"] == split_id]
        check(len(row) == 1 and row[0]["ranks"] == 2 and row[0]["calls"] == 10,
              "split communicator row: 2 ranks, 10 calls")

        # per-rank files
        total_from_ranks = 0
        rank_docs = []
        for r, path in enumerate(rank_files):
            with open(path) as f:
                rank_doc = json.load(f)
            rank_docs.append(rank_doc)
            check(rank_doc["scope"] == "rank" and rank_doc["rank"] == r,
                  f"rank file {os.path.basename(path)}: rank {r}")
            startup = rank_doc["run"].get("startup_check", {})
            check(startup.get("all_loaded") is True and (r == 0 or (startup.get("parent") == (r - 1) // 4
                                                                   and startup.get("parent_answered") is True)),
                  f"rank {r}: its start-up check passed, its parent in the tree answered ({startup})")
            check(log_rows_by_key(rank_doc) == {tuple(k): v for k, v in per_rank[r].items()},
                  f"rank {r}: rows equal the rank's own calls")
            total_from_ranks += rank_doc["totals"]["calls"]
        check(total_from_ranks == total_calls, "per-rank totals add up to the job total")
        # timing: 1 in `period` calls per row
        sampling_checks(doc, period, rank_docs, per_rank)

        # call sites: recorded on timed calls, each standing for its weight in calls
        if no_sites:
            cs = doc["callsites"]
            check(not cs["enabled"] and not cs["recorded"] and cs["sites"] == [], "ARSHIM_STATS_CALLSITES=0: no sites")
        else:
            represented = sum(timed_per_row(calls, period)[1] for rows in per_rank.values() for calls, _ in rows.values())
            sites = sites_checks(doc, represented)
            depth = 2 if variant == "c-depth2" else 1
            check(doc["callsites"]["depth"] == depth and all(len(s["frames"]) == depth for s in sites),
                  f"every site has {depth} frame(s)")
            source = args.source
            for function, needle, want_calls in (
                    ("small_sums", "MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm);", want["sites"]["small_sums"]),
                    ("max_loop", "MPI_Allreduce(MPI_IN_PLACE, v, 1000, MPI_INT, MPI_MAX, comm);",
                     want["sites"]["max_loop"])):
                mine = [s for s in sites if s["frames"][0]["function"] == function]
                line = source_line(source, needle)
                if period == 1:
                    check(sum(s["calls"] for s in mine) == want_calls,
                          f"call site {function}: {sum(s['calls'] for s in mine)} calls == {want_calls}")
                check(all(s["frames"][0]["file"].endswith("stats_program.c") and s["frames"][0]["line"] == line
                          for s in mine) and mine, f"call site {function} at stats_program.c:{line}")
                if depth == 2:
                    check(len(mine) == 2 and all(s["frames"][1]["function"] == "main" for s in mine),
                          f"depth 2 tells {function}'s two callers in main apart")
                else:
                    check(len(mine) == 1 and mine[0]["ranks"] == np_, f"one {function} site, merged over {np_} ranks")
        report_checks(args, job_files[0], doc)


def fortran_expectations(args, np_, example):
    if example:
        rows = {("world", "float", "sum", 13): [2 * np_, 16000 * np_], ("world", "int", "max", 12): [np_, 4000 * np_],
                ("world", "int", "sum", 12): [np_, 4000 * np_], ("world", "int", "sum", 3): [np_, 4 * np_]}
        sites = None
    else:
        rows = {("world", "float", "sum", 4): [4 * np_, 32 * np_], ("world", "int", "max", 9): [2 * np_, 800 * np_],
                ("world", "float", "sum", 14): [np_, 12000 * np_]}
        sites = {source_line(args.source, "! site: 4 x 8 B"): 4 * np_,
                 source_line(args.source, "! site: 2 x 400 B"): 2 * np_,
                 source_line(args.source, "! site: 1 x 12000 B"): np_}
    return rows, sites


def case_fortran(args, example):
    np_ = 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fortran.json")
        proc = run(args, [f"ARSHIM_STATS={path}"], [args.program], np_)
        check(proc.returncode == 0 and "all results correct" in proc.stdout, "Fortran program succeeded")
        if not check(os.path.exists(path), "log written at MPI_FINALIZE") or not check(validate(args, [path]), "valid"):
            return
        with open(path) as f:
            doc = json.load(f)
        rows, sites_want = fortran_expectations(args, np_, example)
        total_calls = sum(v[0] for v in rows.values())
        common_checks(doc, np_, args.flavor, total_calls, sum(v[1] for v in rows.values()))
        got = log_rows_by_key(doc)
        check(got == rows, f"Fortran calls and bytes per row equal the program's: {got}")
        sites = sites_checks(doc, total_calls)
        program = os.path.basename(args.program)
        check(all(s["frames"][0]["module"] == program for s in sites),
              f"every call site is in the program ({program}), not in an MPI binding library")
        if example:
            check(len(sites) == 5 and all(s["frames"][0]["function"] == "MAIN__" for s in sites),
                  "5 call sites in MAIN__ told apart by offset")
        else:
            lines = {s["frames"][0]["line"]: s["calls"] for s in sites
                     if s["frames"][0]["file"].endswith("stats_fortran.f90")}
            check(lines == sites_want, f"call sites by stats_fortran.f90 line {lines} == {sites_want}")
        report_checks(args, path, doc)


def mpi4py_sites(source):
    """Lines of stats_mpi4py.py's call sites, by their "# site: NAME" markers."""
    return {name: source_line(source, f"# site: {name}") for name in ("sums", "max", "thread", "module", "pickle")}


def case_mpi4py(args, variant):
    np_ = 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "py.json")
        variables = [f"ARSHIM_STATS={path}"]
        if variant == "mpi4py-depth2":
            variables.append("ARSHIM_STATS_DEPTH=2")
        elif variant == "mpi4py-nopython":
            variables.append("ARSHIM_STATS_PYTHON=0")
        proc = run(args, variables, [PYTHON, args.program], np_)
        check(proc.returncode == 0 and "all results correct" in proc.stdout, "mpi4py program succeeded")
        if not check(os.path.exists(path), "log written") or not check(validate(args, [path]), "valid"):
            return
        with open(path) as f:
            doc = json.load(f)
        # mpi4py 3.x's pickle-based comm.allreduce is point to point and a bcast: it never reaches MPI_Allreduce.
        rows = {("world", "float", "sum", 13): [6 * np_, 6 * 4096 * np_],
                ("world", "int", "max", 4): [3 * np_, 24 * np_],
                ("world", "float", "sum", 5): [4 * np_, 4 * 16 * np_],
                ("world", "int", "sum", 4): [np_, 8 * np_]}
        total_calls = sum(v[0] for v in rows.values())
        common_checks(doc, np_, args.flavor, total_calls, sum(v[1] for v in rows.values()))
        check(log_rows_by_key(doc) == rows, f"mpi4py calls and bytes per row: {log_rows_by_key(doc)}")
        check(doc["totals"]["paused_calls"] == 5 * np_, "MPI.Pcontrol(0) paused 5 calls per rank")
        sites = sites_checks(doc, total_calls)
        if variant == "mpi4py-nopython":
            check(len(sites) == 1 and sites[0]["frames"][0].get("binding") == "mpi4py",
                  "ARSHIM_STATS_PYTHON=0: the call site is mpi4py's extension module")
            report_checks(args, path, doc)
            return
        lines = mpi4py_sites(args.program)
        program = os.path.basename(args.program)
        want = {("sums", lines["sums"]): 6 * np_, ("max_in_place", lines["max"]): 3 * np_,
                ("worker", lines["thread"]): 4 * np_, ("<module>", lines["module"]): np_}
        got = {}
        for s in sites:
            top = s["frames"][0]
            ok = top.get("binding") == "python" and os.path.basename(top["file"]) == program
            got[(top["function"], top["line"]) if ok else (s["site"], 0)] = s["calls"]
        check(got == want, f"call sites name the Python caller (function, {program}:line): {got} == {want}")
        check(all(s["ranks"] == np_ for s in sites), f"every Python site merged over {np_} ranks")
        depth = 2 if variant == "mpi4py-depth2" else 1
        check(all(len(s["frames"]) == (1 if s["frames"][0]["function"] == "<module>" else depth) for s in sites),
              f"{depth} Python frame(s) per site (1 at module level: no caller)")
        if depth == 2:
            callers = {s["frames"][0]["function"]: s["frames"][1]["function"] for s in sites if len(s["frames"]) == 2}
            check(callers == {"sums": "<module>", "max_in_place": "<module>", "worker": "Thread.run"},
                  f"depth 2: the callers' callers (the module, threading's Thread.run): {callers}")
        text = subprocess.run([PYTHON, args.report, path, "--section", "callsites"], capture_output=True,
                              text=True).stdout
        check(f"sums ({program}:{lines['sums']})" in text, f"arshim report shows sums ({program}:{lines['sums']})")
        report_checks(args, path, doc)


def case_bad_path(args, per_rank):
    np_ = 2
    with tempfile.TemporaryDirectory() as tmp:
        pattern = "/nonexistent-arshim-dir/x.json"
        variables = [f"ARSHIM_STATS={pattern}"] + (["ARSHIM_STATS_PER_RANK=1"] if per_rank else [])
        proc = run(args, variables, [args.program, os.path.join(tmp, "expect.json")], np_)
        check(proc.returncode == 0 and f"stats_program: {np_} ranks done" in proc.stdout,
              "the program still finishes correctly")
        lines = [l for l in proc.stderr.splitlines() if "ARSHIM_STATS=" in l]
        want = (f"arshim[0] error: ARSHIM_STATS={pattern}: cannot write (No such file or directory); "
                "statistics not written")
        check(want in lines, f"one-line error: {want}")
        if per_rank:
            check(len(lines) == 2 and any(f"{np_} of {np_} ranks could not write their per-rank file" in l
                                          for l in lines), "per-rank failures: one line for all ranks")
        else:
            check(len(lines) == 1, f"exactly one line ({len(lines)})")
        check(any(line.startswith("arshim[0] summary: ") for line in proc.stderr.splitlines()),
              "the summary is still printed")


def case_no_finalize(args, mode):
    np_ = 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "keep.json")
        earlier = '{"earlier": "log"}\n'
        with open(path, "w") as f:
            f.write(earlier)
        variables = [f"ARSHIM_STATS={path}", "ARSHIM_STATS_PER_RANK=1"]
        proc = run(args, variables, [args.program, os.path.join(tmp, "expect.json"), mode], np_, timeout=120)
        print(f"(exit code {proc.returncode})")
        with open(path) as f:
            check(f.read() == earlier, f"{mode}: the earlier log is untouched")
        left = sorted(os.listdir(tmp))
        check(left == ["keep.json"], f"{mode}: no other (half-written or temporary) file: {left}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("--flavor", required=True)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--source", help="the program's source (call-site lines)")
    parser.add_argument("--summary-program", required=True, help="arshim-stats-summary")
    args = parser.parse_args()
    print(f"== stats test {args.case} ({args.flavor})")
    if args.case in ("c", "c-depth2", "c-nosites", "c-sampled", "c-bad-sample"):
        case_c(args, args.case)
    elif args.case == "fortran":
        case_fortran(args, example=False)
    elif args.case == "fortran-example":
        case_fortran(args, example=True)
    elif args.case in ("mpi4py", "mpi4py-depth2", "mpi4py-nopython"):
        case_mpi4py(args, args.case)
    elif args.case in ("bad-path", "bad-path-per-rank"):
        case_bad_path(args, per_rank=args.case.endswith("per-rank"))
    elif args.case in ("exit-early", "abort"):
        case_no_finalize(args, "--" + args.case)
    else:
        parser.error(f"unknown case {args.case}")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
