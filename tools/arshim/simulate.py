"""arshim simulate: allreduce times of simulated clusters, with and without ARShim, under SimGrid's SMPI
(docs/scale.md).

  arshim simulate --nodes 16 --ppn 4 [--link-gbit 100] [--latency-us 1] [--topology flat|fat-tree|torus]
                  [--bandwidth-efficiency 1] [--loopback-gbytes 20] [--loopback-latency-us 0.2] [--preset rig]
                  [--network smpi|ideal|FILE] [--platform FILE] [--sizes 8,64K,4M] [--configs ...]
                  [--policy TUNED.toml] [--model-from auto|platform|policy] [--out simulate.csv] [--resume]

Generates a SimGrid platform (or takes --platform) and a hostfile of --ppn ranks on each of --nodes hosts, then runs
the probe (tools/simulate/probe.c) under smpirun once per configuration, over all --sizes:
  native-mpich, native-ompi       the library's own allreduce, no ARShim: per size, the SMPI algorithm that stands
                                  for what MPICH 4.0.2 runs (forced, --cfg=smpi/allreduce:<algorithm>), and SMPI's
                                  Open MPI selector (Open MPI 4.1's fixed rules; recursive doubling forced where
                                  Open MPI falls back to it) (library_algorithms.py; the CSV's algorithm column);
  arshim-default-mpich, -ompi     ARShim (libarshim-smpi.a) with its built-in policy over each selector;
  arshim-<path>-mpich, -ompi      ARShim with ARSHIM_PATH=<path> (pipelined, multileader, reproducible);
  candidates-mpich, -ompi         arshim tune's candidates of the layout, each forced (arshim-<option>-<sel>);
  arshim-multileader-l<k>-<sel>   the multi-leader path with k leaders, k a power of two up to the ppn (and 64);
  arshim-tuned-mpich, -ompi       ARShim with the --policy table before its built-in rules (ARSHIM_POLICY,
                                  ARSHIM_POLICY_MODE=prepend); only with --policy, which --configs all then includes.
The platform: every host's link carries --link-gbit x --bandwidth-efficiency (the payload's share of the line rate,
e.g. TCP goodput) with --latency-us per link; within a host a loopback of --loopback-gbytes GB/s and
--loopback-latency-us. --preset rig gives the values fitted to the emulated cluster of docs/cluster.md (PRESETS;
docs/scale.md "Calibration against the emulated rig") to the options not given. --network (network.py) sets SMPI's
size-dependent latency and bandwidth factors, cross traffic and per-message overheads: smpi (default: SimGrid 3.32's
defaults, given explicitly), ideal (factors 1, no cross traffic: the world of the link bound) or a calibration file
(tools/simulate/networks/*.toml), whose [platform] values also fill the options not given (after --preset).
Every row of the CSV is nodes,ppn,bytes,config,sim_us,model_us,bound_us,network,algorithm: sim_us the simulated time
per call (the
maximum over ranks), bound_us the link bound 2 (n-1)/n x bytes / line rate for n > 1 nodes (empty on one node),
model_us ARShim's cost model's prediction for the same call (policy/cost_model.h, one `arshim-policy predict` per
run): for native-<sel> the library's own allreduce, for arshim-default-<sel> the built-in table's decision (the SMPI
build decides with the rules of the selector's library: Open MPI's under ompi, MPICH's otherwise), for arshim-tuned-<sel> the --policy table's, for
arshim-<path>-<sel> the path with the parameters ARSHIM_PATH gives it; the algorithms costed are MPICH 4.0.2's for
the mpich selector and Open MPI 4.1.4's for ompi. The model's machine comes from the platform (model_params: the
route's latency, the link's rate and the loopback's latency, with the network's table, which the model reads at
the message size of every step; copies and reductions at the rates the ranks are charged at) or, with --policy
and --model-from auto or policy, from the table's [model]. Empty where the model has none (the reproducible path). With --platform FILE the model and the
bound take --link-gbit, --latency-us and the loopback options as the file's. Progress goes to stderr; --resume skips
the (nodes, ppn, bytes, config, network) rows already in the CSV; network names the network, algorithm the
native rows' algorithm. Bad input (arshim-tuned-* without --policy, a table ARShim
would reject, an unknown topology or preset, 0 nodes, no smpirun) is one line on stderr and exit status 2.
"""
import argparse
import csv
import io
import json
import math
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from . import ToolError, files, options
from . import network as networks
from .candidates import LATENCY_MAX_BYTES, candidate, candidate_names
from .library_algorithms import mpich_mpir, native_algorithm, ompi_41
from .sizes import parse_size, size_text
from .text import escape, one_line

TOPOLOGIES = ("flat", "fat-tree", "torus")
SELECTORS = ("mpich", "ompi")
FORCED_PATHS = ("pipelined", "multileader", "latency", "reproducible")
CONFIGS = tuple(f"native-{s}" for s in SELECTORS) + tuple(f"arshim-default-{s}" for s in SELECTORS) + \
    tuple(f"arshim-{p}-{s}" for p in FORCED_PATHS for s in SELECTORS)
TUNED_CONFIGS = tuple(f"arshim-tuned-{s}" for s in SELECTORS)  # only with --policy
# The cost model's name for the library each selector reimplements (arshim-policy predict --mpi).
MODEL_FLAVOR = {"mpich": "mpich", "ompi": "openmpi"}
COLUMNS = ("nodes", "ppn", "bytes", "config", "sim_us", "model_us", "bound_us", "network", "algorithm")
MAX_NODES = 1 << 16
MAX_PPN = 1024
MAX_CSV_BYTES = 64 << 20
# The probe reduces doubles in an int count (tools/simulate/probe.c).
MAX_SIZE = 8 << 30
MAX_TIMEOUT_S = 7 * 86400
CORE_SPEED = "10Gf"  # per core; SMPI's default smpi/host-speed makes host compute almost free (docs/scale.md)
# Each rank's copy of the program needs its own static TLS block (ARShim's initial-exec thread_locals: 1 752 bytes
# in December 2026), from glibc's surplus, which is set before the simulation starts. A fixed 2 MiB held about 1 170
# copies: from 1 792 ranks (64 x 28) the dlopen of a rank's copy failed ("cannot allocate memory in static TLS
# block"). The surplus is reserved once, in the simulator's one thread: 4 KiB a rank costs 112 MiB at 28 672 ranks.
TLS_PER_RANK = 4096
TLS_MIN = 2 << 20


def tunables(ranks):
    """GLIBC_TUNABLES for a simulation of `ranks` ranks."""
    return f"glibc.rtld.optional_static_tls={max(TLS_MIN, ranks * TLS_PER_RANK)}"
# Within a host, messages take the host's loopback link (the generator's defaults).
LOOPBACK_GBYTES = 20.0
LOOPBACK_LATENCY_US = 0.2
# SMPI's network model: the tables and settings of each --network live in network.py (SimGrid 3.32's defaults for
# --network smpi: SMPI_LAT_FACTOR, SMPI_BW_FACTOR, cross traffic's 1.05).
SMPI_BW_FACTOR = networks.SMPI_BW_FACTOR
SMPI_LAT_FACTOR = networks.SMPI_LAT_FACTOR
CROSSTRAFFIC = networks.CROSSTRAFFIC
# Computation, charged (docs/scale.md "Computation"): SMPI runs with smpi/simulate-computation:no, so the host CPU
# time of a rank's code costs nothing (the machine's noise, SMPI's own overhead), and ARShim's SMPI build charges its
# node copies and every reduction, the library's too (through the op it hands the library; the native probe reduces
# through an op that charges the same), at a node's copy and reduce rates with all its ranks active: the --network
# calibration's copy_bytes_per_s and reduce_bytes_per_s, passed to the ranks as ARSHIM_SMPI_COPY_BYTES_PER_S and
# ARSHIM_SMPI_REDUCE_BYTES_PER_S, else these defaults, measured on the project's 2-core machine with the kernel
# benchmark of `arshim bench kernels` (arshim-bench-kernels-mpich --cpu-time, two copies at once, one per core: a
# node with all its ranks active), 4 MiB buffers: memcpy 25.7-26.2 GB/s counting 2n bytes, ARShim's AVX-512 double
# sum 37.7-38.2 GB/s counting 3n, i.e. 13.0e9 and 12.6e9 bytes of the vector per second (docs/scale.md
# "Computation").
COMPUTE_CONFIG = ["--cfg=smpi/simulate-computation:no"]
DEFAULT_COPY_BYTES_PER_S = 13.0e9
DEFAULT_REDUCE_BYTES_PER_S = 12.6e9


def compute_rates(network=None):
    """(copy, reduce) in bytes per second, whole numbers: the network calibration's copy_bytes_per_s and
    reduce_bytes_per_s where it gives them, else the defaults. What the ranks are charged at (compute_settings) and
    what the cost model charges (model_params)."""
    copy = getattr(network, "copy_bytes_per_s", None) or DEFAULT_COPY_BYTES_PER_S
    reduce = getattr(network, "reduce_bytes_per_s", None) or DEFAULT_REDUCE_BYTES_PER_S
    return max(1, round(copy)), max(1, round(reduce))


def compute_settings(network=None):
    """The ranks' ARSHIM_SMPI_* rates (compute_rates)."""
    copy, reduce = compute_rates(network)
    return {"ARSHIM_SMPI_COPY_BYTES_PER_S": str(copy), "ARSHIM_SMPI_REDUCE_BYTES_PER_S": str(reduce)}
# Platform presets (--preset): values for the options not given. "rig": the emulated cluster of docs/cluster.md
# (1 Gbit/s links shaped with tc on veth, 2 cores shared by every host), fitted in docs/scale.md "Calibration against
# the emulated rig".
PRESETS = {
    "rig": {"link_gbit": "1", "latency_us": "1.6", "bandwidth_efficiency": "0.93", "loopback_gbytes": "0.27",
            "loopback_latency_us": "3.2"},
}
PLATFORM_DEFAULTS = {"link_gbit": "100", "latency_us": "1", "bandwidth_efficiency": "1",
                     "loopback_gbytes": f"{LOOPBACK_GBYTES:g}", "loopback_latency_us": f"{LOOPBACK_LATENCY_US:g}"}
MAX_MODEL_OUTPUT = 64 << 20


class SimulateError(ToolError):
    pass


def quoted(text):
    """A value the user gave, for a message: quoted and escaped (text.escape)."""
    return f"'{escape(text, 120)}'"


def positive_int(name, text, limit):
    try:
        value = int(text)
    except ValueError:
        raise SimulateError(f"{name} {quoted(text)}: not a whole number from 1 to {limit}") from None
    if value < 1 or value > limit:
        raise SimulateError(f"{name} {value}: must be between 1 and {limit}")
    return value


def positive_float(name, text, limit=math.inf):
    try:
        value = float(text)
    except ValueError:
        raise SimulateError(f"{name} {quoted(text)}: not a number") from None
    if not math.isfinite(value) or value <= 0 or value > limit:
        raise SimulateError(f"{name} {escape(text, 120)}: must be a positive number"
                            + (f" of at most {limit:g}" if limit != math.inf else ""))
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


def platform_xml(nodes, ppn, link_gbit, latency_us, topology, efficiency=1.0, loopback_gbytes=LOOPBACK_GBYTES,
                 loopback_latency_us=LOOPBACK_LATENCY_US):
    """A SimGrid platform (version 4.1): `nodes` hosts named node-0..node-<n-1> of `ppn` cores each, every host
    linked at `link_gbit` Gbit/s x `efficiency` (the share of the line rate a transfer's payload gets, e.g. TCP
    goodput) with `latency_us` latency, in the given topology; messages within a host take a loopback link of
    `loopback_gbytes` GB/s and `loopback_latency_us` (default 20 GB/s, 0.2 us)."""
    if topology not in TOPOLOGIES:
        raise SimulateError(f"--topology {quoted(topology)}: unknown; allowed: {', '.join(TOPOLOGIES)}")
    if nodes < 1 or ppn < 1:
        raise SimulateError(f"{nodes} nodes x {ppn} ranks per node: both must be at least 1")
    if not (0 < efficiency <= 1):
        raise SimulateError(f"bandwidth efficiency {efficiency:g}: must be above 0 and at most 1")
    payload_gbit = link_gbit * efficiency
    bw = f"{payload_gbit / 8:g}GBps"
    lat = f"{latency_us:g}us"
    common = (f'prefix="node-" suffix="" radical="0-{nodes - 1}" speed="{CORE_SPEED}" core="{ppn}" bw="{bw}" '
              f'lat="{lat}" loopback_bw="{loopback_gbytes:g}GBps" loopback_lat="{loopback_latency_us:g}us"')
    if topology == "flat":
        # One switch: each host's private link, and a backbone as wide as every link at once (non-blocking).
        extra = f'bb_bw="{payload_gbit * nodes / 8:g}GBps" bb_lat="0us"'
        what = "one switch, non-blocking"
    elif topology == "fat-tree":
        extra = f'topology="FAT_TREE" topo_parameters="{fat_tree_parameters(nodes)}"'
        what = f"fat tree {fat_tree_parameters(nodes)}"
    else:
        extra = f'topology="TORUS" topo_parameters="{torus_dimensions(nodes)}"'
        what = f"torus {torus_dimensions(nodes)}"
    shares = "" if efficiency == 1 else f" x {efficiency:g} efficiency"
    loop = ("" if (loopback_gbytes, loopback_latency_us) == (LOOPBACK_GBYTES, LOOPBACK_LATENCY_US)
            else f", loopback {loopback_gbytes:g} GB/s {loopback_latency_us:g} us")
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  <!-- arshim simulate: {nodes} hosts x {ppn} cores, {link_gbit:g} Gbit/s{shares}, {latency_us:g} us, "
            f"{what}{loop} -->\n"
            f'  <cluster id="sim" {common}\n'
            f"           {extra}/>\n"
            "</platform>\n")


def run_group(command, workdir, env, timeout):
    """Runs `command` in a process group of its own and returns its CompletedProcess; on a timeout (or an interrupt)
    kills the whole group, then raises. smpirun starts the simulation (smpimain) in the background and waits for it:
    killing smpirun alone left the simulation running, an orphan."""
    proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:  # the timeout, or ^C: nothing of the simulation may outlive this run
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def smpi_factor(table, nbytes):
    """The factor SMPI's network model applies to a message of `nbytes` (a section applies from its bound on)."""
    return networks.factor_at(table, nbytes)


def factor_text(table):
    return networks.table_text(table)


def route_links(nodes, topology):
    """The mean number of links (each of --latency-us) on the route between two distinct hosts: flat, 2 (the two
    hosts' own links; the backbone adds none); a one-level fat tree, 2; two levels, 2 within a leaf and 4 across the
    spines; a torus, the mean distance round each ring (dimension-ordered routes)."""
    if nodes <= 1 or topology == "flat":
        return 2.0
    if topology == "fat-tree":
        if nodes <= 16:
            return 2.0
        per_leaf = int(fat_tree_parameters(nodes).split(";")[1].split(",")[0])
        return 2.0 + 2.0 * (nodes - per_leaf) / (nodes - 1)
    mean = sum((d * d // 4) / d for d in (int(x) for x in torus_dimensions(nodes).split(",")))
    return max(1.0, mean * nodes / (nodes - 1))


def model_params(nbytes, nodes, ppn, link_gbit, latency_us, topology, efficiency=1.0,
                 loopback_gbytes=LOOPBACK_GBYTES, loopback_latency_us=LOOPBACK_LATENCY_US, network=networks.SMPI):
    """The cost model's machine (policy/model_types.h MachineParams, SI units) for calls of `nbytes` on `nodes` x
    `ppn` of the generated platform, and under "network" the network's corrections by message size (network.py
    sections; MachineParams::sections), which the model applies at the size of each message it costs, as SMPI does:
      alpha          the route's latency (route_links x --latency-us), x the network's latency factor per message;
      net_bw         the link's payload rate (--link-gbit x --bandwidth-efficiency), / 1.05 under cross traffic (the
                     algorithms exchange, so both directions carry data and acknowledgements), x the bandwidth factor
                     per message;
      stream_gain    1: a host's concurrent streams share its one link;
      intra_latency  the loopback's latency, x the latency factor per message;
      copy_bw        the rate the simulation charges ARShim's node copies at (compute_rates: the calibration's
                     copy_bytes_per_s, else DEFAULT_COPY_BYTES_PER_S), which the model charges them at too (n bytes
                     in and n out: 2 n / copy_bw);
      intra_bw       the loopback's rate (--loopback-gbytes): the libraries' point-to-point messages within a host,
                     which SMPI moves over the loopback, b / (loopback x bw-factor), charging no copy (without it the
                     model took them as two copies at copy_bw; docs/scale.md "model_us");
      gamma          the rate the simulation charges every reduction at, ARShim's and the library's alike
                     (compute_rates: reduce_bytes_per_s, else DEFAULT_REDUCE_BYTES_PER_S);
      network        [[above, lat, bw, overhead, overhead_per_byte], ...], overhead the network's smpi/os + smpi/or.
    `nbytes` does not change them: the table does the work per message."""
    copy, reduce = compute_rates(network)
    return {
        "alpha": route_links(nodes, topology) * latency_us * 1e-6,
        "net_bw": link_gbit * efficiency * 1e9 / 8 * network.bandwidth_share(),
        "stream_gain": 1.0,
        "intra_latency": loopback_latency_us * 1e-6,
        "copy_bw": float(copy),
        "intra_bw": loopback_gbytes * 1e9,
        "gamma": float(reduce),
        "network": network.sections(),
    }


def folded_params(nbytes, nodes, ppn, link_gbit, latency_us, topology, efficiency=1.0,
                  loopback_gbytes=LOOPBACK_GBYTES, loopback_latency_us=LOOPBACK_LATENCY_US, network=networks.SMPI):
    """model_params without the table, for a model that takes one latency and one bandwidth (the tuner's probe of
    the machine, SimulatedCluster.machine_params): the latency factor of the smallest pieces an allreduce of `nbytes`
    sends (nbytes / ranks) with their overheads, the bandwidth factor of the largest (nbytes / 2)."""
    p = model_params(nbytes, nodes, ppn, link_gbit, latency_us, topology, efficiency, loopback_gbytes,
                     loopback_latency_us, network)
    small, large = nbytes / max(1, nodes * ppn), nbytes / 2
    lat, bw = smpi_factor(network.lat_factor, small), smpi_factor(network.bw_factor, large)
    overhead = network.overhead(small)
    return {"alpha": p["alpha"] * lat + overhead, "net_bw": p["net_bw"] * bw, "stream_gain": 1.0,
            "intra_latency": p["intra_latency"] * lat + overhead, "copy_bw": p["copy_bw"] * bw, "gamma": p["gamma"]}


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
            raise SimulateError(f"--sizes: {escape(str(e), 200)}") from None
    if not sizes or any(s < 1 or s > MAX_SIZE for s in sizes):
        raise SimulateError(f"--sizes {escape(text, 120)}: give sizes from 1 byte to {size_text(MAX_SIZE)}, e.g. "
                            "8,64K,4M")
    return sizes


def append_rows(path):
    """The CSV opened to add rows (files.open_output): never through a symlink planted at its name and only when it
    is a regular file (not a FIFO or a device that would block or swallow the rows)."""
    try:
        fd = files.open_output(path, append=True)
    except OSError as e:
        raise SimulateError(f"{files.escape(path)}: cannot append ({e.strerror})") from None
    return os.fdopen(fd, "a", newline="")


def check_out(args):
    """--out before anything runs: a new name in an existing directory, or with --resume a regular file (rows are
    added to it, never through a symbolic link). What else is at the name (a file without --resume, a symbolic
    link, a FIFO, a directory) is refused in one line."""
    path = args.out
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        files.check_output(path, "--out")
        return
    except OSError as e:
        raise SimulateError(f"--out {escape(path)}: cannot write ({e.strerror})") from None
    if stat.S_ISREG(st.st_mode):
        if not args.resume:
            raise SimulateError(f"--out {escape(path)} exists: pass --resume to add to it, or another --out")
        return
    what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else files.kind(st.st_mode)
    raise SimulateError(f"--out {escape(path)}: {what}, not a regular file (the CSV is a new file, or with --resume "
                        "a regular file rows are added to): give another --out")


MAX_LEADERS = 64  # shim/paths/node_shm.h kMaxLeaders


def leaders_option(name, ppn, nodes):
    """`multileader-l<k>` for a power of two k up to the ppn (and shim/paths/node_shm.h's 64) that arshim tune does
    not measure (it stops at 8 leaders, candidates.py): the multi-leader path with k leaders and no pieces, as the
    tuner's own multileader-l<k> candidates run it, for leader sweeps such as the DPML paper's l = 1..16 (docs/scale.md
    "The DPML paper's leader table"). In candidate()'s form, or None."""
    if not name.startswith("multileader-l") or not name[len("multileader-l"):].isdigit():
        return None
    k = int(name[len("multileader-l"):])
    if str(k) != name[len("multileader-l"):] or k < 1 or k & (k - 1) or k > min(ppn, MAX_LEADERS):
        return None
    return (name, {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": str(k), "ARSHIM_PIPELINE_K": "1"},
            {"path": "multileader", "leaders": k, "pipeline_k": 1}, 0, None)


def forced_option(name, ppn, nodes):
    """One of arshim tune's candidates of the layout (candidates.py) or a leaders_option, or None."""
    return candidate(name, ppn, nodes) or leaders_option(name, ppn, nodes)


def parse_configs(text, policy=None, ppn=1, nodes=1):
    """The configurations of --configs ("all": every one but the candidates, the arshim-tuned ones only with a
    --policy; "candidates" or "candidates-<selector>": arshim tune's candidates of this layout, each forced);
    arshim-tuned-* without --policy is refused."""
    if text == "all":
        return list(CONFIGS) + (list(TUNED_CONFIGS) if policy else [])
    names = candidate_names(ppn, nodes)
    configs = []
    for c in (c.strip() for c in text.split(",") if c.strip()):
        if c == "candidates" or c in (f"candidates-{s}" for s in SELECTORS):
            selectors = SELECTORS if c == "candidates" else (c.split("-")[1],)
            configs += [f"arshim-{n}-{s}" for n in names for s in selectors]
        else:
            configs.append(c)
    allowed = CONFIGS + TUNED_CONFIGS + tuple(f"arshim-{n}-{s}" for n in names for s in SELECTORS)
    unknown = [c for c in configs if c not in allowed and not (
        config_parts(c)[0] == "candidate" and config_parts(c)[2] in SELECTORS and
        leaders_option(config_parts(c)[1], ppn, nodes))]
    if unknown or not configs:
        raise SimulateError(f"--configs: unknown {escape(', '.join(unknown), 200) or '(none given)'} on {nodes} x "
                            f"{ppn}; allowed: "
                            f"{', '.join(CONFIGS + TUNED_CONFIGS)}, candidates, candidates-mpich, candidates-ompi "
                            f"(this layout's: {', '.join(names)}), arshim-multileader-l<k>-<selector> for k a power "
                            f"of two up to {min(ppn, MAX_LEADERS)}")
    tuned = [c for c in configs if c in TUNED_CONFIGS]
    if tuned and not policy:
        raise SimulateError(f"--configs {escape(tuned[0])}: needs --policy FILE (a tuned table, e.g. from arshim tune)")
    return list(dict.fromkeys(configs))


def config_parts(config):
    """(kind, name, selector) of a known configuration: kind native (name the selector), default, tuned, path
    (name a forced path with its defaults) or candidate (name one of arshim tune's candidates)."""
    head, _, selector = config.rpartition("-")
    if head == "native":
        return "native", selector, selector
    name = head.removeprefix("arshim-")
    if name in ("default", "tuned"):
        return name, name, selector
    return ("path" if name in FORCED_PATHS else "candidate"), name, selector


def config_settings(config, args):
    """The ARSHIM_* settings a configuration runs with (besides the ones every run gets)."""
    kind, name, _ = config_parts(config)
    if kind == "tuned":
        # The tuned table before the built-in rules, as docs/tuning.md has a tuned table used; the shim reads it.
        return {"ARSHIM_POLICY": os.path.abspath(args.policy), "ARSHIM_POLICY_MODE": "prepend"}
    if kind == "path":
        return {"ARSHIM_PATH": name}
    if kind == "candidate":
        return dict(forced_option(name, args.ppn, args.nodes)[1])
    return {}


def config_sizes(config, sizes, args):
    """The sizes a configuration is simulated at: a candidate only within the sizes arshim tune measures it at (a
    segmented pipeline below one segment is the whole message as one non-blocking allreduce: pipelined-one), the
    latency path only up to its 4 KiB."""
    kind, name, _ = config_parts(config)
    if kind == "path" and name == "latency":  # (also the tuner's candidate of that name, whose settings it has)
        return [s for s in sizes if s <= LATENCY_MAX_BYTES]  # larger calls decline to the library's allreduce
    if kind != "candidate":
        return sizes
    _, _, _, lo, hi = forced_option(name, args.ppn, args.nodes)
    return [s for s in sizes if s >= lo and (hi is None or s <= hi)]


def read_done(path):
    """The (nodes, ppn, bytes, config, network) keys already in the CSV (--resume); a file that is not our CSV is
    refused (one written before --network too: its rows name no network)."""
    if not os.path.exists(path):
        return set()
    try:
        text = files.read_text(path, MAX_CSV_BYTES)
    except files.InputError as e:
        raise SimulateError(f"--resume: {e}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise SimulateError(f"--resume: {escape(path)} is not a CSV of arshim simulate (its header is not "
                            f"{','.join(COLUMNS)}; one written before --network names no network: start another "
                            "--out)")
    return {tuple(r[:4]) + (r[7],) for r in rows[1:] if len(r) == len(COLUMNS)}


def native_algorithms(selector, nodes, ppn, sizes):
    """{bytes: (SMPI algorithm to force or None for the selector's, what the library runs)} of native-<selector>."""
    return {s: native_algorithm(selector, nodes, ppn, s) for s in sizes}


def run_config(args, config, sizes, platform, hostfile, workdir):
    """Runs the probe for `config` over `sizes`: ({bytes: simulated us per call}, {bytes: the share of the calls the
    forced path served, -1 when no path is forced}, {bytes: the algorithm column}). A native configuration runs once
    per algorithm its library picks among the sizes (library_algorithms.py), forced with smpi/allreduce; so does an
    ARShim one where its library calls are known to be the library's choice (library_calls_algorithm)."""
    kind, _, selector = config_parts(config)
    return run_algorithms(args, selector, kind != "native", config_settings(config, args), sizes, args.ppn, platform,
                          hostfile, workdir, config)


def run_algorithms(args, selector, with_arshim, settings, sizes, ppn, platform, hostfile, workdir, what):
    """The probe on --nodes x `ppn` over `sizes`, once per algorithm forced among them: the library's choice for the
    natives (native_algorithms), ARShim's library calls' where known (library_calls_algorithm). run_probe's answer
    and {bytes: the algorithm column}."""
    if with_arshim:
        decisions = getattr(args, "decisions", None) or {}
        chosen = {s: library_calls_algorithm(selector, args.nodes, ppn, s, decisions.get((s, what))) for s in sizes}
    else:
        chosen = native_algorithms(selector, args.nodes, ppn, sizes)
    times, served = {}, {}
    for forced in dict.fromkeys(a for a, _ in chosen.values()):
        group = [s for s in sizes if chosen[s][0] == forced]
        t, v = run_probe(args, selector, with_arshim, settings if with_arshim else {}, group, args.nodes * ppn,
                         platform, hostfile, workdir, what, forced)
        times.update(t)
        served.update(v)
    return times, served, {s: (f"{a}: " if a else "") + text for s, (a, text) in chosen.items()}


def decision_route(decision):
    """(path, leaders, pipeline_k) of a decision as `arshim-policy predict` prints it ("multileader leaders=2
    pipeline_k=1 kernel=native"), or None."""
    if not isinstance(decision, str) or not decision.split():
        return None
    words = decision.split()
    values = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    try:
        return words[0], int(values.get("leaders", 1)), int(values.get("pipeline_k", 1))
    except ValueError:
        return None


def library_calls_algorithm(selector, nodes, ppn, nbytes, decision=None):
    """(SMPI algorithm to force or None, what it stands for) for ARShim's own blocking library calls under `selector`.
    At one rank per node under mpich every library allreduce ARShim makes there is on a communicator of one rank per
    node (the call's own, where the table sends it to the library or the multi-leader path declines to it; the
    start-up agreement's): MPICH 4.0.2's choice for the call's size is forced, as for native-mpich. With several
    ranks per node the communicator depends on the route (`decision`, the model's answer for the configuration at
    this size, decision_route): the library's route is the whole communicator (MPICH 4.0.2's composition, as
    native-mpich); the multi-leader path's l leaders each reduce n / l among one rank per node, and the latency
    path's node leaders n among one rank per node (MPICH's composition beta there: MPIR recursive doubling or
    Rabenseifner by the partition's count); the pipelined path and multi-leader pieces make no blocking call (the
    SMPI build's own schedule). Without a decision, or another route: SMPI's selector."""
    if nodes < 2:
        return None, ""
    if selector == "ompi":
        # SimGrid's ompi selector runs Open MPI 4.1's table but not its fallbacks to recursive doubling (ring,
        # segmented ring and Rabenseifner on short vectors): where the call's communicator and size fall back,
        # recursive doubling is forced, as for native-ompi; elsewhere the selector decides.
        route = decision_route(decision) or (("native", 1, 1) if ppn == 1 else None)
        if route is None or route[2] > 1 or route[0] not in ("native", "multileader", "latency"):
            return None, ""
        path, leaders = route[0], min(route[1], ppn)
        ranks, part = (nodes * ppn, nbytes) if path == "native" or (path == "multileader" and ppn == 1) else \
            (nodes, nbytes if path == "latency" else -(-nbytes // max(1, leaders)))
        algorithm, what = ompi_41(ranks, part)
        return (algorithm, f"library calls: Open MPI 4.1 {what} on {ranks} ranks, {part} B") if algorithm else (None, "")
    if selector != "mpich":
        return None, ""
    if ppn == 1:
        algorithm, what = native_algorithm(selector, nodes, ppn, nbytes)
        return algorithm, "library calls: " + what
    route = decision_route(decision)
    if route is None:
        return None, ""
    path, leaders, pieces = route
    if path == "native":
        algorithm, what = native_algorithm(selector, nodes, ppn, nbytes)
        return algorithm, "library calls: " + what
    if path in ("multileader", "latency") and pieces <= 1:
        part = nbytes if path == "latency" else -(-nbytes // max(1, min(leaders, ppn)))
        mpir = mpich_mpir(nodes, part)
        who = "the node leaders" if path == "latency" else f"each of {min(leaders, ppn)} leaders"
        return ("rdb" if mpir == "recursive_doubling" else "rab_rdb"), \
            f"library calls: MPICH 4.0.2 ch4 beta, MPIR {mpir} among {nodes} nodes ({who}, {part} B)"
    return None, ""


def run_probe(args, selector, with_arshim, settings, sizes, ranks, platform, hostfile, workdir, what, algorithm=None):
    """One smpirun of the probe (with ARShim and `settings`, or SMPI's own allreduce) under `selector` (and with
    `algorithm` forced for every allreduce, smpi/allreduce) on --network over `sizes` on `ranks` ranks placed by
    `hostfile`: ({bytes: simulated us per call}, {bytes: share of the calls the forced path served, or -1}). `what`
    names the run in errors."""
    probe = args.probe_arshim if with_arshim else args.probe_native
    if not probe or not os.path.isfile(probe):
        raise SimulateError(f"no probe program for {what} ({probe or 'not built'}): build ARShim with -Dsmpi "
                            "(meson compile -C build) and run `arshim simulate` from the build or installation")
    probe = os.path.abspath(probe)  # smpirun runs in the work directory
    env = dict(os.environ, TMPDIR=workdir, GLIBC_TUNABLES=tunables(ranks))
    for name in [n for n in env if n.startswith("ARSHIM_")]:
        del env[name]
    env.update(settings)
    env.update(compute_settings(getattr(args, "network_model", None)))  # charged computation (COMPUTE_CONFIG)
    network = getattr(args, "network_model", None) or networks.SMPI
    command = [args.smpirun, "-np", str(ranks), "-platform", platform, "-hostfile", hostfile,
               f"--cfg=smpi/coll-selector:{selector}"] + network.smpi_config() + \
        ([f"--cfg=smpi/allreduce:{algorithm}"] if algorithm else []) + \
        ["--log=root.thres:critical", probe, "--iterations", str(args.iterations)] + [str(s) for s in sizes]
    command[1:1] = COMPUTE_CONFIG
    try:
        done = run_group(command, workdir, env, args.timeout)
    except subprocess.TimeoutExpired:
        raise SimulateError(f"{what}: the simulation took longer than --timeout {args.timeout:g} s") from None
    except OSError as e:
        raise SimulateError(f"{escape(args.smpirun)}: cannot run ({e.strerror})") from None
    times, served = {}, {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) in (3, 4) and fields[0] == "probe":
            times[int(fields[1])] = float(fields[2])
            served[int(fields[1])] = float(fields[3]) if len(fields) == 4 else -1.0
    if done.returncode != 0 or len(times) != len(sizes):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SimulateError(f"{what}: smpirun exited with status {done.returncode} after {len(times)} of "
                            f"{len(sizes)} sizes ({last[:200]})")
    return times, served


def model_rows(args, sizes, configs, platform):
    """model_us for every (bytes, config): one run of `arshim-policy predict` for all sizes (docs/scale.md
    "model_us"). `platform` holds the generated platform's parameters (model_params' arguments); the machine comes
    from it, or from the --policy table's [model] (--model-from). Returns ({(bytes, config): us or None}, a line
    saying where the parameters came from)."""
    program = args.policy_program
    if not program or not os.path.isfile(program) or not os.access(program, os.X_OK):
        raise SimulateError(f"no arshim-policy program for the model_us column ({program or 'not found'}): build "
                            "ARShim (meson compile -C build) and run `arshim simulate` from the build or installation")

    def predict(with_platform, settings=None):
        shapes = [{"nodes": args.nodes, "ppn": args.ppn, "bytes": s} for s in sizes]
        if with_platform:
            for shape in shapes:
                shape["params"] = model_params(shape["bytes"], args.nodes, args.ppn, **platform)
                shape["network"] = shape["params"].pop("network")
        # Each selector's library decides with its own rules, as the SMPI build does (shim/base/flavor_smpi.cpp).
        command = [program, "predict", "--shapes", "-"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARSHIM_")}
        env.update(settings or {})  # a candidate's parameters (its forced path's prediction reads them)
        if args.policy:
            command += ["--policy", os.path.abspath(args.policy)]
            env["ARSHIM_POLICY_MODE"] = "prepend"  # as run_config runs the tuned table
        try:
            done = subprocess.run(command, input=json.dumps({"shapes": shapes}), env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SimulateError(f"{program}: cannot run ({getattr(e, 'strerror', None) or 'timed out'})") from None
        if done.returncode != 0 or len(done.stdout) > MAX_MODEL_OUTPUT:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SimulateError(f"{program} predict exited with status {done.returncode} ({last[:200]})")
        try:
            answer = files.parse_json("arshim-policy predict", done.stdout)
        except files.InputError as e:
            raise SimulateError(str(e)) from None
        if not isinstance(answer, dict):
            raise SimulateError(f"{program} predict: not the answer asked for")
        return answer

    with_platform = args.model_from == "platform" or not args.policy
    answer = predict(with_platform)
    policy = answer.get("policy")
    if args.policy and (not isinstance(policy, dict) or policy.get("used") is not True):
        problems = answer.get("problems")
        why = problems[0] if isinstance(problems, list) and problems and isinstance(problems[0], str) else "rejected"
        raise SimulateError(f"--policy {files.escape(args.policy)}: ARShim would not use this table ({why[:200]})")
    if not with_platform and "[model]" not in str(answer.get("params_from", "")):
        if args.model_from == "policy":
            raise SimulateError(f"--model-from policy: {files.escape(args.policy)} has no [model] section")
        with_platform = True
        answer = predict(True)
    where = ("the platform (docs/scale.md \"model_us\")" if with_platform
             else f"{files.escape(args.policy)} [model]")
    rows = {}
    decisions = args.decisions = {}

    def number(entry):
        value = entry.get("us") if isinstance(entry, dict) else entry
        return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

    def fill(answer, configs):
        predictions = answer.get("predictions")
        if not isinstance(predictions, list) or len(predictions) != len(sizes):
            raise SimulateError(f"{program} predict: not the answer asked for")
        for size, prediction in zip(sizes, predictions):
            flavors = prediction.get("flavors", {}) if isinstance(prediction, dict) else {}
            for config in configs:
                kind, name, selector = config_parts(config)
                entry = flavors.get(MODEL_FLAVOR[selector], {})
                if not isinstance(entry, dict):
                    entry = {}
                if kind == "native":
                    rows[(size, config)] = number(entry.get("native_us"))
                    continue
                if kind == "default":
                    chosen = entry.get("builtin")
                elif kind == "tuned":
                    chosen = entry.get("policy")
                else:
                    path = config_settings(config, args)["ARSHIM_PATH"]
                    paths = entry.get("paths", {})
                    chosen = paths.get(path) if isinstance(paths, dict) else None
                rows[(size, config)] = number(chosen)
                if isinstance(chosen, dict):  # the route, for the library calls' algorithm (library_calls_algorithm)
                    decisions[(size, config)] = chosen.get("decision")

    fill(answer, [c for c in configs if config_parts(c)[0] != "candidate"])
    for config in (c for c in configs if config_parts(c)[0] == "candidate"):
        settings = {k: v for k, v in config_settings(config, args).items() if k != "ARSHIM_PATH"}
        fill(predict(with_platform, settings), [config])
    return rows, where


def build_parser():
    parser = options.Parser(prog="arshim simulate", description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", required=True, help="simulated hosts")
    parser.add_argument("--ppn", default="1", help="ranks (and cores) per host (default 1)")
    parser.add_argument("--preset", help="platform values for the options not given: " + ", ".join(PRESETS))
    parser.add_argument("--link-gbit", help="each host's link, Gbit/s (default 100)")
    parser.add_argument("--latency-us", help="each link's latency, microseconds (default 1)")
    parser.add_argument("--bandwidth-efficiency", help="share of the line rate a transfer's payload gets, e.g. TCP "
                        "goodput (0 < E <= 1, default 1); the bound stays the line rate's")
    parser.add_argument("--loopback-gbytes", help="each host's loopback, GB/s (default 20)")
    parser.add_argument("--loopback-latency-us", help="each host's loopback latency, microseconds (default 0.2)")
    parser.add_argument("--topology", default="flat", help="flat (one switch), fat-tree or torus (default flat)")
    parser.add_argument("--network", default="smpi", help="SMPI's network model: smpi (SimGrid 3.32's default "
                        "factors and cross traffic, default), ideal (factors 1, no cross traffic: the link bound's "
                        "world) or a calibration file (TOML, tools/simulate/networks/)")
    parser.add_argument("--platform", help="a SimGrid platform file to use instead (hosts node-0, node-1, ...)")
    parser.add_argument("--sizes", default="8,64K,4M", help="message sizes (default 8,64K,4M)")
    parser.add_argument("--configs", default="all", help="configurations (default: all; the arshim-tuned ones with "
                        "--policy)")
    parser.add_argument("--policy", help="a tuned table (arshim tune) for the arshim-tuned-* configurations")
    parser.add_argument("--model-from", default="auto", help="the model's machine: platform, policy (the --policy "
                        "table's [model]) or auto (policy when it has a [model], default)")
    parser.add_argument("--iterations", default="5", help="timed calls per size (default 5)")
    parser.add_argument("--out", default="simulate.csv", help="the CSV (default simulate.csv)")
    parser.add_argument("--resume", action="store_true", help="skip the rows already in --out")
    parser.add_argument("--timeout", default="3600", help="seconds per simulation (default 3600)")
    parser.add_argument("--smpirun", default=None, help="smpirun to use (default: the one on PATH)")
    parser.add_argument("--keep", action="store_true", help="keep the generated platform and hostfile")
    parser.add_argument("--probe-native", help=argparse.SUPPRESS)
    parser.add_argument("--probe-arshim", help=argparse.SUPPRESS)
    parser.add_argument("--policy-program", help=argparse.SUPPRESS)
    return parser


def main(argv):
    args = build_parser().parse_args(argv)
    try:
        return simulate(args)
    except ToolError as e:
        print(f"arshim simulate: {one_line(e)}", file=sys.stderr)
        return 2


def platform_options(args):
    """The generated platform's values: the options given, else the --preset's, else the defaults."""
    if args.preset is not None and args.preset not in PRESETS:
        raise SimulateError(f"--preset {quoted(args.preset)}: unknown; allowed: {', '.join(PRESETS)}")
    preset = PRESETS.get(args.preset, {})
    calibrated = getattr(args, "network_model", None)
    calibrated = calibrated.platform if calibrated is not None else {}
    value = {k: getattr(args, k) if getattr(args, k) is not None else
             preset.get(k, calibrated.get(k, PLATFORM_DEFAULTS[k])) for k in PLATFORM_DEFAULTS}
    efficiency = positive_float("--bandwidth-efficiency", value["bandwidth_efficiency"])
    if efficiency > 1:
        raise SimulateError(f"--bandwidth-efficiency {value['bandwidth_efficiency']}: must be at most 1")
    return {"link_gbit": positive_float("--link-gbit", value["link_gbit"]),
            "latency_us": positive_float("--latency-us", value["latency_us"]),
            "efficiency": efficiency,
            "loopback_gbytes": positive_float("--loopback-gbytes", value["loopback_gbytes"]),
            "loopback_latency_us": positive_float("--loopback-latency-us", value["loopback_latency_us"])}


def check_cluster(args):
    """Validates the cluster options of `args` (simulate's parser) in place: the layout, the platform's values, the
    topology, smpirun and --platform. Returns the platform's values (platform_options)."""
    args.nodes = positive_int("--nodes", args.nodes, MAX_NODES)
    args.ppn = positive_int("--ppn", args.ppn, MAX_PPN)
    args.iterations = positive_int("--iterations", args.iterations, 1 << 20)
    args.timeout = positive_float("--timeout", args.timeout, MAX_TIMEOUT_S)
    try:
        args.network_model = networks.network(args.network)
    except networks.NetworkError as e:
        raise SimulateError(str(e)) from None
    platform_values = platform_options(args)
    if args.topology not in TOPOLOGIES:
        raise SimulateError(f"--topology {quoted(args.topology)}: unknown; allowed: {', '.join(TOPOLOGIES)}")
    smpirun = args.smpirun or shutil.which("smpirun")
    if not smpirun or not os.path.isfile(smpirun) or not os.access(smpirun, os.X_OK):
        raise SimulateError(f"smpirun {'(' + escape(args.smpirun) + ') ' if args.smpirun else ''}not found: install "
                            "SimGrid (Debian: apt-get install libsimgrid-dev) or name it with --smpirun")
    args.smpirun = smpirun
    if args.platform:
        try:
            files.read_text(args.platform, 16 << 20)
        except files.InputError as e:
            raise SimulateError(f"--platform {e}") from None
    return platform_values


def write_platform(args, platform_values, workdir):
    """The platform file (--platform, or one generated in `workdir`) and a hostfile of --ppn ranks per host."""
    platform = os.path.abspath(args.platform) if args.platform else os.path.join(workdir, "platform.xml")
    if not args.platform:
        files.write_file(platform, platform_xml(args.nodes, args.ppn, topology=args.topology, **platform_values))
    hostfile = os.path.join(workdir, "hosts.txt")
    files.write_file(hostfile, hostfile_text(args.nodes, args.ppn))
    return platform, hostfile


class SimulatedCluster:
    """A simulated cluster that `arshim tune --simulate` measures on instead of launching a job: the platform of
    simulate's options, generated once, and probe runs on it with any ARSHIM_* settings, on every rank or on one
    rank per host (the tuner's shapes)."""

    def __init__(self, option_text, probes, smpirun=None):
        try:
            words = shlex.split(option_text)
        except ValueError as e:
            raise SimulateError(f"--simulate {quoted(option_text)}: {e}") from None
        allowed = {"--nodes", "--ppn", "--preset", "--link-gbit", "--latency-us", "--bandwidth-efficiency",
                   "--loopback-gbytes", "--loopback-latency-us", "--topology", "--network", "--platform",
                   "--iterations", "--timeout", "--smpirun"}
        given = {w.split("=")[0] for w in words if w.startswith("--")}  # not "-5", a value
        if given - allowed:
            raise SimulateError(f"--simulate: {escape(', '.join(sorted(given - allowed)))} is not a cluster option; "
                                "allowed: "
                                + ", ".join(sorted(allowed)))
        if "--nodes" not in given:
            raise SimulateError(f"--simulate {quoted(option_text)}: give the cluster's --nodes (and --ppn), e.g. "
                                "\"--nodes 2 --ppn 2 --preset rig\"")
        parser = build_parser()
        parser.exit_on_error = False

        def error(message):  # what argparse reports itself even without exit_on_error: a SimulateError too
            raise SimulateError(f"--simulate {quoted(option_text)}: {escape(message)}")
        parser.error = error
        try:
            self.args, extra = parser.parse_known_args(words + [f"--probe-{k}={v}" for k, v in probes.items() if v])
        except argparse.ArgumentError as e:
            raise SimulateError(f"--simulate {quoted(option_text)}: {escape(str(e))}") from None
        if extra:
            raise SimulateError(f"--simulate {quoted(option_text)}: {quoted(' '.join(extra))} is not a cluster option")
        if smpirun and not self.args.smpirun:
            self.args.smpirun = smpirun
        self.values = check_cluster(self.args)
        self.workdir = tempfile.mkdtemp(prefix="arshim-tune-simulate.")
        self.platform, self.hostfile = write_platform(self.args, self.values, self.workdir)
        self.one_per_host = os.path.join(self.workdir, "hosts-1.txt")
        files.write_file(self.one_per_host, hostfile_text(self.args.nodes, 1))

    def describe(self):
        v = self.values
        return (f"simulated {self.args.nodes} x {self.args.ppn} ({self.args.topology}, {v['link_gbit']:g} Gbit/s x "
                f"{v['efficiency']:g}, {v['latency_us']:g} us; loopback {v['loopback_gbytes']:g} GB/s, "
                f"{v['loopback_latency_us']:g} us; network {self.args.network_model.name})")

    def run(self, selector, settings, sizes, one_per_host=False, with_arshim=True, what="probe"):
        """The probe's times and served shares, the library's allreduce running the library's algorithms as in
        `arshim simulate` (run_algorithms)."""
        ppn = 1 if one_per_host else self.args.ppn
        times, served, _ = run_algorithms(self.args, selector, with_arshim, settings, sizes, ppn, self.platform,
                                          self.one_per_host if one_per_host else self.hostfile, self.workdir, what)
        return times, served

    def machine_params(self):
        """The machine as the tuner measures it (its probe's --params): latencies of the smallest messages,
        bandwidths of 1 MiB calls, as SMPI charges them on this platform (model_params)."""
        network = self.args.network_model
        small = folded_params(8, self.args.nodes, self.args.ppn, topology=self.args.topology, network=network,
                              **self.values)
        large = folded_params(1 << 20, self.args.nodes, self.args.ppn, topology=self.args.topology, network=network,
                              **self.values)
        return {"alpha": small["alpha"], "intra_latency": small["intra_latency"], "net_bw": large["net_bw"],
                "copy_bw": large["copy_bw"], "gamma": large["gamma"]}

    def close(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


def simulate(args):
    check_out(args)
    platform_values = check_cluster(args)
    link_gbit = platform_values["link_gbit"]
    if args.model_from not in ("auto", "platform", "policy"):
        raise SimulateError(f"--model-from {quoted(args.model_from)}: unknown; allowed: auto, platform, policy")
    if args.model_from == "policy" and not args.policy:
        raise SimulateError("--model-from policy: needs --policy FILE")
    sizes = parse_sizes(args.sizes)
    configs = parse_configs(args.configs, args.policy, args.ppn, args.nodes)
    if args.policy:
        # The shim reads the table (world rank 0, bounded, hostile-file rules); here only: is something there.
        if not os.path.isfile(args.policy):
            raise SimulateError(f"--policy {files.escape(args.policy)}: not a regular file")
    done = read_done(args.out) if args.resume else set()
    network = args.network_model
    todo = [(c, [s for s in config_sizes(c, sizes, args)
                 if (str(args.nodes), str(args.ppn), str(s), c, network.name) not in done]) for c in configs]
    todo = [(c, s) for c, s in todo if s]
    model_platform = dict(platform_values, topology=args.topology, network=network)
    model, model_where = model_rows(args, sizes, configs, model_platform) if todo else ({}, "")
    workdir = tempfile.mkdtemp(prefix="arshim-simulate.")
    try:
        platform, hostfile = write_platform(args, platform_values, workdir)
        if not os.path.lexists(args.out):
            files.write_file(args.out, ",".join(COLUMNS) + "\n")
        skipped = sum(len(config_sizes(c, sizes, args)) for c in configs) - sum(len(s) for _, s in todo)
        print(f"arshim simulate: {args.nodes} nodes x {args.ppn} ppn, network {network.describe()}, {len(todo)} "
              "simulations to run"
              + (f", {skipped} rows already in {escape(args.out)}" if skipped else "")
              + (f"; model_us from {model_where}" if todo else ""), file=sys.stderr)
        for index, (config, these_sizes) in enumerate(todo, 1):
            started = time.monotonic()
            times, served, algorithms = run_config(args, config, these_sizes, platform, hostfile, workdir)
            with append_rows(args.out) as f:
                writer = csv.writer(f)
                for s in these_sizes:
                    bound = bound_us(args.nodes, s, link_gbit)
                    predicted = model.get((s, config))
                    writer.writerow([args.nodes, args.ppn, s, config, f"{times[s]:.3f}",
                                     "" if predicted is None else f"{predicted:.3f}",
                                     "" if bound is None else f"{bound:.3f}", network.name, algorithms[s]])
            print(f"arshim simulate: [{index}/{len(todo)}] {config}: "
                  + ", ".join(f"{size_text(s)} {times[s]:.1f} us" for s in these_sizes)
                  + f" ({time.monotonic() - started:.1f} s)", file=sys.stderr)
            declined = [s for s in these_sizes if 0 <= served[s] < 0.9]
            if declined:
                print(f"arshim simulate: {config}: the forced path declined calls at "
                      f"{', '.join(size_text(s) for s in declined)} (served {min(served[s] for s in declined):.0%}); "
                      "those rows time what served them instead", file=sys.stderr)
        if args.keep:
            print(f"arshim simulate: platform and hostfile kept in {workdir}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
