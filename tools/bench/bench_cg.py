#!/usr/bin/env python3
"""The CG proxy benchmark (issue 43): examples/cg_solver's time per iteration, native against ARShim, in one run.

cg_solver solves the 3-D Poisson problem with conjugate gradients: two 8-byte allreduces per iteration next to a halo
exchange, the latency-bound pattern of Krylov solvers. Each round runs every configuration once, in order (native,
ARShim's default, native again as the control), so that machine noise hits them alike; each figure is the median over
rounds of the program's own median time per iteration (its warm-up solve excluded: connection set-up, ARShim's
context). Ratios are ARShim's time over native's (< 1: ARShim faster); the control's ratio is the noise.

Every run verifies its own solution (the program exits 1 otherwise). The residual history digests are compared too:
on one node with 2 ranks a double sum is one addition, so ARShim's history is native's bit for bit; with more ranks
the library and ARShim may add in different orders and the last bits of the history may differ, which is printed,
not hidden (iterations and final residual are printed beside).

  tools/bench/bench_cg.py [--mpi mpich,openmpi] [--np 2] [--n 32] [--rounds 5] [--wrap "arshim cluster wrap --ppn 2 --"]
"""
import argparse
import json
import os
import shlex
import statistics
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tools/: the arshim package
from arshim import launchers  # noqa: E402

CONFIGS = ("native", "arshim-default", "native-control")
# Further configurations (--configs): ARShim with one path forced.
FORCED = {"arshim-latency": "latency", "arshim-multileader": "multileader", "arshim-pipelined": "pipelined"}


def find_build(explicit):
    for c in ([explicit] if explicit else []) + [os.environ.get("ARSHIM_BUILD_DIR"), os.path.join(HERE, "..", "..", "build")]:
        if c and os.path.isdir(os.path.join(c, "examples")):
            return os.path.realpath(c)
    sys.exit("bench_cg: cannot find the build directory (pass --build-dir or set ARSHIM_BUILD_DIR)")


def command(flavor, config, args, build):
    """One launch: the flavor's mpirun (oversubscribed ranks yield), the shim preloaded or not, cg_solver --json."""
    env = {}
    libs = []
    if config.startswith("arshim"):
        libs.append(os.path.join(build, "shim", f"libarshim-{flavor}.so"))
    if args.yield_helper and flavor == "mpich":
        libs.append(os.path.join(build, "test", "libarshim-test-yield.so"))
    if libs:
        env["LD_PRELOAD"] = ":".join(libs)
    if config in FORCED:
        env["ARSHIM_PATH"] = FORCED[config]
    cmd = launchers.mpirun(flavor, args.np) + launchers.env_args(flavor, env)
    cmd += [os.path.join(build, "examples", f"cg_solver-{flavor}"), "--n", str(args.n), "--iters", str(args.iters),
            "--tol", "1e-30", "--warmup", str(args.warmup), "--repeat", str(args.repeat), "--json"]
    if args.wrap:
        cmd = shlex.split(args.wrap.format(flavor=flavor, np=args.np)) + cmd
    return cmd


def run(cmd, timeout):
    out = launchers.run_benchmark(cmd, timeout)
    lines = [line for line in out.splitlines() if line.startswith('{"example":"cg_solver"')]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)}: no JSON line in\n{out[-2000:]}")
    result = json.loads(lines[-1])
    if not result.get("ok"):
        raise RuntimeError(f"{' '.join(cmd)}: the solver's own check failed: {result.get('failure')}")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mpi", default="mpich,openmpi", help="flavors, comma separated (default both)")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--n", type=int, default=32, help="grid points per dimension (default 32: small, latency-bound)")
    p.add_argument("--iters", type=int, default=300, help="CG iterations per solve (default 300; tolerance 1e-30, "
                                                          "so every solve runs them all)")
    p.add_argument("--warmup", type=int, default=50, help="untimed warm-up iterations (default 50)")
    p.add_argument("--repeat", type=int, default=5, help="timed solves per launch; the launch's median (default 5)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--yield-helper", action="store_true", help="preload the test-only yield helper under MPICH "
                                                                "(more ranks than cores)")
    p.add_argument("--wrap", default="", help="prefix for every mpirun command ({flavor}, {np} substituted), e.g. "
                                              "\"arshim cluster wrap --ppn 2 --\"")
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help=f"configurations, in round order (default {','.join(CONFIGS)}; also {', '.join(FORCED)}); "
                        "native is needed for the ratios")
    p.add_argument("--build-dir", help="meson build directory")
    p.add_argument("--timeout", type=int, default=600, help="seconds per launch")
    args = p.parse_args()
    build = find_build(args.build_dir)
    flavors = [f for f in args.mpi.split(",") if f]
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS and c not in FORCED]
    if unknown or "native" not in configs:
        p.error(f"--configs: {', '.join(unknown) or 'native missing'} (allowed: {', '.join(CONFIGS + tuple(FORCED))}; "
                "native is required)")
    times = {(f, c): [] for f in flavors for c in configs}
    last = {}
    for r in range(args.rounds):
        for flavor in flavors:
            for config in configs:
                result = run(command(flavor, config, args, build), args.timeout)
                times[(flavor, config)].append(result["time_per_iter_us"]["median"])
                last[(flavor, config)] = result
        print(f"bench_cg: round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"cg_solver n={args.n}, np {args.np}, {args.iters} iterations per solve, median of {args.rounds} rounds "
          f"[fastest-slowest round]; ratio = time / native's")
    for flavor in flavors:
        native = statistics.median(times[(flavor, "native")])
        for config in configs:
            t = times[(flavor, config)]
            res = last[(flavor, config)]
            same = res["history_digest"] == last[(flavor, "native")]["history_digest"]
            print(f"{flavor:8} {config:15} {statistics.median(t):9.2f} us/iter [{min(t):.2f}-{max(t):.2f}] "
                  f"ratio {statistics.median(t) / native:.3f}  allreduce {res['allreduce_us_per_iter']['median']:.2f} "
                  f"us/iter  residual {res['relative_residual']:.3e}  history {'= native' if same else '!= native'}")


if __name__ == "__main__":
    main()
