#!/usr/bin/env python3
"""First calls: what a new communicator's and a new size bucket's first call cost, per path, against native.

  bench_first_calls.py --build BUILD [--flavor mpich,openmpi] [--np 4] [--configs native,default,pipelined,...]
                       [--sizes 8,1K,32K,1M] [--calls 100] [--comms 5] [--rounds 3] [--env VAR=VALUE ...]

Runs bench_first_calls (tools/bench/bench_first_calls.c) once per configuration per round, the configurations'
order rotating from round to round: `native` without ARShim, `default` with ARShim and its policy, and each path
forced with ARSHIM_PATH. Per size bucket it prints, over all communicators of all rounds: the median of the
bucket's first call (for the first bucket: the communicator's first call, which builds ARShim's context), the
median of the later calls' medians, and the ratio of the worst later call to its bucket's median per communicator
(the issue's bound is 5): its median over the communicators (an outlier ARShim causes recurs on every new
communicator, the machine's noise does not) and its maximum, each next to native's, which is what the machine does
to the same loop.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import launchers  # noqa: E402
from arshim.sizes import human_bytes  # noqa: E402

PATHS = ("native", "default", "pipelined", "multileader", "reproducible")


def command(flavor, build, config, np_, args):
    prog = os.path.join(build, "tools", "bench", f"bench_first_calls-{flavor}")
    env = dict(kv.split("=", 1) for kv in args.env)
    if config != "native":
        env["LD_PRELOAD"] = os.path.join(build, "shim", f"libarshim-{flavor}.so")
    if config not in ("native", "default"):
        env["ARSHIM_PATH"] = config
    return launchers.mpirun(flavor, np_) + launchers.env_args(flavor, env) + [
        prog, "--sizes", args.sizes, "--calls", str(args.calls), "--comms", str(args.comms)]


def launch(cmd):
    rows = []
    for line in launchers.run_benchmark(cmd, 600).splitlines():
        parts = line.split()
        if len(parts) == 7 and parts[0] == "first":
            rows.append((int(parts[1]), int(parts[2]), float(parts[3]), float(parts[4]), float(parts[5]), int(parts[6])))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="the meson build directory")
    parser.add_argument("--flavor", default="mpich,openmpi")
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--configs", default=",".join(PATHS), help="a subset of " + ",".join(PATHS))
    parser.add_argument("--sizes", default="8,1K,32K,1M")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--comms", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], help="VAR=VALUE for every rank (repeatable)")
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in PATHS]
    if unknown:
        parser.error(f"--configs: unknown {', '.join(unknown)} (allowed: {', '.join(PATHS)})")
    for flavor in args.flavor.split(","):
        rows = {c: [] for c in configs}
        for r in range(args.rounds):
            for k in range(len(configs)):
                config = configs[(r + k) % len(configs)]
                rows[config] += launch(command(flavor, args.build, config, args.np, args))
            print(f"{flavor}: round {r + 1}/{args.rounds} done", file=sys.stderr)
        buckets = sorted({row[1] for c in configs for row in rows[c]})
        print(f"\n{flavor}, np {args.np}, {args.rounds} rounds x {args.comms} new communicators, {args.calls} later "
              f"calls per bucket; times in us (slowest rank), medians over communicators")
        print("| bucket from | config | first call | later median | first / median | worst later / median: median "
              "over comms (native) | max over comms (native) |")
        print("|---|---|---|---|---|---|---|")

        def ratios(config, b):
            return [row[4] / row[3] for row in rows[config] if row[1] == b and row[3] > 0]

        for b in buckets:
            native = ratios("native", b) if "native" in rows else []
            nmed = f" ({statistics.median(native):.1f})" if native else ""
            nmax = f" ({max(native):.1f})" if native else ""
            for c in configs:
                mine = [row for row in rows[c] if row[1] == b]
                first = statistics.median(row[2] for row in mine)
                med = statistics.median(row[3] for row in mine)
                r = ratios(c, b)
                print(f"| {human_bytes(b, places=0)} | {c} | {first:.1f} | {med:.2f} | {first / med:.1f} | "
                      f"{statistics.median(r):.1f}{nmed} | {max(r):.1f}{nmax} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
