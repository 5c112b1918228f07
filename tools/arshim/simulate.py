"""arshim simulate: allreduce times of simulated clusters, with and without ARShim, under SimGrid's SMPI
(docs/scale.md).

  arshim simulate --nodes 16 --ppn 4 [--link-gbit 100] [--latency-us 1] [--topology flat|fat-tree|torus]
                  [--platform FILE] [--sizes 8,64K,4M] [--configs ...] [--out simulate.csv] [--resume]

Generates a SimGrid platform (or takes --platform) and a hostfile of --ppn ranks on each of --nodes hosts, then runs
the probe (tools/simulate/probe.c) under smpirun once per configuration, over all --sizes:
  native-mpich, native-ompi       SMPI's own allreduce under its MPICH or Open MPI selector, no ARShim;
  arshim-default-mpich, -ompi     ARShim (libarshim-smpi.a) with its built-in policy over each selector;
  arshim-<path>-mpich, -ompi      ARShim with ARSHIM_PATH=<path> (pipelined, multileader, reproducible).
Every row of the CSV is nodes,ppn,bytes,config,sim_us,model_us,bound_us: sim_us the simulated time per call (the
maximum over ranks), bound_us the link bound 2 (n-1)/n x bytes / bandwidth for n > 1 nodes (empty on one node).
model_us is left empty: ARShim's cost model predicts only from a tuned table's machine parameters ([model]), which a
generated platform does not have yet. Progress goes to stderr; --resume skips the (nodes, ppn, bytes, config) rows
already in the CSV. Bad input is one line on stderr and exit status 2.
"""
import argparse
import csv
import io
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

from . import ToolError, files
from .sizes import parse_size, size_text

TOPOLOGIES = ("flat", "fat-tree", "torus")
SELECTORS = ("mpich", "ompi")
FORCED_PATHS = ("pipelined", "multileader", "reproducible")
CONFIGS = tuple(f"native-{s}" for s in SELECTORS) + tuple(f"arshim-default-{s}" for s in SELECTORS) + \
    tuple(f"arshim-{p}-{s}" for p in FORCED_PATHS for s in SELECTORS)
COLUMNS = ("nodes", "ppn", "bytes", "config", "sim_us", "model_us", "bound_us")
MAX_NODES = 1 << 16
MAX_PPN = 1024
MAX_CSV_BYTES = 64 << 20
CORE_SPEED = "10Gf"  # per core; SMPI's default smpi/host-speed makes host compute almost free (docs/scale.md)
# Each rank's copy of the program needs its own static TLS block (ARShim's initial-exec thread_locals).
TUNABLES = "glibc.rtld.optional_static_tls=2097152"


class SimulateError(ToolError):
    pass


def positive_int(name, text, limit):
    try:
        value = int(text)
    except ValueError:
        raise SimulateError(f"{name} {text!r}: not a whole number") from None
    if value < 1 or value > limit:
        raise SimulateError(f"{name} {value}: must be between 1 and {limit}")
    return value


def positive_float(name, text):
    try:
        value = float(text)
    except ValueError:
        raise SimulateError(f"{name} {text!r}: not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise SimulateError(f"{name} {text}: must be a positive number")
    return value


def fat_tree_parameters(nodes):
    """SimGrid FAT_TREE topo_parameters for `nodes` hosts, non-blocking: one level (one switch) up to 16 hosts,
    else two: leaves of k hosts (the largest divisor of nodes up to 16, at least 2 leaves), k spines, one link each
    way. "levels;children per switch;parents per node;links per parent"."""
    if nodes <= 16:
        return f"1;{nodes};1;1"
    k = max(d for d in range(1, 17) if nodes % d == 0)
    leaves = nodes // k
    return f"2;{k},{leaves};1,{k};1,1"


def torus_dimensions(nodes):
    """Torus dimensions for `nodes` hosts: as cubic as the factors allow (3 dimensions from 64 hosts, 2 below),
    product = nodes. 16 -> 4,4; 64 -> 4,4,4; 12 -> 3,4; a prime p -> p."""
    if nodes < 4:
        return str(nodes)
    dims = 3 if nodes >= 64 else 2
    best = None
    def search(left, parts, start):
        nonlocal best
        if len(parts) == dims - 1:
            if left >= start:
                cand = parts + [left]
                if best is None or max(cand) - min(cand) < max(best) - min(best):
                    best = cand
            return
        for d in range(start, left + 1):
            if left % d == 0:
                search(left // d, parts + [d], d)
    search(nodes, [], 2 if nodes > 1 else 1)
    if best is None:
        best = [nodes]
    return ",".join(str(d) for d in best)


def platform_xml(nodes, ppn, link_gbit, latency_us, topology):
    """A SimGrid platform (version 4.1): `nodes` hosts named node-0..node-<n-1> of `ppn` cores each, every host
    linked at `link_gbit` Gbit/s with `latency_us` latency, in the given topology; messages within a host take a
    loopback link (20 GB/s, 0.2 us)."""
    if topology not in TOPOLOGIES:
        raise SimulateError(f"--topology {topology!r}: unknown; allowed: {', '.join(TOPOLOGIES)}")
    if nodes < 1 or ppn < 1:
        raise SimulateError(f"{nodes} nodes x {ppn} ranks per node: both must be at least 1")
    bw = f"{link_gbit / 8:g}GBps"
    lat = f"{latency_us:g}us"
    common = (f'prefix="node-" suffix="" radical="0-{nodes - 1}" speed="{CORE_SPEED}" core="{ppn}" bw="{bw}" '
              f'lat="{lat}" loopback_bw="20GBps" loopback_lat="0.2us"')
    if topology == "flat":
        # One switch: each host's private link, and a backbone as wide as every link at once (non-blocking).
        extra = f'bb_bw="{link_gbit * nodes / 8:g}GBps" bb_lat="0us"'
        what = "one switch, non-blocking"
    elif topology == "fat-tree":
        extra = f'topology="FAT_TREE" topo_parameters="{fat_tree_parameters(nodes)}"'
        what = f"fat tree {fat_tree_parameters(nodes)}"
    else:
        extra = f'topology="TORUS" topo_parameters="{torus_dimensions(nodes)}"'
        what = f"torus {torus_dimensions(nodes)}"
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  <!-- arshim simulate: {nodes} hosts x {ppn} cores, {link_gbit:g} Gbit/s, {latency_us:g} us, {what} -->\n"
            f'  <cluster id="sim" {common}\n'
            f"           {extra}/>\n"
            "</platform>\n")


def hostfile_text(nodes, ppn):
    return "".join(f"node-{i}:{ppn}\n" for i in range(nodes))


def bound_us(nodes, nbytes, link_gbit):
    """The link bound of an allreduce across `nodes` hosts (every byte in and out of each host's link
    2 (n-1)/n times), in microseconds; None on one host."""
    if nodes <= 1:
        return None
    return 2.0 * (nodes - 1) / nodes * nbytes / (link_gbit * 1e9 / 8) * 1e6


def parse_sizes(text):
    sizes = []
    for part in text.split(","):
        try:
            sizes.append(parse_size(part))
        except ValueError as e:
            raise SimulateError(f"--sizes: {e}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise SimulateError("--sizes: give sizes of at least 1 byte, e.g. 8,64K,4M")
    return sizes


def append_rows(path):
    """The CSV opened to add rows, never through a symlink planted at its name (O_NOFOLLOW) and only when it is a
    regular file (not a FIFO or a device that would block or swallow the rows)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise SimulateError(f"{files.escape(path)}: cannot append ({e.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SimulateError(f"{files.escape(path)}: not a regular file")
    return os.fdopen(fd, "a", newline="")


def parse_configs(text):
    configs = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        raise SimulateError(f"--configs: unknown {', '.join(unknown) or '(none given)'}; allowed: {', '.join(CONFIGS)}")
    return configs


def read_done(path):
    """The (nodes, ppn, bytes, config) keys already in the CSV (--resume); a file that is not our CSV is refused."""
    if not os.path.exists(path):
        return set()
    try:
        text = files.read_text(path, MAX_CSV_BYTES)
    except files.InputError as e:
        raise SimulateError(f"--resume: {e}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise SimulateError(f"--resume: {path} is not a CSV of arshim simulate (its header is not {','.join(COLUMNS)})")
    return {tuple(r[:4]) for r in rows[1:] if len(r) == len(COLUMNS)}


def run_config(args, config, sizes, platform, hostfile, workdir):
    """Runs the probe once for `config` over `sizes`: bytes -> simulated us per call."""
    parts = config.split("-")
    selector = parts[-1]
    probe = args.probe_native if parts[0] == "native" else args.probe_arshim
    if not probe or not os.path.isfile(probe):
        raise SimulateError(f"no probe program for {config} ({probe or 'not built'}): build ARShim with -Dsmpi "
                            "(meson compile -C build) and run `arshim simulate` from the build or installation")
    probe = os.path.abspath(probe)  # smpirun runs in the work directory
    env = dict(os.environ, TMPDIR=workdir, GLIBC_TUNABLES=TUNABLES)
    for name in [n for n in env if n.startswith("ARSHIM_")]:
        del env[name]
    if parts[0] == "arshim" and parts[1] != "default":
        env["ARSHIM_PATH"] = parts[1]
    np = args.nodes * args.ppn
    command = [args.smpirun, "-np", str(np), "-platform", platform, "-hostfile", hostfile,
               f"--cfg=smpi/coll-selector:{selector}", "--log=root.thres:critical", probe,
               "--iterations", str(args.iterations)] + [str(s) for s in sizes]
    try:
        done = subprocess.run(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise SimulateError(f"{config}: the simulation took longer than --timeout {args.timeout} s") from None
    except OSError as e:
        raise SimulateError(f"{args.smpirun}: cannot run ({e.strerror})") from None
    times = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == "probe":
            times[int(fields[1])] = float(fields[2])
    if done.returncode != 0 or len(times) != len(sizes):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SimulateError(f"{config}: smpirun exited with status {done.returncode} after {len(times)} of "
                            f"{len(sizes)} sizes ({last[:200]})")
    return times


def build_parser():
    parser = argparse.ArgumentParser(prog="arshim simulate", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", required=True, help="simulated hosts")
    parser.add_argument("--ppn", default="1", help="ranks (and cores) per host (default 1)")
    parser.add_argument("--link-gbit", default="100", help="each host's link, Gbit/s (default 100)")
    parser.add_argument("--latency-us", default="1", help="each link's latency, microseconds (default 1)")
    parser.add_argument("--topology", default="flat", help="flat (one switch), fat-tree or torus (default flat)")
    parser.add_argument("--platform", help="a SimGrid platform file to use instead (hosts node-0, node-1, ...)")
    parser.add_argument("--sizes", default="8,64K,4M", help="message sizes (default 8,64K,4M)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations (default: all)")
    parser.add_argument("--iterations", default="5", help="timed calls per size (default 5)")
    parser.add_argument("--out", default="simulate.csv", help="the CSV (default simulate.csv)")
    parser.add_argument("--resume", action="store_true", help="skip the rows already in --out")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per simulation (default 3600)")
    parser.add_argument("--smpirun", default=None, help="smpirun to use (default: the one on PATH)")
    parser.add_argument("--keep", action="store_true", help="keep the generated platform and hostfile")
    parser.add_argument("--probe-native", help=argparse.SUPPRESS)
    parser.add_argument("--probe-arshim", help=argparse.SUPPRESS)
    return parser


def main(argv):
    args = build_parser().parse_args(argv)
    try:
        return simulate(args)
    except ToolError as e:
        print(f"arshim simulate: {e}", file=sys.stderr)
        return 2


def simulate(args):
    args.nodes = positive_int("--nodes", args.nodes, MAX_NODES)
    args.ppn = positive_int("--ppn", args.ppn, MAX_PPN)
    args.iterations = positive_int("--iterations", args.iterations, 1 << 20)
    link_gbit = positive_float("--link-gbit", args.link_gbit)
    latency_us = positive_float("--latency-us", args.latency_us)
    if args.topology not in TOPOLOGIES:
        raise SimulateError(f"--topology {args.topology!r}: unknown; allowed: {', '.join(TOPOLOGIES)}")
    sizes = parse_sizes(args.sizes)
    configs = parse_configs(args.configs)
    smpirun = args.smpirun or shutil.which("smpirun")
    if not smpirun or not os.path.isfile(smpirun) or not os.access(smpirun, os.X_OK):
        raise SimulateError(f"smpirun {'(' + args.smpirun + ') ' if args.smpirun else ''}not found: install "
                            "SimGrid (Debian: apt-get install libsimgrid-dev) or name it with --smpirun")
    args.smpirun = smpirun
    if args.platform:
        try:
            files.read_text(args.platform, 16 << 20)
        except files.InputError as e:
            raise SimulateError(f"--platform {e}") from None
    done = read_done(args.out) if args.resume else set()
    if not args.resume and os.path.exists(args.out):
        raise SimulateError(f"{args.out} exists: pass --resume to add to it, or another --out")
    todo = [(c, [s for s in sizes if (str(args.nodes), str(args.ppn), str(s), c) not in done]) for c in configs]
    todo = [(c, s) for c, s in todo if s]
    workdir = tempfile.mkdtemp(prefix="arshim-simulate.")
    try:
        platform = os.path.abspath(args.platform) if args.platform else os.path.join(workdir, "platform.xml")
        if not args.platform:
            files.write_file(platform, platform_xml(args.nodes, args.ppn, link_gbit, latency_us, args.topology))
        hostfile = os.path.join(workdir, "hosts.txt")
        files.write_file(hostfile, hostfile_text(args.nodes, args.ppn))
        if not os.path.exists(args.out):
            files.write_file(args.out, ",".join(COLUMNS) + "\n")
        skipped = len(configs) * len(sizes) - sum(len(s) for _, s in todo)
        print(f"arshim simulate: {args.nodes} nodes x {args.ppn} ppn, {len(todo)} simulations to run"
              + (f", {skipped} rows already in {args.out}" if skipped else ""), file=sys.stderr)
        for index, (config, config_sizes) in enumerate(todo, 1):
            started = time.monotonic()
            times = run_config(args, config, config_sizes, platform, hostfile, workdir)
            with append_rows(args.out) as f:
                writer = csv.writer(f)
                for s in config_sizes:
                    bound = bound_us(args.nodes, s, link_gbit)
                    writer.writerow([args.nodes, args.ppn, s, config, f"{times[s]:.3f}", "",
                                     "" if bound is None else f"{bound:.3f}"])
            print(f"arshim simulate: [{index}/{len(todo)}] {config}: "
                  + ", ".join(f"{size_text(s)} {times[s]:.1f} us" for s in config_sizes)
                  + f" ({time.monotonic() - started:.1f} s)", file=sys.stderr)
        if args.keep:
            print(f"arshim simulate: platform and hostfile kept in {workdir}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
