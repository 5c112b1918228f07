"""arshim report: print, compare or plot ARShim call-statistics logs (ARSHIM_STATS files, schema arshim-stats/1).

  arshim report run.json                  every table, every row, sorted by time (--top N to cut each table)
  arshim report native.json shim.json     compare two runs: time per message size and path, speed-up
  arshim report run.json --plot out.png   time per message-size bucket per path (.png, .svg or .html)
  arshim report --validate run.json       check a log against the JSON schema (docs/stats.md)

The log format is documented in docs/stats.md; the schema is arshim-stats-1.schema.json (tools/report/ in the
source, <datadir>/arshim/ installed). A log is read as untrusted input: a file that is no valid log is one line
`arshim report: FILE: reason` and exit status 2, and every string of the log is printed escaped.

A log's report starts with the summary the job printed at MPI_Finalize, written by arshim-stats-summary: the
preloaded library's own rows and formatter (shim/stats/summary.h), the one place the summary's figures are
formatted; the tables after it are what the summary does not say.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

from . import ToolError, files, need, options, statslog
from .sizes import human_bytes, size_text as size_label
from .text import escape, escape_char, escape_strings, one_line, plot_text

SCHEMA = statslog.SCHEMA
PATHS = ("native", "pipelined", "multileader", "sharp", "reproducible", "latency")
PATH_COLORS = {"native": "#4c72b0", "pipelined": "#dd8452", "multileader": "#55a868", "sharp": "#c44e52",
               "reproducible": "#8172b3", "latency": "#937860"}
SECTIONS = ("summary", "buckets", "communicators", "sharp", "callsites", "rows")
# The tables the summary replaced (paths, native calls by reason, correctness checks): their names still choose it.
SECTION_ALIASES = {"paths": "summary", "fallbacks": "summary", "checks": "summary"}
PROG = "arshim report"
SUMMARY_PROGRAM = "arshim-stats-summary"


class ReportError(ToolError):
    pass


def load(path):
    """A log ready to print: valid (statslog.load), and every string in it escaped once, here, so that no table,
    plot label or HTML page can print a raw one."""
    return escape_strings(statslog.load(path))


def validate(path):
    """The log's problems as lines (empty: valid); a file that is no JSON at all raises InputError."""
    return statslog.problems(files.read_json(path, statslog.LIMIT))


def find_summary_program(given=None):
    """arshim-stats-summary: --summary-program (`arshim report` names the one beside it), ARSHIM_SUMMARY_PROGRAM, or
    the one on PATH; None when there is none."""
    for program in (given, os.environ.get("ARSHIM_SUMMARY_PROGRAM")):
        if program:
            return program
    return shutil.which(SUMMARY_PROGRAM)


def summary(path, program):
    """The summary of the log at `path` as the job printed it at MPI_Finalize (without the line naming the file),
    from arshim-stats-summary: the library's own formatter. A line saying why when it cannot be had."""
    if not program:
        return (f"  (not available: {SUMMARY_PROGRAM} not found; it is built and installed with ARShim, "
                "`arshim report` finds it beside itself)")
    try:
        done = subprocess.run([program, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"  (not available: {escape(program)}: {escape(getattr(e, 'strerror', None) or str(e), 120)})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit status {done.returncode}"]
        return f"  (not available: {escape(why[-1], 200)})"
    # The formatter escapes what it prints from the log (printable: controls); what else a terminal must not get
    # (format characters such as bidirectional overrides) is escaped here, its backslashes left as they are.
    return "\n".join("".join(c if c.isprintable() else escape_char(c) for c in line)
                     for line in done.stdout.decode("utf-8", "replace").splitlines())


# ------------------------------------------------------------------------------------------------------------------
# formatting

def bucket_label(row):
    lo, hi = row["bytes_min"], row["bytes_max"]
    if row["bucket"] == 0:
        return "0"
    return f"{size_label(lo)}..{size_label(hi + 1)}"


def us(value):
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 1e4 else f"{value:.0f}"


def dur(seconds):
    """A duration for humans: 12.3 us, 4.56 ms, 7.89 s."""
    if seconds is None:
        return "-"
    if seconds == 0:
        return "0"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def mam(m, fmt="{:.3f}"):
    if fmt == "dur":
        return f"{dur(m['min'])} / {dur(m['avg'])} / {dur(m['max'])}"
    return f"{fmt.format(m['min'])}/{fmt.format(m['avg'])}/{fmt.format(m['max'])}"


def table(headers, rows, align=None, indent="  "):
    """Plain text table; align: string of 'l'/'r' per column."""
    rows = [[str(c) for c in r] for r in rows]
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return indent + "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                                  for c, w, a in zip(cells, widths, align)).rstrip()
    out = [line(headers), indent + "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def cut(rows, top):
    if top is None or len(rows) <= top:
        return rows, ""
    return rows[:top], f"  ... {len(rows) - top} more rows (--top {top}); all rows without --top"


def sort_key(order):
    return {"time": lambda r: (-r["time_s"], -r["calls"]), "calls": lambda r: (-r["calls"], -r["time_s"]),
            "bytes": lambda r: (-r["bytes"], -r["time_s"])}[order]


def comm_labels(doc):
    return {c["id"]: c["label"] for c in doc["communicators"]}


def estimated(doc):
    """The log's sampling object when its times are estimated from timed calls (ARSHIM_STATS_SAMPLE), else None
    (every call timed, or a log written before sampling)."""
    sampling = doc.get("sampling")
    return sampling if sampling and sampling["times"] == "estimated" else None


def agg_cells(r, share_of=None, sampled=False):
    cells = [r["calls"], human_bytes(r["bytes"]), dur(r["time_s"]), us(r["avg_us"]), us(r.get("call_min_us")),
             us(r.get("call_max_us")), mam(r["per_rank"]["time_s"], "dur")]
    if sampled:
        cells.insert(3, dur(r.get("time_s_error", 0.0)))
    if share_of is not None:
        cells.insert(3, f"{100.0 * r['time_s'] / share_of:.1f}%" if share_of > 0 else "-")
    return cells


AGG_HEADERS = ["calls", "bytes", "time", "share", "avg_us", "min_us", "max_us", "per-rank time min / avg / max"]
# Times estimated from timed calls (ARSHIM_STATS_SAMPLE > 1): the standard error, and extremes over the timed calls.
SAMPLED_HEADERS = ["calls", "bytes", "time", "share", "+-time", "avg_us", "timed_min_us", "timed_max_us",
                   "per-rank time min / avg / max"]


def print_report(doc, name, top=None, order="time", sections=SECTIONS, all_settings=False, out=sys.stdout,
                 summary_text=None):
    """The report of one log. `summary_text`: the summary's lines (summary()), printed first; None: no summary."""
    run, t = doc["run"], doc["time"]
    scope = "job" if doc["scope"] == "job" else f"rank {doc.get('rank')}"
    w = lambda s="": print(s, file=out)  # noqa: E731
    w(f"ARShim statistics: {name} ({doc['schema']}, {scope})")
    w(f"  run       {run['date']}  job {run['job_id']}  host {run['hostname']}")
    w(f"  command   {' '.join(run['command'])}")
    layout = f"{run['np']} ranks"
    if "nodes" in run:
        ppn = run["ppn"]
        ppn_text = str(ppn["min"]) if ppn["min"] == ppn["max"] else f"{ppn['min']}..{ppn['max']}"
        layout += f" on {run['nodes']} node{'s' if run['nodes'] != 1 else ''} ({ppn_text} per node)"
    w(f"  MPI       {run['mpi']['version']} ({run['mpi']['flavor']}), {layout}")
    w(f"  ARShim    {run['arshim_version']}, kernel {run['kernel_isa']}, policy {run['policy_source']}")
    check = run.get("startup_check", {})
    if check.get("checked") and not check["all_loaded"]:
        found = [f"{what} on {check[key + '_count']} ranks ({', '.join(map(str, check[key]))}"
                 f"{', ...' if check[key + '_count'] > len(check[key]) else ''})"
                 for key, what in (("ranks_without_arshim", "not loaded"), ("ranks_other_build", "another build"))
                 if check.get(key + "_count")]
        w(f"  DISABLED  at start, on every rank: ARShim {'; '.join(found) or 'not on every rank'}; no call counted")
    settings = run["settings"]
    shown = {k: v for k, v in settings.items() if all_settings or v["source"] == "environment"}
    text = " ".join(f"{k}={v['value']}" for k, v in sorted(shown.items())) or "all defaults"
    w(f"  settings  {text}")
    tot = doc["totals"]
    share = t["allreduce_share"]
    # The totals, how times were taken and the paused calls are the summary's; the spread over ranks is not.
    w(f"  per rank  min / avg / max: allreduce {mam(t['allreduce_s']['per_rank'], 'dur')}; "
      f"wall {mam(t['wall_s'], 'dur')}; share {mam({k: 100 * v for k, v in share['per_rank'].items()}, '{:.2f}')} %")
    if tot.get("rows_folded_calls"):
        w(f"            {tot['rows_folded_calls']} calls did not fit the per-thread row table (counted in paths "
          "and sizes only)")
    total_time = t["allreduce_s"]["total"]
    key = sort_key(order)
    labels = comm_labels(doc)
    sampled = estimated(doc) is not None
    headers = SAMPLED_HEADERS if sampled else AGG_HEADERS
    cells = lambda r: agg_cells(r, total_time, sampled)  # noqa: E731

    if "summary" in sections and summary_text is not None:
        w()
        w("Summary (as printed at MPI_Finalize: calls and time per path, native calls by reason, checks, sites)")
        w(summary_text)
    if "buckets" in sections:
        # the heaviest rows survive --top; shown in size order
        rows, more = cut(sorted(doc["buckets"], key=key), top)
        rows.sort(key=lambda r: (r["bucket"], PATHS.index(r["path"])))
        w()
        w("Message sizes (bytes per call, power-of-two buckets, in size order)")
        w(table(["size [lo..hi)", "path"] + headers,
                [[bucket_label(r), r["path"]] + cells(r) for r in rows], align="ll" + "r" * len(headers)))
        if more:
            w(more)
    if "communicators" in sections:
        rows, more = cut(sorted(doc["communicators"], key=key), top)
        w()
        w("Communicators (congruent communicators share a row; instances = how many were created)")
        w(table(["communicator", "size", "instances"] + headers,
                [[r["label"], r.get("size", "-"), r.get("instances", "-")] + cells(r) for r in rows],
                align="l" + "r" * (len(headers) + 2)))
        if more:
            w(more)
    sharp = doc.get("sharp", {})  # absent in logs written before the SHARP path counted
    if "sharp" in sections and any(sharp.get(k) for k in ("llt", "sat", "host", "unavailable")):
        w()
        # How the calls ran and the groups' fate are the summary's sharp line.
        w("SHARP path, beyond the summary (summed over ranks)")
        w(f"  groups    without SAT {sharp.get('reg_failures', 0)}")
        w(f"  SHARP     {sharp.get('ops', 0)} operations, {sharp.get('sat_lock_retries', 0)} SAT lock retries")
        w(f"  memory    registration cache hits {sharp.get('reg_hits', 0)}, misses {sharp.get('reg_misses', 0)}, "
          f"evictions {sharp.get('reg_evictions', 0)}, invalidations {sharp.get('reg_invalidations', 0)}; "
          f"{sharp.get('reg_bounced', 0)} SAT pieces through the bounce buffer")
    if "callsites" in sections:
        cs = doc["callsites"]
        w()
        if not cs["recorded"]:
            w("Call sites: not recorded" + (" (ARSHIM_STATS_CALLSITES=0)" if not cs["enabled"] else ""))
        else:
            rows, more = cut(sorted(cs["sites"], key=key), top)
            w(f"Call sites (depth {cs['depth']}; merged across ranks by symbol"
              + ("; recorded on timed calls: calls, bytes and time estimated)" if sampled else ")"))
            w(table(["call site", "calls", "bytes", "time", "share", "avg_us", "ranks"],
                    [[site_text(r), r["calls"], human_bytes(r["bytes"]), dur(r["time_s"]),
                      f"{100.0 * r['time_s'] / total_time:.1f}%" if total_time > 0 else "-", us(r["avg_us"]),
                      r["ranks"]] for r in rows], align="l" + "r" * 6))
            if more:
                w(more)
            if cs.get("dropped_calls"):
                w(f"  {cs['dropped_calls']} calls did not fit the per-thread call-site table")
    if "rows" in sections:
        rows, more = cut(sorted(doc["rows"], key=key), top)
        w()
        w("All rows (communicator x path x size x datatype x op x reason)")
        w(table(["communicator", "path", "size [lo..hi)", "type", "op", "reason"] + headers,
                [(["other", "", "", "", "", ""] if r.get("other") else
                  [labels.get(r["communicator"], r["communicator"]), r["path"], bucket_label(r), r["datatype"],
                   r["op"], r["reason"] + (f" ({r['sharp']})" if r.get("sharp") else "")])
                 + cells(r) for r in rows], align="llllll" + "r" * len(headers)))
        if more:
            w(more)


CYTHON_PREFIX = re.compile(r"__pyx_p[wf]_")
CYTHON_LENGTH = re.compile(r"_?([0-9]+)")


def cython_name(symbol):
    """__pyx_pw_6mpi4py_3MPI_4Comm_47Allreduce -> mpi4py.MPI.Comm.Allreduce (Cython's length-prefixed names). One
    pass over the symbol: a log's symbol is no trusted Cython name (a length of a thousand digits, many parts)."""
    m = CYTHON_PREFIX.match(symbol)
    if not m:
        return symbol
    parts, at = [], m.end()
    while at < len(symbol):
        m = CYTHON_LENGTH.match(symbol, at)
        if not m or len(m.group(1)) > 9 or int(m.group(1)) > len(symbol) - m.end():
            break
        at = m.end() + int(m.group(1))
        parts.append(symbol[m.end():at])
    return ".".join(parts) if parts else symbol


def frame_text(f):
    fn = f["function"]
    if f.get("binding") == "mpi4py":
        return f"mpi4py {cython_name(fn)}" if fn else f"mpi4py ({f['module']}+{f['offset']})"
    if fn and f["file"]:
        return f"{fn} ({os.path.basename(f['file'])}:{f['line']})"
    if fn:
        return f"{fn}+{f['function_offset']} [{f['module']}]"
    return f"{f['module']}+{f['offset']}"


def site_text(site):
    if site.get("other"):
        return "other (beyond the job table)"
    return " < ".join(frame_text(f) for f in site["frames"]) or site["site"]


# ------------------------------------------------------------------------------------------------------------------
# comparison

def per_bucket(doc, path=None):
    """bucket -> {calls, time_s, bytes} over the paths (or one path)."""
    out = {}
    for r in doc["buckets"]:
        if path is not None and r["path"] != path:
            continue
        cell = out.setdefault(r["bucket"], {"calls": 0, "time_s": 0.0, "bytes": 0, "paths": set(), "row": r})
        cell["calls"] += r["calls"]
        cell["time_s"] += r["time_s"]
        cell["bytes"] += r["bytes"]
        cell["paths"].add(r["path"])
    return out


def avg_us(cell):
    return 1e6 * cell["time_s"] / cell["calls"] if cell and cell["calls"] else None


def speedup_text(a, b):
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}x"


def compare(docs, names, top=None, out=sys.stdout):
    a, b = docs
    w = lambda s="": print(s, file=out)  # noqa: E731
    w(f"ARShim statistics: {names[0]} (A) vs {names[1]} (B); speed-up = A time / B time per call")
    for tag, doc, name in (("A", a, names[0]), ("B", b, names[1])):
        run = doc["run"]
        env = " ".join(f"{k}={v['value']}" for k, v in sorted(run["settings"].items())
                       if v["source"] == "environment") or "defaults"
        sampling = estimated(doc)
        w(f"  {tag}  {name}: {run['date']}, {run['mpi']['version']}, {run['np']} ranks, "
          f"{doc['totals']['calls']} calls, {dur(doc['time']['allreduce_s']['total'])} in allreduce"
          + (f" (+- {dur(doc['totals'].get('time_s_error', 0.0))}, times sampled 1 in {sampling['period']})"
             if sampling else "") + f"; {env}")
    ta, tb = a["time"]["allreduce_s"]["total"], b["time"]["allreduce_s"]["total"]
    ca, cb = a["totals"]["calls"], b["totals"]["calls"]
    w(f"  total time in allreduce: A {dur(ta)}, B {dur(tb)}, speed-up {speedup_text(ta, tb)}"
      + ("" if ca == cb else f"; call counts differ (A {ca}, B {cb}): compare per call"))
    ba, bb = per_bucket(a), per_bucket(b)
    rows = []
    for bucket in sorted(set(ba) | set(bb)):
        ra, rb = ba.get(bucket), bb.get(bucket)
        row = (ra or rb)["row"]
        ua, ub = avg_us(ra), avg_us(rb)
        rows.append([bucket_label(row), ra["calls"] if ra else 0, rb["calls"] if rb else 0, us(ua), us(ub),
                     speedup_text(ua, ub), ",".join(sorted(ra["paths"])) if ra else "-",
                     ",".join(sorted(rb["paths"])) if rb else "-",
                     dur(ra["time_s"]) if ra else "-", dur(rb["time_s"]) if rb else "-"])
    rows, more = cut(rows, top)
    w()
    w("Per message size (all paths; avg_us = mean time per call)")
    w(table(["size [lo..hi)", "calls A", "calls B", "avg_us A", "avg_us B", "speed-up", "paths A", "paths B",
             "time A", "time B"], rows, align="lrrrrrllrr"))
    if more:
        w(more)
    pa = {r["path"]: r for r in a["paths"]}
    pb = {r["path"]: r for r in b["paths"]}
    w()
    w("Per path")
    w(table(["path", "calls A", "calls B", "time A", "time B", "avg_us A", "avg_us B"],
            [[p, pa[p]["calls"] if p in pa else 0, pb[p]["calls"] if p in pb else 0,
              dur(pa[p]["time_s"]) if p in pa else "-", dur(pb[p]["time_s"]) if p in pb else "-",
              us(pa[p]["avg_us"]) if p in pa else "-", us(pb[p]["avg_us"]) if p in pb else "-"]
             for p in PATHS if p in pa or p in pb]))


# ------------------------------------------------------------------------------------------------------------------
# plot

def import_pyplot():
    matplotlib = need("matplotlib", "python3-matplotlib", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def check_plot(out_path):
    """--plot's name, before anything is read or drawn: a .png, .svg or .html file that files.write_file can write
    (nothing, a regular file or a symbolic link at the name, which is replaced and never followed)."""
    if os.path.splitext(out_path)[1].lower() not in (".png", ".svg", ".html"):
        raise ReportError(f"--plot {escape(out_path)}: the file name must end in .png, .svg or .html")
    files.check_output(out_path, "--plot")


def plot(docs, names, out_path, summaries=None):
    ext = os.path.splitext(out_path)[1].lower()
    check_plot(out_path)
    plt = import_pyplot()
    try:
        # Drawn into memory, then written whole through files.write_file: matplotlib opening OUT by name would
        # follow a symbolic link planted there and block on a FIFO.
        files.write_file(out_path, draw(plt, docs, names, ext, summaries))
    except (ValueError, OverflowError) as e:  # matplotlib on numbers no run measures (1e300 us)
        raise ReportError(f"{', '.join(names)}: cannot plot ({escape(str(e), 120)})") from None
    finally:
        plt.close("all")


def draw(plt, docs, names, ext, summaries=None):
    """The plot's file contents: PNG bytes, or SVG or HTML text."""
    import io
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2], "hspace": 0.08})
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D"]
    all_buckets = set()
    bar_groups = []
    for i, (doc, name) in enumerate(zip(docs, names)):
        label_prefix = plot_text(f"{os.path.basename(name)}: ") if len(docs) > 1 else ""
        for path in PATHS:
            rows = sorted((r for r in doc["buckets"] if r["path"] == path), key=lambda r: r["bucket"])
            if not rows:
                continue
            xs = [r["bucket"] for r in rows]
            all_buckets.update(xs)
            top.plot(xs, [max(r["avg_us"], 1e-3) for r in rows], linestyle=styles[i % 4], marker=markers[i % 4],
                     color=PATH_COLORS[path], label=f"{label_prefix}{path}", linewidth=1.8, markersize=5)
            bar_groups.append((i, path, xs, [r["time_s"] for r in rows], label_prefix))
    if not all_buckets:
        raise ReportError("nothing to plot: the log has no calls")
    top.set_yscale("log")
    top.set_ylabel("time per call (µs, mean)")
    top.grid(True, which="major", alpha=0.4)
    top.grid(True, which="minor", alpha=0.12)
    top.yaxis.set_major_locator(LogLocator(base=10))
    top.legend(loc="upper left", fontsize=9, ncol=2 if len(docs) > 1 else 1)
    first = docs[0]["run"]
    title = (f"MPI_Allreduce time per message size — {first['mpi']['version']}, {first['np']} ranks"
             + (f" on {first['nodes']} node{'s' if first['nodes'] != 1 else ''}" if "nodes" in first else ""))
    if len(docs) > 1:
        title += f"\n{os.path.basename(names[0])} (solid) vs {os.path.basename(names[1])} (dashed)"
    top.set_title(plot_text(title), fontsize=11)

    # bottom: total time per bucket (sum over ranks), side-by-side bars per series
    width = 0.8 / max(1, len(bar_groups))
    for k, (i, path, xs, ts, prefix) in enumerate(bar_groups):
        offset = (k - (len(bar_groups) - 1) / 2) * width
        bottom.bar([x + offset for x in xs], ts, width=width, color=PATH_COLORS[path],
                   alpha=1.0 if i == 0 else 0.55, hatch=None if i == 0 else "//", label=f"{prefix}{path}")
    bottom.set_ylabel("total time in bucket (s, all ranks)")
    bottom.grid(True, axis="y", alpha=0.4)
    lo, hi = min(all_buckets), max(all_buckets)
    ticks = list(range(lo, hi + 1))
    bottom.set_xticks(ticks)
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda b, _: "0" if b <= 0 else size_label(1 << (int(b) - 1))))
    bottom.set_xlabel("message size (bytes per call, lower bound of each power-of-two bucket)")
    if len(ticks) > 16:
        for label in bottom.get_xticklabels():
            label.set_rotation(45)
    bottom.set_xlim(lo - 0.6, hi + 0.6)
    fig.align_ylabels([top, bottom])
    if ext == ".html":
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", bbox_inches="tight")
        text = io.StringIO()
        if len(docs) == 1:
            print_report(docs[0], names[0], out=text, summary_text=summaries[0] if summaries else None)
        else:
            compare(docs, names, out=text)
        import html
        page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ARShim statistics</title>"
                "<style>body{font-family:sans-serif;margin:2em} pre{font-size:12px}</style></head><body>\n"
                f"<h1>ARShim statistics: {html.escape(', '.join(os.path.basename(n) for n in names))}</h1>\n"
                f"{buffer.getvalue()}\n<pre>{html.escape(text.getvalue())}</pre>\n</body></html>\n")
        return page
    if ext == ".svg":
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", bbox_inches="tight")
        return buffer.getvalue()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------------------------

def run(args, names):
    if args.validate:
        bad = 0
        for path, name in zip(args.files, names):
            problems = validate(path)
            for p in problems[:20]:
                print(f"{name}: {p}", file=sys.stderr)
            print(f"{name}: {'valid' if not problems else f'{len(problems)} schema problems'} ({SCHEMA})")
            bad += bool(problems)
        return 1 if bad else 0
    if len(args.files) > 2:
        raise ReportError("give one log to print or two to compare")
    docs = [load(path) for path in args.files]
    sections = {SECTION_ALIASES.get(s, s) for s in args.section} if args.section else SECTIONS
    program = find_summary_program(args.summary_program)
    summaries = [summary(path, program) for path in args.files] if len(docs) == 1 and "summary" in sections else None
    if args.plot:
        plot(docs, names, args.plot, summaries)
        print(f"arshim report: wrote {escape(args.plot)}")
        return 0
    if len(docs) == 1:
        print_report(docs[0], names[0], top=args.top, order=args.sort, sections=sections,
                     all_settings=args.all_settings, summary_text=summaries[0] if summaries else None)
    else:
        compare(docs, names, top=args.top)
    return 0


def main(argv=None):
    parser = options.Parser(prog=PROG, description=__doc__.split("\n\n")[0],
                            epilog=__doc__.split("\n\n", 1)[1],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="RUN.json", help="one log to print, two to compare")
    parser.add_argument("--top", type=options.whole(1, 10 ** 9), metavar="N",
                        help="keep the first N rows of each table (default: all)")
    parser.add_argument("--sort", choices=("time", "calls", "bytes"), default="time",
                        help="row order of the tables (default: time, largest first)")
    parser.add_argument("--section", action="append", choices=SECTIONS + tuple(SECTION_ALIASES),
                        help="print only these tables (repeatable; default: all; paths, fallbacks and checks are "
                             "in the summary)")
    parser.add_argument("--all-settings", action="store_true",
                        help="list every ARSHIM_* setting, not only the set ones")
    parser.add_argument("--plot", metavar="OUT", help="draw time per message-size bucket per path to OUT "
                                                     "(.png, .svg, or .html with the tables)")
    parser.add_argument("--validate", action="store_true", help="check each file against the JSON schema and exit")
    parser.add_argument("--summary-program", help=argparse.SUPPRESS)  # arshim-stats-summary (`arshim report`)
    args = parser.parse_args(argv)
    names = [escape(path) for path in args.files]
    if hasattr(sys.stdout, "reconfigure"):  # a terminal that cannot show a character gets its escape
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        if args.plot is not None:
            check_plot(args.plot)  # before the logs are read and the plot drawn
        return run(args, names)
    except ToolError as e:
        print(f"{PROG}: {one_line(e)}", file=sys.stderr)
    except BrokenPipeError:  # `arshim report run.json | head`: quietly, also when Python flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001  a bug, on a log that passed every check: still one line, no traceback
        print(f"{PROG}: {', '.join(names)}: internal error ({type(e).__name__}: {escape(str(e), 120)}); please "
              "report it with the log", file=sys.stderr)
    return 2
