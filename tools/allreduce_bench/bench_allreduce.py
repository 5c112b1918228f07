#!/usr/bin/env python3
"""arshim bench allreduce: native MPI_Allreduce vs ARShim's paths vs peer algorithms, in one run.

Every configuration runs the same ordinary MPI program (bench_allreduce-<flavor>) under mpirun; configurations are
interleaved round by round so that machine noise hits them alike, and each figure is the median over rounds of the
per-run median. Ratios are speed-ups over native (> 1 means faster than native).

With --paired every run also times the library's own allreduce (PMPI_Allreduce) beside MPI_Allreduce, repetition
by repetition in alternating order, and reports the median of their ratios: a speed-up measured within one launch,
which this machine's drift over seconds (2-3x, measured within one launch) does not reach. The native
configuration's paired figure is then the pairing's own control (both calls are the library's).

  arshim bench allreduce [--mpi mpich,openmpi] [--np 2] [--min 8] [--max 256M] [--rounds 3] [--configs ...]
"""
import argparse
import csv
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
BAD_POLICY = os.path.join(HERE, "bad_policy.toml")
sys.path.insert(0, os.path.dirname(HERE))  # tools/: the arshim package
from arshim import ToolError, files, launchers, options  # noqa: E402
from arshim.flavors import FLAVORS  # noqa: E402
from arshim.sizes import size_text as human  # noqa: E402
from arshim.text import escape  # noqa: E402

PROG = "arshim bench allreduce"
# Option ranges (checked before anything runs). Message sizes: the program allocates two buffers of --max per rank
# and counts elements in an int.
MAX_BYTES = 256 << 20
MAX_RANKS = 1 << 16


class BenchError(ToolError):
    """A bad option or setup, found before any run: one line `arshim bench allreduce: ...`, exit status 2."""


def build_dir(explicit):
    """The meson build directory holding shim/ and tools/allreduce_bench/ (argument, env, or usual places)."""
    if explicit and not os.path.isdir(explicit):
        raise BenchError(f"--build-dir {escape(explicit)}: not a directory")
    candidates = [explicit] if explicit else []
    candidates += [os.environ.get("ARSHIM_BUILD_DIR"), os.path.join(HERE, "..", ".."),
                   os.path.join(HERE, "..", "..", "build")]
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "tools", "allreduce_bench", "bench_allreduce-mpich")) or \
           c and os.path.isfile(os.path.join(c, "tools", "allreduce_bench", "bench_allreduce-openmpi")):
            return os.path.realpath(c)
    raise BenchError(f"{'--build-dir ' + escape(explicit) + ': not a' if explicit else 'cannot find the'} build "
                     "directory with tools/allreduce_bench/bench_allreduce-<flavor> (pass --build-dir or set "
                     "ARSHIM_BUILD_DIR)")


def configurations(flavor, np_, names, compare_lib=""):
    """name -> (preload shim?, environment, extra mpirun arguments). Peers are the libraries' own alternatives.
    `preload` is True for this build's library or the path of another library to compare with (--compare-lib)."""
    def segments(size, window):
        return (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": size, "ARSHIM_WINDOW": str(window)}, [])

    all_configs = {
        "native": (False, {}, []),
        # The same as native, run as a separate configuration: its "speed-up" is the measurement's noise floor.
        "native-control": (False, {}, []),
        "arshim-default": (True, {}, []),
        # The library's own allreduce through ARShim: for a (type, op) the library computes wrong, with ARShim's
        # op handed to it (the route around a known library bug, --type uint8/unsigned/ulong).
        "arshim-native": (True, {"ARSHIM_PATH": "native"}, []),
        # The default policy with the argument check on every call (docs/verify.md).
        "arshim-check-args": (True, {"ARSHIM_CHECK_ARGS": "1"}, []),
        # Online tuning (docs/tuning.md): the default is guard; off, online; and a deliberately bad policy, alone and
        # corrected by online tuning (the recovery benchmark).
        "arshim-tune-off": (True, {"ARSHIM_TUNE": "off"}, []),
        "arshim-online": (True, {"ARSHIM_TUNE": "online"}, []),
        "bad-policy": (True, {"ARSHIM_POLICY": BAD_POLICY, "ARSHIM_TUNE": "off"}, []),
        # Another build of ARShim in the same run (--compare-lib: an older version): its library route, twice (the
        # second is the old-vs-old control: the noise between two identical configurations), and its default.
        **({"compare-native": (compare_lib.format(flavor=flavor), {"ARSHIM_PATH": "native"}, []),
            "compare-native-control": (compare_lib.format(flavor=flavor), {"ARSHIM_PATH": "native"}, []),
            "compare-default": (compare_lib.format(flavor=flavor), {}, [])} if compare_lib else {}),
        "bad-policy-online": (True, {"ARSHIM_POLICY": BAD_POLICY, "ARSHIM_TUNE": "online"}, []),
        # A table from `arshim tune` (its path in ARSHIM_BENCH_TUNED_POLICY), ahead of the built-in one, no online
        # tuning: what the tuned table decides.
        "arshim-tuned": (True, {"ARSHIM_POLICY": os.environ.get("ARSHIM_BENCH_TUNED_POLICY", ""),
                                "ARSHIM_POLICY_MODE": "prepend", "ARSHIM_TUNE": "off"}, []),
        # Reproducible mode (docs/reproducible.md): float sums in rank order; exact (any number of ranks).
        "arshim-reproducible": (True, {"ARSHIM_REPRODUCIBLE": "layout"}, []),
        "arshim-any-np": (True, {"ARSHIM_REPRODUCIBLE": "any-np"}, []),
        # The default policy with every served call verified (the cost of a verified call; docs/verify.md).
        "arshim-verify-all": (True, {"ARSHIM_VERIFY": "1000000000"}, []),
        "pipelined-64K": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "64K",
                                 "ARSHIM_WINDOW": "16"}, []),
        "pipelined-32K": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "32K",
                                 "ARSHIM_WINDOW": "16"}, []),
        # The segment sweep of docs/cluster.md "Each library's own small segments" (guard's small segments: MPICH
        # 32K-w8, Open MPI 64K-w4).
        "pipelined-16K": segments("16K", 16),
        "pipelined-32K-w8": segments("32K", 8),
        "pipelined-32K-w32": segments("32K", 32),
        "pipelined-64K-w4": segments("64K", 4),
        "pipelined-64K-w8": segments("64K", 8),
        "pipelined-64K-w32": segments("64K", 32),
        "pipelined-1M-simd": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "1M", "ARSHIM_WINDOW": "8",
                                     "ARSHIM_KERNEL_FOR_MPI": "simd"}, []),
        "pipelined-256K": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "256K",
                                  "ARSHIM_WINDOW": "8"}, []),
        "pipelined-1M": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "1M", "ARSHIM_WINDOW": "8"}, []),
        "pipelined-4M": (True, {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": "4M", "ARSHIM_WINDOW": "4"}, []),
        "multileader-l1": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1"}, []),
        # The latency path (calls up to 4 KiB; larger ones go to the library: docs/paths.md "The latency path").
        "latency": (True, {"ARSHIM_PATH": "latency"}, []),
        # Its inter-node step forced to the library's allreduce (the plain `latency` takes auto: ARShim's recursive
        # doubling, docs/scale.md "Small calls at hundreds of nodes")
        "latency-library": (True, {"ARSHIM_PATH": "latency", "ARSHIM_INTERNODE": "library"}, []),
        "multileader-l2": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "2"}, []),
        "multileader-lppn": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": str(np_)}, []),
        "multileader-l2-k4": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "2",
                                     "ARSHIM_PIPELINE_K": "4"}, []),
        "multileader-l1-k4": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1",
                                     "ARSHIM_PIPELINE_K": "4"}, []),
        "multileader-l1-k16": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1",
                                      "ARSHIM_PIPELINE_K": "16"}, []),
        # The inter-node step forced either way (ARSHIM_INTERNODE; the plain multileader-* configurations take auto)
        "multileader-l1-ring": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1", "ARSHIM_INTERNODE": "ring"}, []),
        "multileader-l2-ring": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "2", "ARSHIM_INTERNODE": "ring"}, []),
        "multileader-l1-library": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1",
                                          "ARSHIM_INTERNODE": "library"}, []),
        "multileader-l2-library": (True, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "2",
                                          "ARSHIM_INTERNODE": "library"}, []),
    }
    if flavor == "openmpi":
        all_configs["peer-ompi-han"] = (False, {}, ["--mca", "coll_han_priority", "100"])
    else:
        # MPICH 4.0.2 has no multi-leader composition: MPIR_CVAR_ALLREDUCE_COMPOSITION does not exist in it (unknown
        # CVARs are silently ignored), and its ch4 compositions are alpha (node reduce, one leader per node across
        # nodes, node bcast: the default on several nodes), beta (flat) and gamma (one node). Its MPIR-level
        # algorithms are the peers it does have: "smp" (hierarchical, one leader) and reduce_scatter_allgather
        # (Rabenseifner, the bandwidth-optimal flat one). Valid values: nb, smp, recursive_doubling,
        # reduce_scatter_allgather (an invalid one aborts MPI_Init).
        all_configs["peer-mpich-smp"] = (False, {"MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0",
                                                 "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "smp"}, [])
        all_configs["peer-mpich-rsag"] = (False, {"MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE": "0",
                                                  "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "reduce_scatter_allgather"},
                                          [])
    if not names:
        return all_configs
    # Any other segment size and window as pipelined-<size>-w<window> (e.g. pipelined-48K-w6): sweeps need no edit.
    for n in names:
        m = re.fullmatch(r"pipelined-([1-9][0-9]*[KM]?)-w([1-9][0-9]?)", n)
        if m and n not in all_configs:
            all_configs[n] = segments(m.group(1), int(m.group(2)))
    unknown = [n for n in names if n not in all_configs and not re.fullmatch(r"peer-[a-z0-9-]+", n)]
    if unknown:
        raise BenchError(f"--configs: unknown configuration {escape(', '.join(unknown), 120)} for {flavor}; "
                         f"allowed: {', '.join(all_configs)}, pipelined-<size>-w<window> (e.g. pipelined-48K-w6)")
    return {n: all_configs[n] for n in names if n in all_configs}


def link_bound_us(size, nodes, link_gbit):
    """The bandwidth lower bound of any allreduce: every node sends and receives 2(N-1)/N * n bytes over its link."""
    return 2 * (nodes - 1) / nodes * size / (link_gbit * 1e9 / 8) * 1e6 if nodes > 1 else 0.0


def print_bound_table(flavor, args, configs, sizes, results):
    """--bound: time over the bound per configuration, the rounds' range as the noise, and the best of ARShim."""
    print(f"\n{flavor}, {args.np} ranks, {args.nodes} nodes, {args.link_gbit:g} Gbit/s links: time / bandwidth bound "
          f"(median of {args.rounds} rounds [fastest-slowest round])")
    print(f"{'bytes':>8} {'bound_us':>9}" + "".join(f" {n:>20}" for n in configs) + f" {'best_arshim':>24}")
    for size in sizes:
        bound = link_bound_us(size, args.nodes, args.link_gbit)
        line = f"{human(size):>8} {bound:>9.1f}"
        best = None
        for n in configs:
            vals = results[(flavor, n)].get(size)
            if not vals or bound <= 0:
                line += f" {'-':>20}"
                continue
            r = statistics.median(vals) / bound
            line += f" {f'{r:.2f} [{min(vals) / bound:.2f}-{max(vals) / bound:.2f}]':>20}"
            if n not in ("native", "native-control") and not n.startswith("peer-") and (best is None or r < best[1]):
                best = (n, r)
        line += f" {(best[0] + f' {best[1]:.2f}') if best else '-':>24}"
        print(line)


def command(flavor, np_, build, preload, env, extra, args):
    program = os.path.join(build, "tools", "allreduce_bench", f"bench_allreduce-{flavor}")
    prog_args = ["--min", str(args.min), "--max", str(args.max), "--factor", str(args.factor), "--reps",
                 str(args.reps), "--batch", str(args.batch), "--budget", str(args.budget), "--type", args.type,
                 "--op", args.op] + \
                (["--in-place"] if args.in_place else []) + (["--paired"] if args.paired else [])
    libs = []
    if isinstance(preload, str):
        libs.append(preload)
    elif preload:
        libs.append(os.path.join(build, "shim", f"libarshim-{flavor}.so"))
    if args.yield_helper and flavor == "mpich":
        libs.append(os.path.join(build, "test", "libarshim-test-yield.so"))
    env = dict(env)
    if libs:
        env["LD_PRELOAD"] = ":".join(libs)
    # Pinned ranks when they fit the cores: unpinned, two busy-polling ranks on a 2-core machine sometimes share a
    # core for a whole run, which made single runs 2x slower at random (measured: 107 vs 219 us at 512 KiB, same
    # configuration, back to back). Oversubscribed or wrapped (emulated cluster) runs stay unpinned.
    bind = args.bind
    if bind == "auto":
        bind = "core" if np_ <= (os.cpu_count() or 1) and not args.oversubscribe and not args.wrap else "none"
    if flavor == "openmpi":
        cmd = ["mpirun.openmpi", "-n", str(np_), "--bind-to", bind]
        if not args.no_local_flags:
            cmd += ["--mca", "btl", "self,vader"]
        if args.oversubscribe:
            cmd += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
    else:
        cmd = ["mpirun.mpich", "-n", str(np_), "-bind-to", bind]
    cmd += launchers.env_args(flavor, env) + extra + [program] + prog_args
    if args.wrap:
        cmd = shlex.split(args.wrap.format(flavor=flavor, np=np_)) + cmd
    return cmd


def run_once(cmd, timeout):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=launchers.benchmark_environment())
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    rows = {}  # bytes -> (median_us, paired speed-up or None, the library's median_us in the pairs or None)
    body = proc.stdout[proc.stdout.index("bytes,"):]
    for row in csv.DictReader(io.StringIO(body)):
        paired = row.get("paired_speedup")
        rows[int(row["bytes"])] = (float(row["median_us"]), float(paired) if paired else None,
                                   float(row["library_median_us"]) if paired else None)
    return rows


def print_paired_table(flavor, args, configs, sizes, paired):
    """--paired: each configuration's speed-up over the library's call in the same launch."""
    print(f"\n{flavor}, {args.np} ranks: paired speed-up over the library's own call in the same launch (median of "
          f"the per-repetition ratios; median of {args.rounds} rounds [lowest-highest round]; native: the pairing's "
          f"control)")
    print(f"{'bytes':>8}" + "".join(f" {n:>24}" for n in configs))
    for size in sizes:
        line = f"{human(size):>8}"
        for n in configs:
            vals = paired.get((flavor, n), {}).get(size)
            cell = f"{statistics.median(vals):.2f}x [{min(vals):.2f}-{max(vals):.2f}]" if vals else "-"
            line += f" {cell:>24}"
        print(line)


def paired_fields(vals):
    """A figure record's paired columns (empty when the run was not --paired)."""
    return {"paired_speedup": round(statistics.median(vals), 4) if vals else None,
            "paired_round": ";".join(f"{v:.4f}" for v in vals) if vals else None}


def check_setup(args):
    """What the options name on this machine, before any run: the build's programs for each flavor, the launchers,
    --compare-lib's libraries, --wrap's template and the configurations. Returns (build directory, flavors,
    {flavor: configurations})."""
    build = build_dir(args.build_dir)
    built = [f for f in FLAVORS
             if os.path.isfile(os.path.join(build, "tools", "allreduce_bench", f"bench_allreduce-{f}"))]
    for flavor in args.mpi:
        if flavor not in built:
            raise BenchError(f"--mpi {flavor}: {escape(build)} has no bench_allreduce-{flavor} (ARShim built without "
                             f"{flavor}); allowed here: {', '.join(built)}")
        if not shutil.which(f"mpirun.{flavor}"):
            raise BenchError(f"--mpi {flavor}: mpirun.{flavor} not found on PATH")
        if args.compare_lib:
            try:
                lib = args.compare_lib.format(flavor=flavor)
            except (KeyError, IndexError, ValueError) as e:
                raise BenchError(f"--compare-lib {escape(args.compare_lib)}: not a path with {{flavor}} "
                                 f"({escape(e)})") from None
            if not os.path.isfile(lib):
                raise BenchError(f"--compare-lib {escape(args.compare_lib)}: {escape(lib)}: no such file")
        if args.wrap:
            try:
                words = shlex.split(args.wrap.format(flavor=flavor, np=args.np))
            except (KeyError, IndexError, ValueError) as e:
                raise BenchError(f"--wrap {escape(args.wrap)}: not a command prefix with {{flavor}} and {{np}} "
                                 f"({escape(e)})") from None
            if not words:
                raise BenchError(f"--wrap {escape(args.wrap)}: no command")
    names = [n for n in (n.strip() for n in args.configs.split(",")) if n]
    plan = {f: configurations(f, args.np, names, args.compare_lib) for f in args.mpi}
    if not any(plan.values()):
        raise BenchError(f"--configs {escape(args.configs, 120)}: no configuration runs under {', '.join(args.mpi)}")
    return build, args.mpi, plan


def parse_args(argv=None):
    p = options.Parser(prog=PROG, description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--mpi", default="mpich,openmpi", type=options.names(FLAVORS, "MPI flavor"),
                   help="flavors, comma separated (default: both)")
    p.add_argument("--np", type=options.whole(1, MAX_RANKS), default=2, help="ranks (default 2)")
    p.add_argument("--min", default="8", type=options.size(1, MAX_BYTES), help="smallest message, bytes (default 8)")
    p.add_argument("--max", default="64M", type=options.size(1, MAX_BYTES),
                   help=f"largest message (default 64M; up to {human(MAX_BYTES)})")
    p.add_argument("--factor", type=options.whole(2, 1024), default=4, help="size step factor (default 4)")
    p.add_argument("--reps", type=options.whole(1, 1000000), default=100,
                   help="most repetitions per size and run (default 100; every size gets at least 5)")
    p.add_argument("--batch", type=options.whole(1, 1000000), default=1,
                   help="calls per timed repetition (default 1: each call timed alone from a barrier; B > 1: B "
                        "back-to-back calls after the barrier, time per call, as the OSU micro-benchmarks time a loop)")
    p.add_argument("--paired", action="store_true",
                   help="also time the library's own call (PMPI_Allreduce) in every run, repetition by repetition, "
                        "and report the median ratio: a speed-up that drift between launches cannot reach")
    p.add_argument("--budget", default="1G", type=options.size(1, 1 << 40),
                   help="bytes reduced per size and run, bounds repetitions (default 1G)")
    p.add_argument("--rounds", type=options.whole(1, 10000), default=3,
                   help="interleaved rounds; figures are medians over them")
    p.add_argument("--configs", default="", help="comma-separated configuration names (default: all)")
    p.add_argument("--in-place", action="store_true", help="MPI_IN_PLACE calls (Open MPI's libnbc trap)")
    p.add_argument("--type", default="float", choices=["float", "double", "int", "uint8", "unsigned", "ulong"],
                   help="element type (default float); uint8 SUM (Open MPI 4.1), unsigned MAX (MPICH 4.0), ulong MAX "
                        "(Open MPI 4.1.2-4.1.4) time the route ARShim takes around the library's known bugs")
    p.add_argument("--op", default="sum", choices=["sum", "max"], help="reduction (default sum)")
    p.add_argument("--oversubscribe", action="store_true", help="more ranks than cores: Open MPI yields")
    p.add_argument("--yield-helper", action="store_true",
                   help="preload the test-only yield helper under MPICH (oversubscribed runs)")
    p.add_argument("--bind", choices=("auto", "core", "none"), default="auto",
                   help="rank binding (auto: core when the ranks fit the cores and the run is not oversubscribed "
                        "or wrapped)")
    p.add_argument("--wrap", default="", help="prefix for every mpirun command ({flavor}, {np} substituted), e.g. "
                                              "a launcher that runs it on an emulated cluster")
    p.add_argument("--no-local-flags", action="store_true", help="do not force Open MPI's shared-memory btl")
    p.add_argument("--nodes", type=options.whole(1, MAX_RANKS), default=1,
                   help="nodes, for the link lower bound column")
    p.add_argument("--link-gbit", type=options.number(0, 1e6), default=0,
                   help="link speed in Gbit/s: adds the ring lower bound")
    p.add_argument("--bound", action="store_true",
                   help="also print every configuration's time over the link's bandwidth bound 2(N-1)/N*n/B "
                        "(median over rounds, [min-max] of the rounds as the noise); needs --nodes >= 2 and "
                        "--link-gbit (docs/cluster.md \"Where the time goes at the link bound\")")
    p.add_argument("--compare-lib", default="",
                   help="another ARShim library to run in the same rounds ({flavor} substituted), e.g. an older build's "
                        "build/shim/libarshim-{flavor}.so: configurations compare-native, compare-native-control and "
                        "compare-default")
    # Checked when parsed (options.output), not when the figures are written after minutes of runs.
    p.add_argument("--csv", type=options.output, help="write every figure to this CSV file")
    p.add_argument("--json", type=options.output, help="write the figures as JSON")
    p.add_argument("--build-dir", help="meson build directory (default: found next to this script)")
    p.add_argument("--timeout", type=options.whole(1, 7 * 86400), default=900, help="seconds per run")
    args = p.parse_args(argv)
    if args.min > args.max:
        p.error(f"--min {human(args.min)} --max {human(args.max)}: --min must be at most --max")
    if args.bound and (args.nodes < 2 or args.link_gbit <= 0):
        p.error("--bound needs --nodes N (N >= 2, the hosts the ranks span) and --link-gbit G (the link speed)")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        build, flavors, plan = check_setup(args)
    except ToolError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    results = {}  # (flavor, config) -> {bytes: [per-round medians]}
    paired = {}  # (flavor, config) -> {bytes: [per-round paired speed-ups]} (--paired)
    started = time.time()
    total_runs = args.rounds * sum(len(c) for c in plan.values())
    done = 0
    failed = 0
    for rnd in range(args.rounds):
        for flavor in flavors:
            for name, (preload, env, extra) in plan[flavor].items():
                cmd = command(flavor, args.np, build, preload, env, extra, args)
                done += 1
                print(f"[{done}/{total_runs}, {time.time() - started:.0f}s] round {rnd + 1} {flavor} {name}",
                      file=sys.stderr, flush=True)
                try:
                    rows = run_once(cmd, args.timeout)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
                    print(f"bench_allreduce: {flavor} {name} failed: {error}", file=sys.stderr)
                    failed += 1
                    continue
                for size, (us, speedup, _library_us) in rows.items():
                    results.setdefault((flavor, name), {}).setdefault(size, []).append(us)
                    if speedup is not None:
                        paired.setdefault((flavor, name), {}).setdefault(size, []).append(speedup)

    records = []
    for flavor in flavors:
        configs = [n for n in plan[flavor] if (flavor, n) in results]
        base = results.get((flavor, "native"), {})
        sizes = sorted({s for n in configs for s in results[(flavor, n)]})
        print(f"\n{flavor}, {args.np} ranks, {args.nodes} node(s): median time (us) and speed-up over native"
              + (f"; time per call in loops of {args.batch} calls" if args.batch > 1 else ""))
        header = f"{'bytes':>8}" + ("" if not args.link_gbit else f" {'bound_us':>9}")
        for n in configs:
            header += f" {n:>18}"
        header += f" {'best_arshim':>18}"
        print(header)
        for size in sizes:
            line = f"{human(size):>8}"
            bound = None
            if args.link_gbit:
                bound = link_bound_us(size, max(args.nodes, 1), args.link_gbit)
                line += f" {bound:>9.1f}"
            native = statistics.median(base[size]) if size in base else None
            best = None
            for n in configs:
                vals = results[(flavor, n)].get(size)
                if not vals:
                    line += f" {'-':>18}"
                    continue
                t = statistics.median(vals)
                ratio = native / t if native else None
                cell = (f"{t:.2f}" if t < 10 else f"{t:.1f}") + (f" ({ratio:.2f}x)" if ratio else "")
                line += f" {cell:>18}"
                if n not in ("native", "native-control") and not n.startswith("peer-") and ratio and (best is None or ratio > best[1]):
                    best = (n, ratio)
                records.append({"flavor": flavor, "np": args.np, "nodes": args.nodes, "config": n, "bytes": size,
                                "median_us": round(t, 3), "speedup_vs_native": round(ratio, 4) if ratio else None,
                                "rounds": len(vals), "lower_bound_us": round(bound, 3) if bound is not None else None,
                                "round_us": ";".join(f"{v:.3f}" for v in vals),
                                **paired_fields(paired.get((flavor, n), {}).get(size))})
            line += f" {(best[0] + f' {best[1]:.2f}x') if best else '-':>18}"
            print(line)
        if args.bound:
            print_bound_table(flavor, args, configs, sizes, results)
        if args.paired:
            print_paired_table(flavor, args, configs, sizes, paired)
    # Whole files or nothing, never through a symlink planted where they go (arshim/files.py write_file).
    try:
        if args.csv:
            text = io.StringIO(newline="")
            w = csv.DictWriter(text, fieldnames=list(records[0].keys()) if records else ["flavor"])
            w.writeheader()
            w.writerows(records)
            files.write_file(args.csv, text.getvalue())
        if args.json:
            files.write_file(args.json, json.dumps(records, indent=1) + "\n")
    except ToolError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if failed:
        print(f"bench_allreduce: {failed} of {total_runs} runs failed (above); their figures are missing",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
