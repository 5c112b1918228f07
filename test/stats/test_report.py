#!/usr/bin/env python3
"""The report tool (tools/report/arshim_report.py) on recorded logs (test/stats/data):

  test_report.py REPORT_PY DATA_DIR [--plot]

text: the summary (arshim-stats-summary, ARSHIM_SUMMARY_PROGRAM: the finalize summary's own formatter), every
table, every row, sorted; --top; --sort; comparing two runs; schema validation (and its failures); a log with sampled
times (ARSHIM_STATS_SAMPLE) against one where every call was timed; errors. --plot: PNG, SVG and HTML output (exit
77 = skipped when matplotlib is missing).
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(condition, message):
    print(f"  {'ok  ' if condition else 'FAIL'} {message}")
    if not condition:
        failures.append(message)
    return condition


def report(tool, *args):
    proc = subprocess.run([sys.executable, tool] + list(args), capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def table_rows(text, title):
    """The data lines of the table under `title` (up to the next blank line)."""
    lines = text.splitlines()
    if title not in lines:
        return None
    out = []
    for line in lines[lines.index(title) + 3:]:
        if not line.strip() or line.startswith("  ... "):
            break
        out.append(line)
    return out


ROWS_TITLE = "All rows (communicator x path x size x datatype x op x reason)"
SUMMARY_TITLE = "Summary (as printed at MPI_Finalize: calls and time per path, native calls by reason, checks, sites)"
SIZES_TITLE = "Message sizes (bytes per call, power-of-two buckets, in size order)"


def summary_of(out):
    """The summary's lines in a report (after its title, up to the next blank line)."""
    lines = out.splitlines()
    if SUMMARY_TITLE not in lines:
        return []
    block = lines[lines.index(SUMMARY_TITLE) + 1:]
    return block[:block.index("")] if "" in block else block


def summary_checks(tool, path, out):
    """The report's summary is arshim-stats-summary's text of the log: the formatter the library runs at finalize."""
    program = os.environ.get("ARSHIM_SUMMARY_PROGRAM")
    if not check(program is not None, "ARSHIM_SUMMARY_PROGRAM names arshim-stats-summary"):
        return []
    own = subprocess.run([program, path], capture_output=True, text=True)
    lines = summary_of(out)
    check(own.returncode == 0 and lines == own.stdout.splitlines() and lines[0].startswith("arshim[0] summary: "),
          f"the report's summary is the finalize formatter's ({len(lines)} lines)")
    return lines
SITES_TITLE = "Call sites (depth 1; merged across ranks by symbol)"


def text_checks(tool, data):
    program = os.path.join(data, "program-openmpi.json")
    native = os.path.join(data, "sweep-native.json")
    shim = os.path.join(data, "sweep-pipelined.json")
    with open(program) as f:
        doc = json.load(f)

    sampled = os.path.join(data, "program-sampled-mpich.json")
    rc, out, err = report(tool, "--validate", program, native, shim, sampled)
    check(rc == 0 and out.count("valid (arshim-stats/1)") == 4, "recorded logs are valid against the schema")

    rc, out, err = report(tool, program)
    check(rc == 0, "report prints a recorded log")
    for title in (SUMMARY_TITLE, SIZES_TITLE, SITES_TITLE, ROWS_TITLE):
        check(title in out.splitlines(), f"table: {title}")
    summary = summary_checks(tool, program, out)
    check("arshim[0] not counted: 21 calls made while MPI_Pcontrol(0) paused collection" in summary,
          "paused calls shown")
    check(any(l.startswith("arshim[0] native because: zero_count=3 ") for l in summary), "native calls by reason")
    check([l.split()[1] for l in summary[2:2 + len(doc["paths"])]] == [r["path"] for r in doc["paths"]],
          "one summary row per path")
    rows = table_rows(out, ROWS_TITLE) or []
    check(len(rows) == len(doc["rows"]), f"every row printed ({len(rows)} of {len(doc['rows'])}), no fixed top-N")
    want_calls = [r["calls"] for r in sorted(doc["rows"], key=lambda r: (-r["time_s"], -r["calls"]))]
    got_calls = [int(re.split(r"\s{2,}", line.strip())[6]) for line in rows]
    check(got_calls == want_calls, "rows sorted by time, largest first")
    sites = table_rows(out, SITES_TITLE) or []
    check(len(sites) == len(doc["callsites"]["sites"]), "every call site printed")
    check(any("small_sums (stats_program.c:" in line for line in sites), "call sites named by function (file:line)")
    buckets = table_rows(out, "Message sizes (bytes per call, power-of-two buckets, in size order)") or []
    check(len(buckets) == len(doc["buckets"]), "every size bucket printed")

    rc, out, err = report(tool, "--top", "2", program)
    rows = table_rows(out, ROWS_TITLE) or []
    check(rc == 0 and len(rows) == 2, "--top 2 keeps two rows")
    check(f"  ... {len(doc['rows']) - 2} more rows (--top 2); all rows without --top" in out, "--top says what it cut")

    rc, out, err = report(tool, "--sort", "calls", "--section", "rows", program)
    rows = table_rows(out, ROWS_TITLE) or []
    got_calls = [int(re.split(r"\s{2,}", line.strip())[6]) for line in rows]
    check(rc == 0 and got_calls == sorted(got_calls, reverse=True) and SUMMARY_TITLE not in out.splitlines(),
          "--sort calls --section rows")
    rc, out, err = report(tool, "--section", "paths", program)
    check(rc == 0 and SUMMARY_TITLE in out.splitlines() and ROWS_TITLE not in out.splitlines(),
          "--section paths (a table now in the summary) prints the summary")

    rc, out, err = report(tool, native, shim)
    check(rc == 0 and "speed-up" in out, "compare two runs")
    with open(native) as f:
        a = json.load(f)
    with open(shim) as f:
        b = json.load(f)
    per_size = table_rows(out, "Per message size (all paths; avg_us = mean time per call)") or []
    sizes = {r["bucket"] for r in a["buckets"]} | {r["bucket"] for r in b["buckets"]}
    check(len(per_size) == len(sizes), f"one comparison line per message size ({len(per_size)})")
    ok = True
    for line in per_size:
        cells = re.split(r"\s{2,}", line.strip())
        ua, ub, speed = float(cells[3]), float(cells[4]), cells[5]
        ok = ok and abs(float(speed.rstrip("x")) - ua / ub) <= 0.01 * ua / ub + 0.006
    check(ok, "speed-up = A time per call / B time per call")
    check("total time in allreduce: A" in out, "total comparison line")

    with tempfile.TemporaryDirectory() as tmp:
        broken = os.path.join(tmp, "broken.json")
        doc_bad = json.loads(json.dumps(doc))
        doc_bad["rows"][0]["path"] = "teleport"
        del doc_bad["totals"]["calls"]
        with open(broken, "w") as f:
            json.dump(doc_bad, f)
        rc, out, err = report(tool, "--validate", broken)
        check(rc == 1 and "teleport" in err and "calls" in err, "schema validation reports the problems")
        other = os.path.join(tmp, "other.json")
        with open(other, "w") as f:
            json.dump({"hello": 1}, f)
        rc, out, err = report(tool, other)
        check(rc == 2 and "not an ARShim statistics log" in err, "a non-log file is refused with a message")
        rc, out, err = report(tool, os.path.join(tmp, "missing.json"))
        check(rc == 2 and "cannot read" in err, "a missing file is refused with a message")


def sampled_checks(tool, data):
    """A log whose times were sampled 1 in 4 (ARSHIM_STATS_SAMPLE=4) shows it: the sampling line, each table's
    standard error, extremes labelled as over the timed calls, estimated call-site counts; a log written before
    sampling (no "sampling" object) keeps the plain tables."""
    path = os.path.join(data, "program-sampled-mpich.json")
    with open(path) as f:
        doc = json.load(f)
    sampling = doc["sampling"]
    check(sampling["period"] == 4 and sampling["times"] == "estimated", "recorded log: sampled 1 in 4")
    rc, out, err = report(tool, path)
    check(rc == 0, "report prints a sampled log")
    summary = summary_checks(tool, path, out)
    line = summary[0] if summary else ""
    check(f"times sampled 1 in 4 per row after its first 8: {sampling['timed_calls']} calls timed, +-" in line,
          f"summary says how times were taken: {line.strip()}")
    sizes = table_rows(out, SIZES_TITLE) or []
    header = out.splitlines()[out.splitlines().index(SIZES_TITLE) + 1]
    check(all(h in header.split() for h in ("+-time", "timed_min_us", "timed_max_us")),
          "tables give the standard error and label min/max as over the timed calls")
    check(len(sizes) == len(doc["buckets"]), "every size bucket printed")
    errors = {(r["path"], r["calls"]): r["time_s_error"] for r in doc["buckets"]}
    for row in sizes:
        cells = re.split(r"\s{2,}", row.strip())
        check(cells[6] == dur_text(tool, errors[(cells[1], int(cells[2]))]),
              f"{cells[0]} {cells[1]}: +-time {cells[6]} is the log's time_s_error")
    check("Call sites (depth 1; merged across ranks by symbol; recorded on timed calls: calls, bytes and time "
          "estimated)" in out.splitlines(), "call-site table says its counts are estimated")
    rows = table_rows(out, ROWS_TITLE) or []
    check(len(rows) == len(doc["rows"]), "every row printed")

    rc, out, err = report(tool, os.path.join(data, "program-openmpi.json"))
    check(rc == 0 and "every call timed)" in out and "+-time" not in out and " min_us " in out,
          "a log without sampling: plain tables")
    rc, out, err = report(tool, os.path.join(data, "program-openmpi.json"), path)
    check(rc == 0 and "times sampled 1 in 4)" in out, "comparison says which run's times were sampled")


def dur_text(tool, seconds):
    """The report's own duration format (arshim.report.dur), from the package the tool under test imports."""
    spec = importlib.util.spec_from_file_location("arshim_report", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.report.dur(seconds)


def plot_checks(tool, data):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is missing (apt-get install python3-matplotlib): plot checks skipped")
        return 77
    native = os.path.join(data, "sweep-native.json")
    shim = os.path.join(data, "sweep-pipelined.json")
    with tempfile.TemporaryDirectory() as tmp:
        for name, files, magic in (("one.png", [shim], b"\x89PNG"), ("cmp.png", [native, shim], b"\x89PNG"),
                                   ("one.svg", [shim], b"<?xml"), ("cmp.html", [native, shim], b"<!DOCTYPE html>")):
            out_path = os.path.join(tmp, name)
            rc, out, err = report(tool, *files, "--plot", out_path)
            ok = rc == 0 and os.path.exists(out_path)
            with open(out_path, "rb") if ok else open(os.devnull, "rb") as f:
                head = f.read(4096)
            check(ok and head.startswith(magic) and os.path.getsize(out_path) > 10000, f"--plot {name}")
            if name.endswith(".html"):
                with open(out_path) as f:
                    page = f.read()
                check("<svg" in page and "Per message size" in page, "HTML plot embeds the chart and the tables")
        rc, out, err = report(tool, shim, "--plot", os.path.join(tmp, "x.gif"))
        check(rc == 2 and ".png, .svg or .html" in err, "unknown plot format refused")
    return 0


def main():
    tool, data = sys.argv[1], sys.argv[2]
    if "--plot" in sys.argv[3:]:
        rc = plot_checks(tool, data)
        if rc == 77 or failures:
            return 77 if rc == 77 else 1
    else:
        text_checks(tool, data)
        sampled_checks(tool, data)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
