#!/usr/bin/env python3
"""Scores the tuner's goal in simulation (tools/bench/bench_simulate_tune_goal.sh; docs/scale.md, docs/tuning.md):
from `arshim simulate` CSVs that hold, per point (nodes, ppn, bytes) and SMPI selector, the library's allreduce
(native-SEL), ARShim's built-in table (arshim-default-SEL), a tuned table (arshim-tuned-SEL) and forced options
(arshim-PATH-SEL: the forced paths with their defaults and arshim tune's candidates), it counts per layout and
selector how often the tuned table and the built-in one are within 10% of the best forced option (the library's
allreduce included), how often each is more than 3% slower than the library, and the model's median error over
every row that has a prediction (|model_us - sim_us| / sim_us). A simulation repeats itself exactly: no noise.

  simulate_tune_goal.py CSV... [--misses]

--misses lists every point where a table is more than 10% behind the best, with the option that was best.
Prints Markdown tables.
"""
import argparse
import collections
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import files  # noqa: E402
from arshim.sizes import size_text  # noqa: E402
from arshim.text import escape  # noqa: E402

TABLES = ("tuned", "default")
WITHIN = 1.10   # the goal: within 10% of the best forced option
SLOWER = 1.03   # "slower than the library" beyond 3%
MAX_CSV_BYTES = 64 << 20


def split_config(config):
    """(option, selector) of a configuration name: native-ompi -> ("native", "ompi"), arshim-pipelined-1M-mpich ->
    ("pipelined-1M", "mpich"); None for a name that is neither."""
    head, _, selector = config.rpartition("-")
    if selector not in ("mpich", "ompi") or not head:
        return None
    if head == "native":
        return "native", selector
    if head.startswith("arshim-"):
        return head[len("arshim-"):], selector
    return None


def read_points(paths, networks=None):
    """{(nodes, ppn, selector): {bytes: {option: (sim_us, model_us or None)}}} of the CSVs; a file that is not a CSV
    of arshim simulate is refused in one line. Rows simulated on another network than smpi (the CSV's network column,
    arshim simulate --network) are kept apart: their selector reads "SELECTOR on NETWORK". `networks`, a set, gets
    every network seen ("smpi" for a CSV from before --network)."""
    points = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path in paths:
        try:
            text = files.read_text(path, MAX_CSV_BYTES)
        except files.InputError as e:
            raise SystemExit(f"simulate_tune_goal.py: {e}")
        rows = list(csv.DictReader(text.splitlines()))
        if not rows or "sim_us" not in rows[0]:
            raise SystemExit(f"simulate_tune_goal.py: {files.escape(path)}: not a CSV of arshim simulate")
        for r in rows:
            parts = split_config(r.get("config") or "")
            network = r.get("network") or "smpi"
            if networks is not None:
                networks.add(network)
            try:
                key = (int(r["nodes"]), int(r["ppn"]), (parts[1] if parts else "") +
                       ("" if network == "smpi" else f" on {network}"))
                sim = float(r["sim_us"])
                model = float(r["model_us"]) if r.get("model_us") else None
                nbytes = int(r["bytes"])
            except (TypeError, ValueError, KeyError):
                continue
            if parts and sim > 0:
                points[key][nbytes][parts[0]] = (sim, model)
    return points


def score(points):
    """One row per (nodes, ppn, selector), and the misses: [(layout, bytes, table, its us, best option, best us)]."""
    rows, misses = [], []
    for (nodes, ppn, selector), by_size in sorted(points.items()):
        count = collections.Counter()
        errors = []
        for nbytes, options in sorted(by_size.items()):
            forced = {o: t for o, (t, _) in options.items() if o not in TABLES}
            errors += [abs(m - t) / t for (t, m) in options.values() if m is not None]
            if "native" not in forced:
                continue
            best = min(forced, key=forced.get)
            count["points"] += 1
            for table in (t for t in TABLES if t in options):
                count[f"{table} points"] += 1
                t = options[table][0]
                if t <= WITHIN * forced[best]:
                    count[f"{table} within"] += 1
                else:
                    misses.append(((nodes, ppn, selector), nbytes, table, t, best, forced[best]))
                if t > SLOWER * forced["native"]:
                    count[f"{table} slower"] += 1
        rows.append(((nodes, ppn, selector), count, statistics.median(errors) if errors else None))
    return rows, misses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="+", help="CSVs of arshim simulate")
    parser.add_argument("--misses", action="store_true", help="list the points where a table is > 10%% behind")
    args = parser.parse_args(argv)
    networks = set()
    rows, misses = score(read_points(args.csv, networks))
    total = collections.Counter()
    print("Network: " + ", ".join(escape(n, 40) for n in sorted(networks)) + " (arshim simulate --network; docs/scale.md "
          "\"The network\")\n")
    print("| layout | selector | points | tuned within 10% of the best | built-in within 10% | tuned > 3% slower than "
          "native | built-in > 3% slower | model's median error |")
    print("|---|---|---|---|---|---|---|---|")
    def of(count, table, what, share=False):
        if not count[f"{table} points"]:
            return "-"
        n = count[f"{table} {what}"]
        return f"{n} ({n / count[f'{table} points']:.0%})" if share else str(n)

    for (nodes, ppn, selector), count, error in rows:
        total.update(count)
        print(f"| {nodes} x {ppn} | {selector} | {count['points']} | {of(count, 'tuned', 'within')} | "
              f"{of(count, 'default', 'within')} | {of(count, 'tuned', 'slower')} | {of(count, 'default', 'slower')} | "
              + ("" if error is None else f"{error:.0%}") + " |")
    if len(rows) > 1 and total["points"]:
        print(f"| all | | {total['points']} | {of(total, 'tuned', 'within', True)} | "
              f"{of(total, 'default', 'within', True)} | {of(total, 'tuned', 'slower')} | "
              f"{of(total, 'default', 'slower')} | |")
    if args.misses and misses:
        print("\n| layout | selector | bytes | table | its time | best option | best time | behind |")
        print("|---|---|---|---|---|---|---|---|")
        for (nodes, ppn, selector), nbytes, table, t, best, best_t in misses:
            print(f"| {nodes} x {ppn} | {selector} | {size_text(nbytes)} | {table} | {t:.1f} us | {escape(best, 60)} | "
                  f"{best_t:.1f} us | {t / best_t:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
