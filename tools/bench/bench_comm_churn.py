#!/usr/bin/env python3
"""Communicator churn: a new communicator per few small allreduces, native against ARShim (docs/paths.md "Reused
windows").

  bench_comm_churn.py --build BUILD [--flavor mpich,openmpi] [--np 2] [--calls 10,50,200] [--bytes 8]
                      [--rounds 5] [--config NAME[:lib=PATH][:VAR=VALUE...]]...

Runs bench_comm_churn (tools/bench/bench_comm_churn.c) once per configuration and --calls value per round, the
configurations' order rotating from round to round. Configurations: `native` (no ARShim), `default` (the build's
ARShim), `reuse-off` (ARSHIM_SHM_REUSE=off), or your own with --config (e.g. `old:lib=/tmp/old/libarshim-mpich.so`;
%f in a path is the flavor). Prints per --calls value the median µs per cycle and the median over rounds of each
configuration's time / native's in the same round [quartiles].
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim import launchers  # noqa: E402


def parse_config(text, build):
    name, *parts = text.split(":")
    config = {"name": name, "lib": None, "env": {}}
    if name != "native":
        config["lib"] = os.path.join(build, "shim", "libarshim-%f.so")
    for p in parts:
        key, _, value = p.partition("=")
        if key == "lib":
            config["lib"] = value
        elif key.startswith("ARSHIM_") and value:
            config["env"][key] = value
        else:
            raise SystemExit(f"--config {text}: '{p}' is neither lib=PATH nor ARSHIM_VAR=VALUE")
    return config


def launch(flavor, build, config, args, calls):
    prog = os.path.join(build, "tools", "bench", f"bench_comm_churn-{flavor}")
    env = dict(config["env"])
    if config["lib"]:
        env["LD_PRELOAD"] = config["lib"].replace("%f", flavor)
    cmd = launchers.mpirun(flavor, args.np) + launchers.env_args(flavor, env) + [
        prog, "--calls", str(calls), "--cycles", str(args.cycles), "--bytes", str(args.bytes)]
    out = launchers.run_benchmark(cmd, 600)
    for line in out.splitlines():
        if line.startswith("churn "):
            return float(line.split()[1])
    raise RuntimeError(f"no result from {prog}:\n{out}")


def quartiles(values):
    v = sorted(values)
    q = statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0]] * 3
    return q[1], q[0], q[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="the meson build directory")
    parser.add_argument("--flavor", default="mpich,openmpi")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--calls", default="10,50,200", help="allreduces per communicator (comma-separated)")
    parser.add_argument("--bytes", default="8")
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--config", action="append", default=[], help="NAME[:lib=PATH][:ARSHIM_VAR=VALUE...]")
    args = parser.parse_args()
    texts = args.config or ["default", "reuse-off:ARSHIM_SHM_REUSE=off"]
    configs = [parse_config("native", args.build)] + [parse_config(t, args.build) for t in texts if t != "native"]
    calls_list = [int(c) for c in args.calls.split(",") if c]
    for flavor in args.flavor.split(","):
        times = {(c["name"], n): [] for c in configs for n in calls_list}
        for r in range(args.rounds):
            for n in calls_list:
                for k in range(len(configs)):
                    config = configs[(r + k) % len(configs)]
                    times[(config["name"], n)].append(launch(flavor, args.build, config, args, n))
            print(f"{flavor}: round {r + 1}/{args.rounds} done", file=sys.stderr)
        print(f"\n{flavor}, np {args.np}, {args.bytes} B calls, {args.cycles} dup / calls / free cycles per loop, "
              f"{args.rounds} rounds; µs per cycle (median), time / native per round: median [quartiles]")
        print("| calls per communicator | " + " | ".join(c["name"] for c in configs) + " |")
        print("|---|" + "---|" * len(configs))
        for n in calls_list:
            native = times[("native", n)]
            cells = [f"{statistics.median(native):.1f}"]
            for c in configs[1:]:
                mine = times[(c["name"], n)]
                med, lo, hi = quartiles([a / b for a, b in zip(mine, native)])
                cells.append(f"{statistics.median(mine):.1f}, {med:.2f} [{lo:.2f}, {hi:.2f}]")
            print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
