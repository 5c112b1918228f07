"""The MPI test harness: runs an MPI program under one flavor with ARShim preloaded (or not), and hands the test what
the run produced as data: the exit status, the output, the statistics log (parsed and validated against its JSON
schema), and every rank's trace (ARSHIM_TRACE: what ARShim decided, one JSON object per line). Tests assert on those,
not on the wording of log lines (docs/architecture.md; test/README.md "The MPI harness").

Used by the pytest files under test/ (through conftest.py, which makes a Harness from the command line meson gives).
"""
import dataclasses
import glob
import json
import os
import subprocess
import tempfile

import jsonschema  # python3-jsonschema

SOURCE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMA_FILE = os.path.join(SOURCE, "tools", "report", "arshim-stats-1.schema.json")
MPIRUN_SH = os.path.join(SOURCE, "test", "mpi", "mpirun.sh")


@dataclasses.dataclass
class Run:
    """One MPI run: what it printed and left behind."""
    command: list
    returncode: int
    output: str                 # stdout, then stderr (kept apart: a launcher may cut a line of one with the other)
    stats: dict = None          # the statistics log (ARSHIM_STATS), validated; None when not asked for
    traces: dict = None         # world rank -> [events]; each event a dict with "event" and "rank"
    stdout: str = None          # the program's standard output alone (where its JSON results are)

    def events(self, name, rank=None):
        """Every trace event called `name` (of one rank, or of all ranks in rank order)."""
        ranks = [rank] if rank is not None else sorted(self.traces or {})
        return [e for r in ranks for e in (self.traces or {}).get(r, []) if e.get("event") == name]

    def program_objects(self, first_key):
        """The program's JSON objects whose first key is `first_key`, in output order (test programs print their results
        as one JSON object on a line of their output, e.g. {"checker": {...}} or {"ranks": 4, "ok": true, ...})."""
        found = []
        decoder = json.JSONDecoder()
        for line in (self.stdout if self.stdout is not None else self.output).splitlines():
            # Objects found wherever they start, not only at the line's start: Open MPI 5's launcher (PRRTE) writes a
            # rank's stdout and stderr to one stream in pieces, so a result can sit inside a line of ARShim's. The
            # search goes on after each object decoded, so objects nested in one are not taken for results.
            at = line.find('{"')
            while at >= 0:
                try:
                    obj, end = decoder.raw_decode(line, at)
                except ValueError:  # not JSON, or a result cut by other output: no result
                    at = line.find('{"', at + 1)
                    continue
                if isinstance(obj, dict) and next(iter(obj), None) == first_key:
                    found.append(obj)
                at = line.find('{"', end)
        return found

    def program_jsons(self, key):
        """The program's own JSON lines holding `key` ({"key": value}), in output order: each one's value of `key`."""
        return [obj[key] for obj in self.program_objects(key)]

    def program_json(self, key):
        """The program's last JSON line holding `key`: its value of `key`; None when it printed none."""
        found = self.program_jsons(key)
        return found[-1] if found else None

    def trace_totals(self, name, field):
        """`field` of every rank's `name` events, summed (e.g. the "phases" events' ring_steps over all ranks)."""
        return sum(e.get(field, 0) for e in self.events(name))

    def describe(self):
        """For assertion messages: the command, the exit status and the output's tail."""
        return f"$ {' '.join(self.command)}\nexit {self.returncode}\n{self.output[-4000:]}"


class Harness:
    """Knows the build: the shim libraries, the test programs, the yield helper. One per pytest session."""

    def __init__(self, build, flavor):
        self.build = os.path.realpath(build)
        self.flavor = flavor
        self.yield_lib = os.path.join(self.build, "test", "libarshim-test-yield.so")
        with open(SCHEMA_FILE) as f:
            self.schema = json.load(f)
        self._bugs_in_force = None

    def library_bugs_in_force(self):
        """The ids of the known library bugs ARShim's table has in force for this flavor's MPI library (the keys of
        a statistics log's library_bugs), from one short run of the example; the same for the whole session. A test
        whose control expects the library's own wrong results expects them exactly where an entry is in force."""
        if self._bugs_in_force is None:
            run = self.run(2, os.path.join(self.build, "examples", f"allreduce_sweep-{self.flavor}"),
                           args=["--max", "64"], env={"ARSHIM_PATH": "native"}, stats=True, trace=False)
            assert run.returncode == 0 and run.stats is not None, run.describe()
            self._bugs_in_force = sorted(run.stats["library_bugs"])
        return self._bugs_in_force

    def shim(self, variant=""):
        """The preload library of this flavor (variant "faulty": the test-only library with fault hooks)."""
        if variant == "faulty":
            return os.path.join(self.build, "test", "verify", f"libarshim-faulty-{self.flavor}.so")
        return os.path.join(self.build, "shim", f"libarshim-{self.flavor}.so")

    def program(self, relative):
        """A test program of this flavor: relative to the build directory, "-<flavor>" appended."""
        return os.path.join(self.build, f"{relative}-{self.flavor}")

    def check_internode_steps(self, name, np, path, ppn, settings, args, kind, taken):
        """test/mpi/check_allreduce on `np` ranks in virtual nodes of `ppn`, `path` forced, with `settings`: every
        result right, some inter-node step counted (ARSHIM_PHASE_TIMES' "phases" events, summed over every rank), and
        some (`taken`) or none of them counted as `kind` ("ring_steps", "doubling_steps", "rabenseifner_steps")."""
        env = {"CHECK_FLAVOR": self.flavor, "CHECK_EXPECT_SHIM": 1, "CHECK_NO_LIBRARY_BUGS": 1,
               "CHECK_EXPECT_PATH": path, "ARSHIM_PATH": path, "ARSHIM_VIRTUAL_PPN": ppn, "ARSHIM_PHASE_TIMES": 1,
               **settings}
        run = self.run(np, self.program("test/mpi/check_allreduce"), args=args, env=env, timeout=300)
        assert run.returncode == 0, run.describe()
        out = run.program_json("check_allreduce")
        assert out is not None and out["ranks"] == np and out["checks"] > 0 and out["failures"] == 0, run.describe()
        steps, counted = run.trace_totals("phases", "internode_steps"), run.trace_totals("phases", kind)
        assert steps > 0, f"{name}: no inter-node step counted: {run.events('phases')}"
        if taken:
            assert counted > 0, f"{name}: no inter-node step counted as {kind} ({steps} steps)"
        else:
            assert counted == 0, f"{name}: {counted} of {steps} inter-node steps counted as {kind}"

    def run(self, np, program, args=(), env=None, shim=True, stats=False, trace=True, timeout=240, directory=None):
        """Runs `program` on `np` ranks. `env`: ARSHIM_* and other variables for every rank. `stats`: ask for the
        statistics log and return it parsed and validated. `trace`: ask for every rank's trace. `shim`: True (this
        flavor's library), False (none), or a path."""
        env = dict(env or {})
        if directory is None:  # a directory of its own, gone when the run's files are read (6 334 were left in /tmp)
            with tempfile.TemporaryDirectory(prefix="arshim-harness-") as own:
                return self.run(np, program, args, env, shim, stats, trace, timeout, own)
        stats_path = os.path.join(directory, "stats.json")
        if stats:
            env.setdefault("ARSHIM_STATS", stats_path)
            env.setdefault("ARSHIM_STATS_SUMMARY", "0")
        if trace and shim:
            env.setdefault("ARSHIM_TRACE", os.path.join(directory, "trace-%r.jsonl"))
        library = "none" if not shim else shim if isinstance(shim, str) else self.shim()
        command = [MPIRUN_SH, self.flavor, str(np), library] + [f"{k}={v}" for k, v in env.items()] + \
                  ["--", program] + [str(a) for a in args]
        launch_env = dict(os.environ)
        for name in list(launch_env):
            if name.startswith("ARSHIM_"):
                del launch_env[name]  # only what the test asks for reaches the ranks
        launch_env["ARSHIM_TEST_YIELD_LIB"] = self.yield_lib
        launch_env["ARSHIM_TEST_TIMEOUT"] = str(timeout)
        # Two pipes, not one: a launcher may forward the ranks' streams in pieces (Open MPI 5's cut a result line with
        # ARShim's stderr on Debian 13); program_jsons also finds a result inside another line.
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace", env=launch_env, timeout=timeout + 30)
        run = Run(command, proc.returncode, proc.stdout + proc.stderr, stdout=proc.stdout)
        if stats and os.path.exists(env["ARSHIM_STATS"]):
            with open(env["ARSHIM_STATS"]) as f:
                run.stats = json.load(f)
            jsonschema.validate(run.stats, self.schema)
        if trace and shim:
            run.traces = read_traces(os.path.join(directory, "trace-*.jsonl"))
        return run


def read_traces(pattern):
    """world rank -> that rank's events, from files named by ARSHIM_TRACE with %r."""
    traces = {}
    for path in glob.glob(pattern):
        with open(path, errors="replace") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        if not lines or lines[0].get("trace") != "arshim-trace/1":
            raise AssertionError(f"{path}: not an ARShim trace")
        traces[lines[0]["rank"]] = lines[1:]
    return traces


def decision_key(event):
    """What identifies a key's decision across ranks: its communicator, size range, datatype class and op."""
    return (event.get("communicator"), event.get("bytes_min", event.get("bucket")), event.get("datatype"), event.get("op"))
