#!/usr/bin/env python3
"""Scores the `arshim tune` goal benchmark (tools/bench/bench_tune_goal.sh; docs/tuning.md): for each measured
layout, how often the tuned table's choice (config arshim-tuned) and the built-in table's (arshim-tune-off) are
within 10% of the best measured option (native or a forced path), how often they are more than 3% slower than
native, the tuned table's model's median prediction error at those points, and the rig's ceiling on that score:
how often the option fastest in one round's launches is within 10% of the best by the other rounds.

  tune_goal_score.py OUTDIR [--arshim BUILD/tools/arshim] [--rebuilt DIR]

--rebuilt DIR scores tables rebuilt offline from the same run's samples (`arshim policy tune-table --samples
OUTDIR/tuned-FLAVOR-LINK.toml.samples.json > DIR/tuned-FLAVOR-LINK.toml`, after a change of the table's rules)
against the run's forced configurations: each point's decision (with the built-in table after it, as
ARSHIM_POLICY_MODE=prepend) is looked up with `arshim policy explain` and takes the time its action measured as a
forced configuration; the original table's decisions are scored the same way beside it, so the two compare on
the same figures. A decision no forced configuration took is not scored (counted).

"Beyond the noise" counts a miss only when it exceeds the measured noise: the noise of a figure is half the range
of its per-round medians without the slowest round (noise only adds time), and a miss must exceed the sum of the two
figures' noises. Prints one Markdown table.
"""
import argparse
import collections
import csv
import glob
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim.sizes import parse_size  # noqa: E402

TABLES = ("arshim-tuned", "arshim-tune-off")
# Up to 64 KiB (one segment of the smallest) these are the same action: the whole message as one MPI_Iallreduce.
SAME_ACTION = ("pipelined-64K", "pipelined-256K", "pipelined-1M")


def noise(rounds):
    kept = sorted(rounds)[:-1] if len(rounds) > 2 else sorted(rounds)
    return (kept[-1] - kept[0]) / 2 if kept else 0.0


def run_files(outdir):
    """The run's per-layout CSVs (FLAVOR-LINK-HxP.csv); anything else under such a name (a FIFO, a directory, a
    dangling link) is skipped with one line rather than read."""
    for path in sorted(glob.glob(os.path.join(outdir, "*-*-*x*.csv"))):
        if os.path.isfile(path):
            yield path
        else:
            print(f"tune_goal_score.py: {path!r} is not a regular file; skipped", file=sys.stderr)


def read_run(path):
    """(flavor, np, nodes), {bytes: {config: (median_us, noise_us)}} and {bytes: {config: [per-round medians]}} (one
    launch each) of one CSV."""
    points = collections.defaultdict(dict)
    per_round = collections.defaultdict(dict)
    meta = None
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                rounds = [float(x) for x in (r.get("round_us") or "").split(";") if x]
                points[int(r["bytes"])][r["config"]] = (float(r["median_us"]), noise(rounds))
                per_round[int(r["bytes"])][r["config"]] = rounds
                meta = (r["flavor"], int(r["np"]), int(r["nodes"]))
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"tune_goal_score.py: {path!r} is not a benchmark CSV of bench_allreduce.py --csv "
                 f"({type(e).__name__}: {str(e)[:80]})")
    if meta is None:
        sys.exit(f"tune_goal_score.py: {path!r} has no rows")
    return meta, points, per_round


def ceiling(per_round):
    """The rig's repeatability ceiling on the goal's score at one layout: a chooser that measured every option at
    the very point, once, in one launch each (round r), takes that launch's fastest; it is scored like the tables,
    against the medians of the other rounds' launches. Averaged over r: (points, within 10%, within beyond noise).
    No table can be expected to score above what its own figures' launch-to-launch spread allows."""
    scored = within = within_noise = 0.0
    for configs in per_round.values():
        options = {k: v for k, v in configs.items() if k not in TABLES and k != "native-control"}
        rounds = min((len(v) for v in options.values()), default=0)
        if "native" not in options or rounds < 2:
            continue
        scored += 1
        for r in range(rounds):
            chosen = min(options, key=lambda k: options[k][r])
            others = {k: [x for i, x in enumerate(v[:rounds]) if i != r] for k, v in options.items()}
            medians = {k: (statistics.median(v), noise(v)) for k, v in others.items()}
            best, best_noise = min(medians.values())
            time_us, time_noise = medians[chosen]
            within += (time_us <= 1.10 * best) / rounds
            within_noise += (time_us - 1.10 * best <= time_noise + best_noise) / rounds
    return scored, within, within_noise


PREDICTION = re.compile(r"^\s+(native|multileader leaders=(\d+) pipeline_k=1|pipelined segment_bytes=(\w+) window=8)"
                        r"\s.*?([0-9.]+) us$")


def predictions(arshim, table, flavor, nbytes, ppn, nodes):
    """The table's model's predicted time of each benchmark config at one point (`arshim policy explain`)."""
    p = subprocess.run([arshim, "policy", "explain", "--policy", table, "--bytes", str(nbytes), "--ppn", str(ppn),
                        "--nodes", str(nodes), "--mpi", flavor], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        m = PREDICTION.match(line)
        if not m:
            continue
        name = "native" if m.group(1) == "native" else \
            f"multileader-l{m.group(2)}" if m.group(2) else f"pipelined-{m.group(3)}"
        out[name] = float(m.group(4))
    return out


def decision_config(arshim, table, flavor, nbytes, ppn, nodes):
    """The forced configuration of the benchmark that takes the action a table (then the built-in one) decides at a
    point, or None. Pipelined decisions up to one segment are one MPI_Iallreduce of the whole message: any of
    SAME_ACTION; the benchmark's 64 KiB segments run 16 in flight where the tuner's run 8."""
    env = dict(os.environ, ARSHIM_POLICY_MODE="prepend")
    p = subprocess.run([arshim, "policy", "explain", "--policy", table, "--bytes", str(nbytes), "--ppn", str(ppn),
                        "--nodes", str(nodes), "--mpi", flavor], capture_output=True, text=True, env=env)
    line = next((x for x in p.stdout.splitlines() if x.startswith("decision:")), None)
    if line is None:
        return None
    words = line.split()[1:]
    kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if words[0] == "native":
        return "native"
    if words[0] == "multileader":
        k = kv.get("pipeline_k", "1")
        return f"multileader-l{kv.get('leaders')}" + ("" if k == "1" else f"-k{k}")
    if words[0] == "pipelined":
        seg = kv.get("segment_bytes")
        if kv.get("segments") == "1" or (seg and parse_size(seg) >= nbytes):
            return "pipelined-64K" if nbytes <= 64 * 1024 else None
        return f"pipelined-{seg}" if seg else None
    return None


def rescore(outdir, rebuilt, arshim):
    """Scores the original and the rebuilt tables' decisions with the forced configurations' times (--rebuilt)."""
    print("\n| run | points scored | original within 10% of best (beyond noise) | rebuilt within 10% (beyond noise) | "
          "original >3% slower than native (beyond noise) | rebuilt >3% slower (beyond noise) | decisions changed |")
    print("|---|---|---|---|---|---|---|")
    totals = collections.Counter()
    rows = []
    for path in run_files(outdir):
        name = os.path.basename(path)[:-4]
        (flavor, np_, nodes), points, _ = read_run(path)
        link = name.split("-")[1]
        tables = {"original": os.path.join(outdir, f"tuned-{flavor}-{link}.toml"),
                  "rebuilt": os.path.join(rebuilt, f"tuned-{flavor}-{link}.toml")}
        if not all(os.path.exists(t) for t in tables.values()):
            continue
        c = collections.Counter()
        for nbytes, configs in sorted(points.items()):
            options = {k: v for k, v in configs.items() if k not in TABLES and k != "native-control"}
            if "native" not in options:
                continue
            chosen = {t: decision_config(arshim, table, flavor, nbytes, np_ // nodes, nodes)
                      for t, table in tables.items()}
            if any(choice not in options for choice in chosen.values()):
                c["unscored"] += 1
                continue
            best, best_noise = min(options.values())
            native, native_noise = options["native"]
            c["points"] += 1
            c["changed"] += chosen["original"] != chosen["rebuilt"]
            for t, choice in chosen.items():
                time_us, time_noise = options[choice]
                c[f"{t} within"] += time_us <= 1.10 * best
                c[f"{t} within noise"] += time_us - 1.10 * best <= time_noise + best_noise
                c[f"{t} slow"] += time_us > 1.03 * native
                c[f"{t} slow noise"] += time_us - 1.03 * native > time_noise + native_noise
        totals.update(c)
        rows.append((name, c))
    for name, x in rows + [("all", totals)]:
        print(f"| {name} | {x['points']} | {x['original within']} ({x['original within noise']}) | "
              f"{x['rebuilt within']} ({x['rebuilt within noise']}) | {x['original slow']} "
              f"({x['original slow noise']}) | {x['rebuilt slow']} ({x['rebuilt slow noise']}) | {x['changed']} |")
    if totals["unscored"]:
        print(f"\n{totals['unscored']} points not scored: a decision no forced configuration took.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--arshim", help="the arshim command, for the model's predictions (tuned tables with [model])")
    ap.add_argument("--rebuilt", metavar="DIR", help="also score tables rebuilt offline from the run's samples")
    args = ap.parse_args()
    if args.rebuilt and not args.arshim:
        ap.error("--rebuilt needs --arshim (the tables' decisions come from `arshim policy explain`)")
    rows = []
    totals = collections.Counter()
    for path in run_files(args.outdir):
        name = os.path.basename(path)[:-4]
        (flavor, np_, nodes), points, per_round = read_run(path)
        link = name.split("-")[1]
        table = os.path.join(args.outdir, f"tuned-{flavor}-{link}.toml")
        c = collections.Counter()
        errors = []
        for nbytes, configs in sorted(points.items()):
            if not all(t in configs for t in TABLES) or "native" not in configs:
                continue
            options = {k: v for k, v in configs.items() if k not in TABLES and k != "native-control"}
            same = [configs[k] for k in SAME_ACTION if k in configs]
            if nbytes <= 64 * 1024 and len(same) == len(SAME_ACTION):
                fastest, slowest = min(same), max(same)
                c["same points"] += 1
                c["same apart"] += slowest[0] > 1.10 * fastest[0]
                c["same apart noise"] += slowest[0] - 1.10 * fastest[0] > slowest[1] + fastest[1]
            best_name = min(options, key=lambda k: options[k][0])
            best, best_noise = options[best_name]
            native, native_noise = configs["native"]
            c["points"] += 1
            for t in TABLES:
                time_us, time_noise = configs[t]
                c[f"{t} within"] += time_us <= 1.10 * best
                c[f"{t} within noise"] += time_us - 1.10 * best <= time_noise + best_noise
                c[f"{t} slow"] += time_us > 1.03 * native
                c[f"{t} slow noise"] += time_us - 1.03 * native > time_noise + native_noise
            if args.arshim and os.path.exists(table):
                predicted = predictions(args.arshim, table, flavor, nbytes, np_ // nodes, nodes)
                for k, (measured, _) in options.items():
                    if k in predicted and measured > 0:
                        errors.append(abs(predicted[k] - measured) / measured)
        err = f"{100 * statistics.median(errors):.0f}%" if errors else "-"
        c["ceiling points"], c["ceiling within"], c["ceiling within noise"] = ceiling(per_round)
        rows.append((name, c, err))
        totals.update(c)
    print("| run | points | tuned within 10% of best (beyond noise) | built-in within 10% (beyond noise) | "
          "one launch's best within 10% (beyond noise) | tuned >3% slower than native (beyond noise) | "
          "built-in >3% slower (beyond noise) | model median error |")
    print("|---|---|---|---|---|---|---|---|")
    for name, c, err in rows + [("all", totals, "")]:
        print(f"| {name} | {c['points']} | {c['arshim-tuned within']} ({c['arshim-tuned within noise']}) | "
              f"{c['arshim-tune-off within']} ({c['arshim-tune-off within noise']}) | "
              f"{c['ceiling within']:.1f} ({c['ceiling within noise']:.1f}) of {c['ceiling points']:.0f} | "
              f"{c['arshim-tuned slow']} ({c['arshim-tuned slow noise']}) | {c['arshim-tune-off slow']} "
              f"({c['arshim-tune-off slow noise']}) | {err} |")
    if totals["ceiling points"]:
        print("\nOne launch's best: at each point, the option fastest in one round's launches, scored against the "
              "medians of the other rounds (averaged over the rounds): what a chooser that measured every option "
              "at the very point, once each, scores on this rig's launch-to-launch spread.")
    if totals["same points"]:
        print(f"\nNoise floor: at {totals['same points']} points up to 64 KiB the pipelined configurations are one "
              f"action (one MPI_Iallreduce of the whole message) under {'/'.join(SAME_ACTION)}; their slowest "
              f"measured more than 10% above their fastest at {totals['same apart']} of them "
              f"({totals['same apart noise']} beyond the noise): a choice can miss the 10% there by measurement alone.")
    if args.rebuilt:
        rescore(args.outdir, args.rebuilt, args.arshim)
    return 0


if __name__ == "__main__":
    sys.exit(main())
