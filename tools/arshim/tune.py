"""arshim tune: a policy table measured on this machine, under the user's own launcher line (docs/tuning.md).

  arshim tune [--out tuned.toml] [--budget 5m] [--max 64M] [--from-stats run.json] [--resume] -- mpirun -n 4 ...

The launcher line is everything but the program: the tuner appends its measurement program (arshim-tune-probe) and
runs it once per candidate (a path and its parameters, forced with ARSHIM_PATH and friends) through `arshim run`,
which preloads the library the way a job would. Each run times the candidate against the library's own allreduce,
interleaved call by call, at every size of the run, until the medians are stable. Then:
  1. a coarse sweep: every candidate at a few sizes from 8 B to --max, on every rank and, when the launch has
     several nodes with several ranks each, also on one rank per node (the layout of a job with one rank per node,
     measured from the same launch);
  2. the cost model is fitted to it (arshim-policy tune-table --crossovers) and the sizes where the model's ranking
     changes are measured, with the sizes of --from-stats, while the budget lasts;
  3. the table: each size bucket of the measured layout decided by measurement (a candidate only when its win is
     beyond the noise measured with it), other buckets and layouts (up to --predict-nodes) by the model, merged into
     as few rules as decide the same, with the machine parameters, MPI, host count, date and command in its header.
Everything measured is kept in OUT.state.json after every run; --resume continues from it.

  arshim tune --simulate "--nodes 2 --ppn 2 --link-gbit 100" --mpi openmpi [--out sim.toml] ...

measures a cluster simulated with SimGrid's SMPI instead of a launch (arshim simulate's cluster options; --mpi names
the SMPI selector whose allreduce is the library's): the same steps, each candidate one simulation
(Tuner.simulated_probe; docs/scale.md "The tuner's goal in simulation").
"""
import argparse
import datetime
import json
import math
import os
import shlex
import subprocess
import sys
import time

from . import ToolError, files, launchers, options, simulate, statslog
from .candidates import candidates
from .flavors import launcher_flavor
from .sizes import size_text
from .text import escape

SIZES_COARSE = [8, 128, 2048, 16 << 10, 128 << 10, 1 << 20, 8 << 20, 64 << 20]
# A win on calls shorter than this (the library's median, microseconds) is measured again in a launch of its own
# before the table takes it: a launch's state moves such calls by up to 2x (docs/tuning.md "arshim tune"), and the
# second launch costs little there.
CONFIRM_BELOW_US = 1000.0
MAX_INPUT_BYTES = 64 << 20  # state files and statistics logs read by the tuner
# --max: the probe reduces floats in an int count (tools/tune/tune_probe.c); SIZES_COARSE starts at 8 bytes.
SMALLEST_MAX, LARGEST_MAX = 8, 8 << 30
MAX_BUDGET_S = 30 * 86400
# The files arshim tune writes beside --out: its state (--resume) and the measurements handed to arshim-policy.
STATE_SUFFIXES = (".state.json", ".samples.json")


class TuneError(ToolError):
    pass


def read_json(path, what):
    """A JSON file through the package's bounded reader: a FIFO, a device, /dev/zero or a directory planted at the
    name is refused in one line instead of blocking or filling memory."""
    try:
        return files.read_json(path, MAX_INPUT_BYTES)
    except files.InputError as e:
        raise TuneError(f"{what} {e}") from None


def parse_duration(text):
    """--budget: seconds, or a number with s, m or h; above 0 and at most MAX_BUDGET_S."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    value = None
    if t and t[-1] in units and t[:-1].replace(".", "", 1).isdigit() and t[:-1].isascii():
        value = float(t[:-1]) * units[t[-1]]
    elif t.replace(".", "", 1).isdigit() and t.isascii():
        value = float(t)
    if value is None or not 0 < value <= MAX_BUDGET_S:
        raise TuneError(f"--budget {escape(text, 120)}: write a time above 0 and at most 30 days in seconds, minutes "
                        "or hours, e.g. 300, 90s, 5m, 2h")
    return value


class Tuner:
    def __init__(self, args):
        self.args = args
        self.state_file = args.out + ".state.json"
        self.state = {"measurements": [], "runs_done": [], "layout": None, "command": None, "flavor": args.mpi}
        if args.resume:
            self.state = read_json(self.state_file, "--resume:")
            if not isinstance(self.state, dict) or not isinstance(self.state.get("measurements"), list) or \
                    not isinstance(self.state.get("runs_done"), list) or self.state.get("flavor") != args.mpi:
                raise TuneError(f"--resume: {escape(self.state_file)}: not a state file of arshim tune for {args.mpi}")
            print(f"arshim tune: resuming: {len(self.state['measurements'])} measurements from "
                  f"{escape(self.state_file)}",
                  file=sys.stderr)
        self.started = time.monotonic()
        self.run_seconds = []
        self.library = None
        self.cluster = args.cluster  # a simulate.SimulatedCluster with --simulate, else None
        self.native_sim = {}  # (shape, bytes) -> simulated native us: the simulation is deterministic

    def preload_library(self, flavor):
        """The library `arshim run` would preload (`arshim lib`: this arshim's installation or build tree, or
        ARSHIM_LIB_DIR), so that the ranks load it exactly as a job would."""
        if self.library is None:
            p = subprocess.run([self.args.arshim, "lib", "--mpi", flavor], capture_output=True, text=True)
            if p.returncode != 0:
                raise TuneError(p.stderr.strip().removeprefix("arshim: ") or f"arshim lib --mpi {flavor} failed")
            self.library = p.stdout.strip()
        return self.library

    def save(self):
        files.write_file(self.state_file, json.dumps(self.state, indent=1))

    def elapsed(self):
        return time.monotonic() - self.started

    def run_probe(self, name, settings, sizes, shape="all", probe_args=None):
        """One launch: the probe at `sizes` with the candidate's settings, on every rank or (shape one-per-node) on
        one rank per node (or with `probe_args` instead). Returns the layout measured, the measurements and the
        machine parameters printed."""
        if self.cluster is not None:
            return self.simulated_probe(name, settings, sizes, shape, probe_args)
        flavor = self.state["flavor"]
        # This environment's ARSHIM_* settings are replaced by the candidate's (and no tuning, statistics or noise
        # of the shim's own); the launcher options come from `arshim run`'s own functions, so the ranks load the
        # library exactly as a job would.
        for k in [k for k in os.environ if k.startswith("ARSHIM_") and k not in ("ARSHIM_LIB_DIR", "ARSHIM_BUILD_DIR")]:
            del os.environ[k]
        os.environ.update({"ARSHIM_TUNE": "off", "ARSHIM_STATS_SUMMARY": "0", "ARSHIM_LOG": "warn"})
        os.environ.update(settings)
        path = settings.get("ARSHIM_PATH", "native")
        command = self.args.command + [self.args.probe[flavor]] + (probe_args or [
            "--sizes", ",".join(str(s) for s in sizes), "--path", path, "--seconds", str(self.args.seconds_per_size),
            "--shape", shape])
        cmd = launchers.preloaded_command(command, flavor, self.preload_library(flavor))
        cmd = shlex.split(self.args.wrap) + cmd if self.args.wrap else cmd
        env = launchers.launch_environment(command)
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=self.args.run_timeout)
        except subprocess.TimeoutExpired:
            raise TuneError(f"{name}: the run took more than {self.args.run_timeout} s: {shlex.join(cmd)}")
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            raise TuneError(f"{name}: the run failed (exit {p.returncode}): {shlex.join(cmd)}\n  " + "\n  ".join(tail))
        layout, rows, params = None, [], {}
        for line in p.stdout.splitlines():
            f = line.strip().split(",")
            if f[0] == "param" and len(f) == 3:
                value = float(f[2])
                if math.isfinite(value) and value > 0:
                    params[f[1]] = value
            elif f[0] == "layout" and len(f) == 4:
                layout = {"nodes": int(f[1]), "ppn": int(f[2]), "ranks": int(f[3])}
            elif f[0] == "size" and len(f) == 11:
                rows.append({"bytes": int(f[1]), "reps": int(f[2]), "p25": float(f[3]), "median": float(f[4]),
                             "p75": float(f[5]), "native_p25": float(f[6]), "native": float(f[7]),
                             "native_p75": float(f[8]), "served": float(f[9]), "right": int(f[10])})
        if layout is None and probe_args is None:
            raise TuneError(f"{name}: the probe printed no layout: {shlex.join(cmd)}")
        return layout, rows, params

    def simulated_probe(self, name, settings, sizes, shape, probe_args):
        """run_probe on the simulated cluster (--simulate): the candidate and SMPI's own allreduce under the selector
        of --mpi, each at `sizes`, in simulated time. A simulation repeats itself exactly, so each figure is its own
        quartiles (every win is beyond the noise) and the library's time at a size is simulated once. The results'
        correctness is not checked here (the probe's buffers are shared at 1 MiB and more): the SMPI build's tests
        check every path's sums (test/smpi)."""
        cluster = self.cluster
        nodes, ppn = cluster.args.nodes, (1 if shape == "one-per-node" else cluster.args.ppn)
        layout = {"nodes": nodes, "ppn": ppn, "ranks": nodes * ppn}
        if probe_args == ["--params"]:
            return layout, [], cluster.machine_params()
        selector = {"mpich": "mpich", "openmpi": "ompi"}[self.state["flavor"]]
        one_per_host = shape == "one-per-node"
        missing = [s for s in sizes if (shape, s) not in self.native_sim]
        if missing:
            times, _ = cluster.run(selector, {}, missing, one_per_host, with_arshim=False, what=f"{name}: native")
            self.native_sim.update({(shape, s): t for s, t in times.items()})
        times, served = cluster.run(selector, settings, sizes, one_per_host, what=name)
        rows = []
        for s in sizes:
            t, n = times[s], self.native_sim[(shape, s)]
            rows.append({"bytes": s, "reps": cluster.args.iterations, "p25": t, "median": t, "p75": t,
                         "native_p25": n, "native": n, "native_p75": n,
                         "served": served[s] if settings.get("ARSHIM_PATH", "native") != "native" else -1.0,
                         "right": 1})
        return layout, rows, {}

    def measure(self, jobs, phase, launch_round=0, whole=False):
        """Runs (name, settings, decision, sizes, shape) jobs in order while the budget lasts (all of them with
        `whole`, saying once that the budget is spent), with progress and ETA; their measurements are marked with
        `launch_round` (1: a confirming launch, tuned_table.h)."""
        said_over = False
        for i, (name, settings, decision, sizes, shape) in enumerate(jobs):
            key = f"{phase}:{name}:{','.join(map(str, sizes))}" + ("" if shape == "all" else f":{shape}")
            if key in self.state["runs_done"]:
                continue
            mean = sum(self.run_seconds) / len(self.run_seconds) if self.run_seconds else 0
            left = self.args.budget - self.elapsed()
            if whole and self.run_seconds and mean > left and not said_over:
                said_over = True
                print(f"arshim tune: budget reached ({self.elapsed():.0f} s of {self.args.budget:.0f} s) with "
                      f"{len(jobs) - i} {phase} runs left: they run all the same (without them the table would "
                      "leave candidates unmeasured)", file=sys.stderr)
            elif not whole and self.run_seconds and mean > left:
                print(f"arshim tune: budget reached ({self.elapsed():.0f} s of {self.args.budget:.0f} s): "
                      f"{len(jobs) - i} {phase} runs left out", file=sys.stderr)
                return False
            eta = mean * (len(jobs) - i)
            where = "" if shape == "all" else f" on {shape}"
            print(f"arshim tune: [{phase} {i + 1}/{len(jobs)}, {self.elapsed():.0f} s, ETA {eta:.0f} s] {name}{where} "
                  f"at {len(sizes)} sizes", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            layout, rows, _ = self.run_probe(name, settings, sizes, shape)
            self.run_seconds.append(time.monotonic() - t0)
            for r in rows:
                if r["right"] != 1:
                    raise TuneError(f"{name} at {r['bytes']} B returned a wrong result: not tuning on a broken path")
                if decision["path"] != "native" and 0 <= r["served"] < 0.9:
                    print(f"arshim tune: {name} at {r['bytes']} B: the path served {r['served']:.0%} of the calls "
                          "(declined); not a candidate there", file=sys.stderr)
                    continue
                m = dict(decision)
                m.update(nodes=layout["nodes"], ppn=layout["ppn"], round=launch_round, **{k: r[k] for k in (
                    "bytes", "p25", "median", "p75", "native_p25", "native", "native_p75")})
                self.state["measurements"].append(m)
            self.state["runs_done"].append(key)
            self.save()
        return True

    def request(self, extra=None):
        layout = self.state["layout"]
        nodes = layout["nodes"]
        # Every small node count (a job on 3, 5 or 6 nodes is common), then powers of two up to 512.
        predict_nodes = sorted(set(range(1, 9)) | {16, 32, 64, 128, 256, 512} | {nodes})
        req = {"flavor": self.state["flavor"], "max_bytes": self.args.max, "predict_nodes": predict_nodes,
               "predict_ppn": sorted({layout["ppn"], 1}), "measurements": self.state["measurements"],
               "params": self.state.get("params") or {}}
        req.update(extra or {})
        path = self.args.out + ".samples.json"
        files.write_file(path, json.dumps(req))
        return path

    def policy_tool(self, *args):
        p = subprocess.run([self.args.arshim, "policy", "tune-table"] + list(args), capture_output=True, text=True)
        if p.returncode != 0:
            raise TuneError("arshim policy tune-table failed: " + (p.stderr.strip() or p.stdout.strip()))
        return p

    def tune(self):
        # Phase 0: the layout (one short native run).
        if self.state["layout"] is None:
            layout, _, _ = self.run_probe("layout", {"ARSHIM_PATH": "native"}, [8])
            self.state["layout"] = layout
            self.save()
        layout = self.state["layout"]
        print(f"arshim tune: {self.state['flavor']}, {layout['ranks']} ranks on {layout['nodes']} node(s) x "
              f"{layout['ppn']}; budget {self.args.budget:.0f} s", file=sys.stderr)
        # The machine parameters measured directly (memcpy, the library's reduction, ping-pongs within and across
        # nodes): the model's fit starts from them and stays near them (policy/model_fit.h ParamBit).
        if not isinstance(self.state.get("params"), dict):
            _, _, params = self.run_probe("params", {"ARSHIM_PATH": "native"}, [], probe_args=["--params"])
            self.state["params"] = params
            self.save()
            shown = {"copy_bw": ("memcpy", 1e-9, "GB/s"), "gamma": ("reduction", 1e-9, "GB/s"),
                     "intra_latency": ("latency on a node", 1e6, "us"), "alpha": ("latency across nodes", 1e6, "us"),
                     "net_bw": ("bandwidth across nodes", 1e-6, "MB/s")}
            print("arshim tune: machine: " + ", ".join(f"{label} {params[k] * scale:.3g} {unit}" for k, (
                label, scale, unit) in shown.items() if k in params), file=sys.stderr)
        # The shapes measured: every rank, and one rank per node when the launch has several of each (a job with
        # one rank per node -- one per GPU, or hybrid MPI+threads -- decides differently: no node shared memory).
        shapes = {"all": (layout["nodes"], layout["ppn"])}
        if layout["nodes"] > 1 and layout["ppn"] > 1:
            shapes["one-per-node"] = (layout["nodes"], 1)

        def jobs_at(sizes_of):
            out = []
            for shape, (nodes, ppn) in shapes.items():
                for (n, st, d, lo, hi) in candidates(ppn, nodes):
                    sizes = [s for s in sizes_of(shape) if s >= lo and (hi is None or s <= hi)]
                    if sizes:
                        out.append((n, st, d, sizes, shape))
            return out

        coarse = [s for s in SIZES_COARSE if s <= self.args.max]
        # Phase 1 runs whole even past the budget: a table whose sweep left a candidate or a shape out would decide
        # those buckets without having measured them (on a simulated 16 x 4 a 20-minute budget once stopped it before
        # the 1 MiB segments and the one-per-node shape, and the table kept 256 KiB segments at 4 MiB, 1.14x slower).
        self.measure(jobs_at(lambda shape: coarse), "coarse", whole=True)
        # Its wins on short calls again, each candidate in a launch of its own, before the budget goes to refining.
        self.confirm(shapes)
        # Phase 2: where the fitted model's ranking changes, and the user's own sizes, per shape. The plan is kept in
        # the state: a resumed run measures the sizes planned, not those a refit over more measurements would pick.
        refine = self.state.get("refine")
        if not valid_plan(refine, shapes):
            p = self.policy_tool("--samples", self.request(), "--crossovers")
            fit = json.loads(p.stdout)
            user_sizes = set(self.stats_sizes())
            refine = {}
            for shape, (nodes, ppn) in shapes.items():
                sizes = {c["bytes"] // 4 * 4 for c in fit["crossovers"]
                         if 8 <= c["bytes"] <= self.args.max and c["nodes"] == nodes and c["ppn"] == ppn}
                refine[shape] = sorted((sizes | user_sizes) - set(coarse))
            self.state["refine"] = refine
            self.save()
            if any(refine.values()):
                listed = "; ".join(f"{shape}: {' '.join(size_text(s) for s in sizes)}"
                                   for shape, sizes in refine.items() if sizes)
                print(f"arshim tune: model after the coarse sweep: median error {fit['median_error']:.0%}; measuring "
                      f"the sizes where the model's or the measurements' ranking changes: {listed}", file=sys.stderr)
        if any(refine.values()):
            self.measure(jobs_at(lambda shape: refine[shape]), "refine")
            self.confirm(shapes)
        # The table.
        origin = {"made_by": "arshim tune", "flavor": self.state["flavor"],
                  "layout": f"{layout['nodes']} node(s) x {layout['ppn']}",
                  "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "command": self.command_text(), "isa": cpu_isa(),
                  "probed": " ".join(f"{k}={v:.4g}" for k, v in sorted((self.state.get("params") or {}).items()))}
        p = self.policy_tool("--samples", self.request({"origin": origin}))
        for line in p.stderr.strip().splitlines():
            print(line, file=sys.stderr)
        files.write_file(self.args.out, p.stdout)
        out = escape(self.args.out)
        print(f"arshim tune: wrote {out} in {self.elapsed():.0f} s. Use it with ARSHIM_POLICY={out} "
              "ARSHIM_POLICY_MODE=prepend (the built-in rules keep deciding the layouts it does not cover); "
              f"`arshim policy explain --policy {out} --bytes N --ppn P --nodes H` shows its predictions",
              file=sys.stderr)

    def command_text(self):
        if self.cluster is not None:
            return f"arshim tune --simulate {shlex.quote(self.args.simulate)} ({self.cluster.describe()})"
        return "arshim tune -- " + shlex.join(self.args.command)

    def confirm(self, shapes):
        """Measures again, in a launch of its own per candidate, every win beyond the noise on a call shorter than
        CONFIRM_BELOW_US that no confirming launch has measured yet; the table takes a win only where every launch
        that measured there saw the candidate faster (policy/tuned_table.cpp confirmed_win). A win the budget leaves
        unconfirmed stands on its one launch, and the tuner says so."""
        measured = self.state["measurements"]

        def of(m, nodes, ppn, decision, launch_round):
            return m["nodes"] == nodes and m["ppn"] == ppn and m.get("round", 0) == launch_round and all(
                m.get(k) == v for k, v in decision.items())

        jobs = []
        for shape, (nodes, ppn) in shapes.items():
            for (name, settings, decision, _, _) in candidates(ppn, nodes):
                done = {m["bytes"] for m in measured if of(m, nodes, ppn, decision, 1)}
                wins = {m["bytes"] for m in measured if of(m, nodes, ppn, decision, 0) and
                        m["p75"] < m["native_p25"] and m["native"] < CONFIRM_BELOW_US}
                if wins - done:
                    jobs.append((name, settings, decision, sorted(wins - done), shape))
        if not jobs:
            return
        print(f"arshim tune: confirming {sum(len(j[3]) for j in jobs)} wins on short calls in launches of their own",
              file=sys.stderr)
        complete = self.measure(jobs, "confirm", launch_round=1)
        again = [m for m in measured if m.get("round", 0) == 1]
        held = sum(1 for m in again if m["median"] < m["native"])  # confirmed_win's test of a confirming launch
        left = "" if complete else "; the budget left the others unconfirmed (they stand on one launch)"
        print(f"arshim tune: confirmed {held} of {len(again)} wins on short calls{left}", file=sys.stderr)

    def stats_sizes(self):
        """The message sizes of the statistics log of --from-stats (validated by main before anything ran): each
        bucket's average call size, in whole MPI_FLOAT elements as the probe reduces."""
        sizes = [b["bytes"] // b["calls"] // 4 * 4 for b in self.args.stats_log["buckets"] if b["calls"] > 0] \
            if self.args.stats_log else []
        return [s for s in sizes if 8 <= s <= self.args.max]


def check_outputs(args):
    """--out and the files beside it (OUT.state.json, OUT.samples.json), before anything is measured: names
    files.write_file can write (a directory, FIFO or device there is refused; a symbolic link is replaced, never
    followed). With --resume the state file is read first (it must be a regular file)."""
    files.check_output(args.out, "--out")
    for suffix in STATE_SUFFIXES:
        path = args.out + suffix
        problem = files.output_problem(path)
        if problem:
            raise TuneError(f"--out {escape(args.out)}: its {suffix[1:]} file {escape(path)}: {problem}")


def valid_plan(refine, shapes):
    """Whether a state file's refine plan is one this run can follow: every shape of the layout, whole sizes
    (a state file is input like any other)."""
    return isinstance(refine, dict) and set(refine) == set(shapes) and all(
        isinstance(sizes, list) and all(isinstance(b, int) and 0 < b <= MAX_INPUT_BYTES for b in sizes)
        for sizes in refine.values())


def cpu_isa():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        return "unknown"
    return "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "scalar"


def main(argv=None):
    parser = options.Parser(prog="arshim tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tuned.toml", help="the tuned table (default tuned.toml); arshim tune also "
                        "writes OUT.state.json and OUT.samples.json beside it")
    parser.add_argument("--budget", default="5m", help="time budget, e.g. 300, 90s, 5m (default 5m)")
    parser.add_argument("--max", default="64M", type=options.size(SMALLEST_MAX, LARGEST_MAX),
                        help="largest message size measured (default 64M; 8 to 8G)")
    parser.add_argument("--from-stats", help="an ARShim statistics log (ARSHIM_STATS) whose sizes to measure too")
    parser.add_argument("--resume", action="store_true", help="continue from OUT.state.json")
    parser.add_argument("--mpi", choices=["mpich", "openmpi"], help="MPI flavor (default: from the launcher)")
    parser.add_argument("--wrap", help="a prefix for every launch, e.g. the emulated cluster's "
                        "'arshim cluster wrap --ppn 2 --' (docs/cluster.md)")
    parser.add_argument("--simulate", metavar="CLUSTER", help="tune on a cluster simulated with SimGrid's SMPI instead "
                        "of a launch: arshim simulate's cluster options, e.g. \"--nodes 2 --ppn 2 --preset rig\"; "
                        "--mpi picks SMPI's selector (docs/scale.md)")
    parser.add_argument("--seconds-per-size", type=options.number(0, 3600, low_open=True), default=1.0,
                        help=argparse.SUPPRESS)
    parser.add_argument("--run-timeout", type=options.number(0, 7 * 86400, low_open=True), default=600,
                        help=argparse.SUPPRESS)
    parser.add_argument("--arshim", required=True, help=argparse.SUPPRESS)
    parser.add_argument("--probe-mpich", help=argparse.SUPPRESS)
    parser.add_argument("--probe-openmpi", help=argparse.SUPPRESS)
    parser.add_argument("--simulate-probe-native", help=argparse.SUPPRESS)
    parser.add_argument("--simulate-probe-arshim", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the launcher line without a program")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    args.cluster = None
    try:
        if args.simulate is not None and (command or args.wrap):
            raise TuneError("--simulate measures a simulated cluster: give it no launcher line and no --wrap")
        if args.simulate is None and not command:
            raise TuneError("no launcher line: arshim tune [options] -- mpirun -n 4 (the tuner adds the program)")
        args.command = command
        args.budget = parse_duration(args.budget)
        check_outputs(args)
        if args.wrap is not None:
            try:
                if not shlex.split(args.wrap):
                    raise ValueError("no command")
            except ValueError as e:
                raise TuneError(f"--wrap {escape(args.wrap, 120)}: not a command prefix ({e}), e.g. "
                                "'arshim cluster wrap --ppn 2 --'") from None
        if args.simulate is not None and args.mpi is None:
            raise TuneError("--simulate: pass --mpi mpich|openmpi (the SMPI selector whose allreduce is the library's)")
        if args.mpi is None:
            args.mpi = launcher_flavor(command[0])
            if args.mpi is None:
                raise TuneError(f"{escape(command[0])}: cannot tell which MPI it launches; pass --mpi mpich|openmpi")
        # The log is checked before anything is measured: a bad one found after minutes of measuring is no help.
        try:
            args.stats_log = statslog.load(args.from_stats) if args.from_stats else None
        except files.InputError as e:
            raise TuneError(f"--from-stats {e}") from None
        args.probe = {"mpich": args.probe_mpich, "openmpi": args.probe_openmpi}
        if args.simulate is not None:
            args.cluster = simulate.SimulatedCluster(args.simulate, {"native": args.simulate_probe_native,
                                                                    "arshim": args.simulate_probe_arshim})
            print(f"arshim tune: measuring on a {args.cluster.describe()}, SMPI selector of {args.mpi}",
                  file=sys.stderr)
        elif not args.probe[args.mpi]:
            raise TuneError(f"no arshim-tune-probe-{args.mpi}: ARShim was built without {args.mpi}")
        Tuner(args).tune()
    except ToolError as e:
        print(f"arshim tune: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("arshim tune: interrupted; what was measured is kept: --resume continues", file=sys.stderr)
        return 130
    finally:
        if args.cluster is not None:
            args.cluster.close()
    return 0
