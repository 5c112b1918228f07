#!/usr/bin/env python3
"""Run arshim-bench-kernels for both MPI flavors (or read their CSVs) and merge them into one table.

Columns: ARShim's kernel at every ISA level, each library's own MPI_Reduce_local, the plain loop and memcpy, in
GB/s, and the ratios of ARShim's best level to MPICH, to Open MPI and to the plain loop. Standard library and the
arshim package only (tools/arshim/; installed as bin/arshim-bench-kernels-report, a link to this script in
<datadir>/arshim/tools/bench/ beside the package).

  arshim-bench-kernels-report                      # run ./arshim-bench-kernels-{mpich,openmpi} beside this script
  arshim-bench-kernels-report --max 16M --reps 5 --out kernels.csv
  arshim-bench-kernels-report --csv mpich.csv openmpi.csv   # merge earlier runs
"""

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import ToolError, files, options  # noqa: E402
from arshim.flavors import FLAVORS  # noqa: E402
from arshim.sizes import size_text  # noqa: E402
from arshim.text import escape  # noqa: E402

PROG = "arshim bench kernels"
MAX_BYTES = 1 << 30  # the kernel benchmark's largest buffer (three of them per process)
MAX_CSV_BYTES = 64 << 20

LEVELS = ["scalar", "avx2", "avx512", "neon", "sve"]  # narrowest first; the widest present is "ARShim"


def run_flavor(exe, flavor, args, tmpdir):
    out = os.path.join(tmpdir, flavor + ".csv")
    cmd = [exe, "--csv", out, "--min", str(args.min), "--max", str(args.max), "--reps", str(args.reps)]
    if args.flush_cache:
        cmd.append("--flush-cache")
    if args.cpu_time:
        cmd.append("--cpu-time")
    env = dict(os.environ)
    if flavor == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        # Open MPI refuses to start as root unless told it is deliberate (containers, CI).
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    print("running", " ".join(cmd), file=sys.stderr)
    try:
        done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
    except OSError as e:
        raise ToolError(f"{escape(exe)}: cannot run ({e.strerror})") from None
    if done.returncode != 0:
        raise ToolError(f"{escape(exe)} exited with status {done.returncode}")
    return out


def read_rows(paths):
    rows = []
    for path in paths:
        try:
            text = files.read_text(path, MAX_CSV_BYTES)
        except files.InputError as e:
            raise ToolError(f"--csv {e}") from None
        rows.extend(csv.DictReader(io.StringIO(text, newline="")))
    return rows


def merge(rows):
    """(case, bytes, cache) -> impl -> GB/s. ARShim levels, plain and memcpy are measured by both programs (same
    code, two processes): their mean is used; each library's number comes from its own program."""
    samples = defaultdict(lambda: defaultdict(list))
    for r in rows:
        try:
            samples[(r["case"], int(r["bytes"]), r["cache"])][r["impl"]].append(float(r["gbps"]))
        except (KeyError, TypeError, ValueError):
            raise ToolError("--csv: not a CSV of arshim-bench-kernels (columns case, bytes, cache, impl, gbps)") \
                from None
    table = {}
    for key, impls in samples.items():
        table[key] = {impl: sum(v) / len(v) for impl, v in impls.items()}
    return table


def ratio(a, b):
    return a / b if a is not None and b else None


def build_report(table):
    levels = [lvl for lvl in LEVELS if any(lvl in impls for impls in table.values())]
    best = levels[-1] if levels else None
    header = (["case", "bytes", "cache"] + levels + ["mpich", "openmpi", "plain", "memcpy"] +
              [f"{best}/mpich", f"{best}/openmpi", f"{best}/plain"])
    out = []
    for (case, nbytes, cache) in sorted(table, key=lambda k: (k[0], k[2], k[1])):
        impls = table[(case, nbytes, cache)]
        arshim = impls.get(best)
        row = [case, nbytes, cache] + [impls.get(lvl) for lvl in levels]
        row += [impls.get("mpich"), impls.get("openmpi"), impls.get("plain"), impls.get("memcpy")]
        row += [ratio(arshim, impls.get("mpich")), ratio(arshim, impls.get("openmpi")),
                ratio(arshim, impls.get("plain"))]
        out.append(row)
    return header, out


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return escape(str(v))  # names read from --csv files


def print_table(header, rows):
    shown = [[fmt(size_text(c) if i == 1 else c) for i, c in enumerate(r)] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in shown)) if shown else len(h) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in shown:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def main(argv=None):
    try:
        return report(argv)
    except ToolError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2


def report(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = options.Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", nargs="+", metavar="FILE", help="merge these CSVs instead of running the programs")
    p.add_argument("--mpich-exe", default=os.path.join(here, "arshim-bench-kernels-mpich"))
    p.add_argument("--openmpi-exe", default=os.path.join(here, "arshim-bench-kernels-openmpi"))
    p.add_argument("--min", default="1K", type=options.size(1, MAX_BYTES), help="smallest buffer (default 1K)")
    p.add_argument("--max", default="256M", type=options.size(1, MAX_BYTES),
                   help="largest buffer (default 256M; up to 1G)")
    p.add_argument("--reps", type=options.whole(1, 1000), default=7,
                   help="repetitions, the median is kept (default 7)")
    p.add_argument("--flush-cache", action="store_true", help="evict the buffers before each timed call")
    p.add_argument("--cpu-time", action="store_true",
                   help="time by the thread's CPU clock (a shared, busy machine)")
    p.add_argument("--out", metavar="FILE", type=options.output, help="write the merged table as CSV")
    args = p.parse_args(argv)
    if args.min > args.max:
        p.error(f"--min {size_text(args.min)} --max {size_text(args.max)}: --min must be at most --max")

    with tempfile.TemporaryDirectory() as tmp:
        if args.csv:
            paths = args.csv
        else:
            paths = []
            for flavor in FLAVORS:
                exe = getattr(args, f"{flavor}_exe")
                if os.access(exe, os.X_OK):
                    paths.append(run_flavor(exe, flavor, args, tmp))
                else:
                    print(f"note: {exe} not found, no {flavor} column", file=sys.stderr)
            if not paths:
                p.error("no benchmark program found; give --csv or --mpich-exe/--openmpi-exe")
        header, rows = build_report(merge(read_rows(paths)))

    print_table(header, rows)
    if args.out:  # whole or nothing, never through a symbolic link at the name (files.write_file)
        text = io.StringIO(newline="")
        w = csv.writer(text)
        w.writerow(header)
        for r in rows:
            w.writerow(["" if v is None else (f"{v:.4f}" if isinstance(v, float) else v) for v in r])
        files.write_file(args.out, text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
