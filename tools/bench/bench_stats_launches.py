#!/usr/bin/env python3
"""The statistics' overhead across launches: configurations one process cannot switch between, compared.

  bench_stats_launches.py --build BUILD [--flavor mpich,openmpi] [--rounds 9] [--sizes 8,1024] [--iters N] [--reps R]

Per MPI flavor, each round launches bench_stats_overhead --plain (np 2, ranks pinned) once per configuration, in an
order that rotates from round to round:
  native     the library alone (no LD_PRELOAD)
  shim       ARShim preloaded, no ARSHIM_* variable: no statistics log (counters only)
  shim-env   the same with ARSHIM_LOG=warn (the default value): no log either, but an ARSHIM_* variable is set, so
             MPI_Init sends the settings (twice, which keeps the parity of the messages between the ranks as without
             them: under Open MPI 4.1.4 that parity moves an 8-byte allreduce at np 2 by ~140 ns, docs/stats.md)
  stats      ARShim with ARSHIM_STATS=file (the defaults: times sampled 1 in ARSHIM_STATS_SAMPLE=64, call sites)
  stats-all  the same with ARSHIM_STATS_SAMPLE=1 (every call timed, every call site recorded)
and prints, per message size, each configuration's median time per call and the median over rounds of its ratio to
`shim-env` (what the statistics cost), `shim` and `native`, each taken within the same round (launches next to each
other), with the ratios' quartiles as the noise. docs/stats.md "Overhead" has the figures of the development VM.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import launchers  # noqa: E402

CONFIGS = ("native", "shim", "shim-env", "stats", "stats-all")
BASES = ("shim-env", "shim", "native")


def command(flavor, build, config, log, sizes, iters, reps):
    shim = os.path.join(build, "shim", f"libarshim-{flavor}.so")
    bench = os.path.join(build, "tools", "bench", f"bench_stats_overhead-{flavor}")
    env = {}
    if config != "native":
        env["LD_PRELOAD"] = shim
    if config == "shim-env":
        env["ARSHIM_LOG"] = "warn"
    if config in ("stats", "stats-all"):
        env["ARSHIM_STATS"] = log
    if config == "stats-all":
        env["ARSHIM_STATS_SAMPLE"] = "1"
    if flavor == "openmpi":
        args = ["mpirun.openmpi", "--bind-to", "core", "-n", "2"]
    else:
        args = ["mpirun.mpich", "-bind-to", "core", "-n", "2"]
    args += launchers.env_args(flavor, env)
    return args + [bench, "--plain", "--sizes", ",".join(map(str, sizes)), "--iters", str(iters), "--reps", str(reps)]


def launch(args):
    stdout = launchers.run_benchmark(args, 300)
    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"^plain (\d+) ([\d.]+) ", stdout, re.M)}


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="the meson build directory")
    parser.add_argument("--flavor", default="mpich,openmpi")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", default="8,1024")
    parser.add_argument("--iters", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--configs", default=",".join(CONFIGS), help="a subset of " + ",".join(CONFIGS))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    configs = [c for c in CONFIGS if c in args.configs.split(",")]
    bases = [b for b in BASES if b in configs]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "stats.json")
        for flavor in args.flavor.split(","):
            times = {c: {s: [] for s in sizes} for c in configs}
            for r in range(args.rounds):
                for k in range(len(configs)):
                    config = configs[(r + k) % len(configs)]
                    got = launch(command(flavor, args.build, config, log, sizes, args.iters, args.reps))
                    for s in sizes:
                        times[config][s].append(got[s])
                print(f"{flavor}: round {r + 1}/{args.rounds} done", file=sys.stderr)
            print(f"\n{flavor}, np 2, {args.rounds} rounds of alternated launches, each the median of {args.reps} x "
                  f"{args.iters} calls; ratio = median over rounds of the same round's ratio [quartiles]")
            print("| size | config | median ns/call | " + " | ".join(f"vs {b}" for b in bases) + " |")
            print("|---|---|---|" + "---|" * len(bases))
            for s in sizes:
                for c in configs:
                    per_call = statistics.median(times[c][s])
                    cells = []
                    for base in bases:
                        ratios = [a / b for a, b in zip(times[c][s], times[base][s])]
                        lo, hi = quartiles(ratios)
                        cells.append(f"{statistics.median(ratios):.3f} [{lo:.3f}, {hi:.3f}]")
                    print(f"| {s} B | {c} | {per_call:.1f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
