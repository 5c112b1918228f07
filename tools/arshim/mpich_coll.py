"""arshim mpich-tests: MPICH's own MPI_Allreduce tests (test/mpi/coll of MPICH 4.0.2's source) built against each
MPI flavor and run natively and with ARShim preloaded in several configurations (docs/verify.md, "Run it on real test
suites"). A development tool: it runs from a source or build tree (test/mpi/mpirun.sh launches every run).

  arshim mpich-tests [--source PATH] [--workdir DIR] [--flavors LIST] [--configs LIST] [--tests LIST] [--list] ...

Pure functions (the test list, the runs, the command lines, judging a log, the tally) are unit-tested without MPI
in test/tools/test_mpich_coll.py; the rest fetches, builds and runs.
"""
import argparse
import dataclasses
import datetime
import fnmatch
import glob
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import ToolError, files, launchers, options, statslog
from .flavors import FLAVORS
from .text import escape

PROG = "arshim mpich-tests"
EXPECTED_VERSION = "4.0.2"
# Configuration -> the ARShim settings it forces (native: no preload at all).
CONFIG_VARS = {
    "native": (),
    "default": (),
    "pipelined-1K": ("ARSHIM_PATH=pipelined", "ARSHIM_SEGMENT_BYTES=1K"),
    "multileader": ("ARSHIM_PATH=multileader",),
    "multileader-vppn2": ("ARSHIM_PATH=multileader", "ARSHIM_VIRTUAL_PPN=2"),
}
CONFIGS = tuple(CONFIG_VARS)
CHECK_VARS = ("ARSHIM_VERIFY=1000", "ARSHIM_CHECK_ARGS=1", "ARSHIM_STATS_SUMMARY=1")  # every ARShim configuration
HARNESS_SOURCES = ("mtest.c", "mtest_common.c", "dtypes.c", "mtest_single.c")  # from test/mpi/util
# What is unpacked from the source tarball: the tests, their harness and its headers (MPICH itself is not built).
TAR_MEMBERS = ("*/test/mpi/coll/*", "*/test/mpi/util/*", "*/test/mpi/include/*", "*/test/mpi/dtpools/include/*",
               "*/test/mpi/version.m4")
TARBALL_PATTERNS = ("mpich_*.orig.tar.*", "mpich-*.tar.*")
DEFAULT_TIMEOUT = "240"
LOG_LIMIT = 64 << 20     # a run's log is judged on its first 64 MiB (a test that prints more has failed anyway)
SOURCE_LIMIT = 16 << 20  # testlist.in, a test's source, version.m4
WAIT_AFTER_TERM = 120    # seconds a stopped run gets to end (mpirun.sh's `timeout -k 10` kills it well before)
LIBRARY_LIMIT = 1 << 30  # a library copied into the work directory
MAX_NP = 1024            # --max-np
MAX_TIMEOUT_S = 7 * 86400

# The subset of test/mpi/configure's mpitestconf.h that the harness and these tests read (Linux, gcc, x86-64).
MPITESTCONF_H = """\
/* Written by arshim mpich-tests (tools/arshim/mpich_coll.py) in place of test/mpi/configure's output. */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_USLEEP 1
#define HAVE_STRDUP 1
#define STDC_HEADERS 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_DOUBLE 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_VOID_P 8
#define POINTERINT_t long
/* single-threaded tests only (util/mtest_single.c) */
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
#endif
"""


@dataclasses.dataclass(frozen=True)
class KnownBug:
    """A reduction bug of an installed MPI library (docs/library-bugs.md) that explains MPICH's "Error for type T
    and op O" lines in a native run."""
    flavor: str
    ops: tuple
    types: str  # a regular expression on the datatype's name
    description: str


KNOWN_BUGS = (
    KnownBug("mpich", ("MPI_MIN", "MPI_MAX"), r"^MPI_(UNSIGNED(_CHAR|_SHORT|_LONG|_LONG_LONG)?|UINT(8|16|32|64)_T)$",
             "MPICH 4.0.x compares unsigned integers as signed in MIN/MAX (pmodels/mpich#6083)"),
    KnownBug("openmpi", ("MPI_SUM",),
             r"^MPI_(U?INT(8|16)_T|SIGNED_CHAR|UNSIGNED_CHAR|SHORT|UNSIGNED_SHORT|INTEGER[12])$",
             "Open MPI 4.1.x op/avx saturates 8/16-bit integer SUM (ompi#8045)"),
    KnownBug("openmpi", ("MPI_MIN", "MPI_MAX"), r"^MPI_UNSIGNED_LONG$",
             "Open MPI 4.1.2-4.1.4 compares MPI_UNSIGNED_LONG as signed in MIN/MAX (ompi#10525)"),
    KnownBug("openmpi", ("MPI_MIN", "MPI_MAX"), r"^MPI_OFFSET$",
             "Open MPI 4.1.x op/avx compares MPI_OFFSET as unsigned in MIN/MAX"),
)


class CheckError(ToolError):
    """A usage or setup problem: one line `arshim mpich-tests: error: ...`, exit status 2."""


def note(message):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def say(message):
    print(f"==> {message}", flush=True)


def elapsed(since):
    return f"{time.monotonic() - since:.1f}"


# ------------------------------------------------------------------------------------------------------------------
# Options

def split_list(text, allowed, option, what):
    """A comma-separated list of names from `allowed`, in the order given, each once."""
    items = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item not in allowed:
            raise CheckError(f"{option}: unknown {what} '{escape(item, 120)}' (allowed: {', '.join(allowed)})")
        if item not in items:
            items.append(item)
    if not items:
        raise CheckError(f"{option}: empty list")
    return items


def positive_int(option, text, what, limit):
    if not re.fullmatch(r"[1-9][0-9]{0,9}", text or "") or int(text) > limit:
        raise CheckError(f"{option} wants a positive {what} of at most {limit}, got '{escape(text, 120)}'")
    return int(text)


def check_tests(text):
    """--tests: names of test programs (allred, allred2.c), checked before anything is unpacked or built; whether
    the suite has them is found out once it is there (select_programs)."""
    if text is None:
        return None
    for name in (t.strip() for t in text.split(",")):
        if name and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_+-]*(\.c)?", name):
            raise CheckError(f"--tests: '{escape(name, 120)}' is no test program name of test/mpi/coll (allowed: "
                             "letters, digits, _, + and -, e.g. allred,allred2)")
    return text


def check_workdir(path):
    """--workdir before anything is created: an existing directory (or a symbolic link to one), or a name to create
    in one."""
    if path is None:
        return
    if os.path.lexists(path) and not os.path.isdir(path):
        kind = "a symbolic link" if os.path.islink(path) else "a regular file" if os.path.isfile(path) else \
            files.kind(os.lstat(path).st_mode)
        raise CheckError(f"--workdir {escape(path)}: {kind}, not a directory (allowed: a directory, or a name to "
                         "create one)")


def setting(text):
    """--set VAR=VALUE: an environment assignment the launchers can pass on (-x / -genv)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, re.S):
        raise argparse.ArgumentTypeError(f"wants VAR=VALUE, got '{text}'")
    return text


def nonempty(text):
    if not text:
        raise argparse.ArgumentTypeError("needs a value")
    return text


# ------------------------------------------------------------------------------------------------------------------
# The test list (coll/testlist.in) and the runs it asks for

@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a test program: its ranks after the cap, the ranks testlist.in lists, its arguments and its
    environment settings (arg=... and env=... of the list)."""
    name: str
    np: int
    listed: int
    args: tuple = ()
    envs: tuple = ()

    @property
    def label(self):
        """allred(-count=10): the program and its arguments, as the output and the log names show it."""
        return f"{self.name}({' '.join(self.args)})" if self.args else self.name


def read_source_text(path):
    """A file of the MPICH source (bounded, bytes that are no UTF-8 replaced): it comes from a tarball the user
    passed, so it is read like any file the tools did not write."""
    try:
        return files.read_bounded(path, SOURCE_LIMIT).decode("utf-8", "replace")
    except files.InputError as e:
        raise CheckError(str(e)) from None


def in_testlist(testlist, name):
    """Whether a line of testlist.in starts with the program's name (a run of it is listed)."""
    return re.search(rf"^[ \t]*{re.escape(name)}([ \t]|$)", testlist, re.M) is not None


def calls_allreduce(source):
    """Whether a test's C source calls MPI_Allreduce( itself (not MPI_Iallreduce, not a name that contains it)."""
    return re.search(r"(^|[^A-Za-z0-9_])MPI_Allreduce[ \t\f\v\r]*\(", source, re.M) is not None


def testlist_entries(testlist):
    """(name, np, args, envs) of each line of testlist.in, comments removed; lines without a rank count (blank
    lines, comments) are left out. A line behind a configure substitution (@largetest@gather_big) names no
    program, so no run comes of it."""
    entries = []
    for line in testlist.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 2 or not words[1].isdigit():
            continue
        args = tuple(w[len("arg="):] for w in words[2:] if w.startswith("arg="))
        envs = tuple(w[len("env="):] for w in words[2:] if w.startswith("env="))
        entries.append((words[0], int(words[1]), args, envs))
    return entries


def plan_runs(programs, entries, max_np):
    """The runs of the programs, in program order then list order: one per distinct (program, ranks after the cap,
    arguments, environment); a run listed with more ranks than max_np runs with max_np."""
    runs, seen = [], set()
    for program in programs:
        for name, np_, args, envs in entries:
            if name != program:
                continue
            key = (name, min(np_, max_np), args, envs)
            if key not in seen:
                seen.add(key)
                runs.append(Run(name, min(np_, max_np), np_, args, envs))
    return runs


def run_list_line(run):
    """A line of --list: the run, its ranks, what testlist.in asked for when the cap changed it, its settings."""
    capped = f" (testlist: {run.listed})" if run.listed != run.np else ""
    env = f" env: {' '.join(run.envs)}" if run.envs else ""
    return f"  {run.label:<28} np={run.np}{capped}{env}"


# ------------------------------------------------------------------------------------------------------------------
# Command lines

def config_vars(config, np_):
    """The ARShim settings of a configuration, or None when it does not apply to this rank count (2-rank virtual
    nodes need an even count, or at least 4 ranks)."""
    if config == "multileader-vppn2" and not (np_ >= 4 or np_ % 2 == 0):
        return None
    return list(CONFIG_VARS[config])


def run_command(mpirun_sh, flavor, run, config, shim_lib, extra_vars=(), stats_path=None):
    """The test/mpi/mpirun.sh line of one run (None when the configuration does not apply): the list's env=
    settings, and for an ARShim configuration the library, its settings, the checks, --set's and the statistics log
    the run is judged on (ARSHIM_STATS=stats_path)."""
    forced = config_vars(config, run.np)
    if forced is None:
        return None
    settings = list(run.envs)
    lib = "none"
    if config != "native":
        lib = shim_lib
        settings += forced + list(CHECK_VARS) + list(extra_vars)
        if stats_path:
            settings.append(f"ARSHIM_STATS={stats_path}")
    return [mpirun_sh, flavor, str(run.np), lib, *settings, "--", f"./{run.name}", *run.args]


def log_name(run, config):
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", run.label) + f".{config}.log"


def stats_name(run, config):
    """The statistics log of an ARShim run, beside its output log: allred_-count=10_.default.stats.json."""
    return log_name(run, config)[:-len(".log")] + ".stats.json"


# ------------------------------------------------------------------------------------------------------------------
# Judging a run from its log

# Lines ARShim prints for people when verify or the argument check finds something, on the rank that found it: what
# they contain, the reason their number gives. They can only add a reason: the counts a run passes on come from its
# statistics log.
ALARM_LINES = (("MISMATCH", "{} MISMATCH lines"), ("arguments differ", "{} 'arguments differ' lines"))
# The modes every ARShim run turns on (CHECK_VARS), as the statistics log names them: section, the setting, its name
# in a reason.
CHECKED_MODES = (("verify", "ARSHIM_VERIFY", "verify"), ("argument_check", "ARSHIM_CHECK_ARGS", "argument check"))


def first_match(pattern, log):
    match = re.search(pattern, log, re.M)
    return match.group(0) if match else None


def read_stats(path):
    """An ARShim run's statistics log (ARSHIM_STATS), read and validated like every log (tools/arshim/statslog.py):
    (the log, None), or (None, why it cannot be used)."""
    if not os.path.lexists(path):
        return None, "no statistics log (ARShim wrote none: not preloaded, or rank 0 never finished MPI_Finalize)"
    try:
        return statslog.load(path), None
    except files.InputError as e:
        return None, f"statistics log unusable: {e.reason}"


def rank_list(ranks, count):
    """[3, 9] and 5 more -> "3, 9 and 5 more"."""
    text = ", ".join(str(r) for r in ranks)
    return text + (f" and {count - len(ranks)} more" if count > len(ranks) else "")


def stats_reasons(np_, stats, problem):
    """Why an ARShim run failed by its statistics log: unusable or missing, another run's (np), the start-up check
    disabled ARShim (which ranks), a checked mode off although its setting asked for it, mismatches. Every count
    comes from the log; a section the log lacks is a reason, never a 0."""
    if stats is None:
        return [problem]
    reasons = []
    run = stats["run"]
    if run["np"] != np_:
        reasons.append(f"statistics log of {run['np']} ranks, the run had {np_}")
    check = run.get("startup_check")
    disabled = check is not None and check["checked"] and not check["all_loaded"]
    if check is None:
        reasons.append("statistics log without run.startup_check (an older ARShim?)")
    elif not check["checked"]:
        reasons.append("ARShim's start-up check did not run (MPI_Init not intercepted)")
    elif disabled:
        found = [f"{what} on ranks {rank_list(check[key], check[key + '_count'])}"
                 for key, what in (("ranks_without_arshim", "not loaded"), ("ranks_other_build", "another build"))
                 if check.get(key + "_count")]
        reasons.append(f"ARShim disabled at start ({'; '.join(found) or 'see the log'}): nothing was checked")
    settings = run["settings"]
    for section, variable, name in CHECKED_MODES:
        mode = stats.get(section)
        if mode is None:
            reasons.append(f"statistics log without its {section} section")
            continue
        asked = settings.get(variable, {}).get("value", "0") not in ("0", "")
        if asked and not mode["enabled"] and not disabled:
            reasons.append(f"{name} off although {variable}={settings[variable]['value']}")
        if mode["mismatches"]:
            reasons.append(f"{name}: {mode['mismatches']} mismatches" if section == "verify"
                           else f"{name}: {mode['mismatches']} calls with arguments that differ")
    return reasons


def judge(config, rc, timed_out, log, timeout_s, np_=None, stats=None, stats_problem=None):
    """Why a run failed, as a list of reasons (empty: it passed). A run passes when it exits 0 and prints MPICH's
    " No Errors"; an ARShim run also needs its statistics log (read_stats: `stats`, or `stats_problem` when there is
    none) of np_ ranks, every rank with ARShim, verify and the argument check on with 0 mismatches in it, and no
    "MISMATCH" and no "arguments differ" line."""
    reasons = []
    if timed_out:
        reasons.append(f"no end after {timeout_s} s: hang (stopped)")
    elif rc in (124, 137):
        reasons.append(f"killed by the launcher's time limit, exit {rc}")
    elif rc != 0:
        reasons.append(f"exit status {rc}")
    if " No Errors" not in log:
        found = first_match(r"^.*Found [0-9]+ errors?.*$", log)
        reasons.append("no ' No Errors' line" + (f" ({found.lstrip(' ')})" if found else ""))
    if config == "native":
        return reasons
    # A run that failed anyway is not also blamed for the log its rank 0 never wrote; a log it wrote is read.
    if stats is not None or rc == 0:
        reasons += stats_reasons(np_, stats, stats_problem or "no statistics log")
    lines = log.splitlines()
    for text, reason in ALARM_LINES:
        count = sum(text in line for line in lines)
        if count:
            reasons.append(reason.format(count))
    return reasons


def known_bug_of(flavor, log):
    """When every "Error for type T and op O" line of a log is a known bug of the flavor's library: their
    descriptions and the (type, op) pairs, "description [T:O, ...]"; else None."""
    pairs = sorted(set(re.findall(r"Error for type ([A-Za-z0-9_]+) and op ([A-Z_]+)", log)))
    if not pairs:
        return None
    descriptions = []
    for type_, op in pairs:
        bug = next((b for b in KNOWN_BUGS if b.flavor == flavor and op in b.ops and re.search(b.types, type_)), None)
        if bug is None:
            return None
        if bug.description not in descriptions:
            descriptions.append(bug.description)
    return f"{';'.join(descriptions)} [{', '.join(f'{t}:{o}' for t, o in pairs)}]"


EXCERPT_WORDS = re.compile(r"Error|error|MISMATCH|differ|Found [0-9]+ err|Abort|abort|signal|Segmentation|Killed|"
                           r"Terminated")


def excerpt(log, verbose=False):
    """The lines of a failed run's log that tell what went wrong (all of them with --verbose), indented; escaped,
    since a crashing test can print anything."""
    if verbose:
        chosen = log.splitlines()
    else:
        lines = log.splitlines()
        errors = [ln for ln in lines if not re.match(r"(#|[0-9]+ )", ln) and EXCERPT_WORDS.search(ln)
                  and not ln.startswith("arshim[0] argument check:")][:8]
        arshim = [ln for ln in lines if re.match(r"arshim\[0\] (summary|verify|native because)", ln)]
        chosen = errors + arshim + stack_summary(log)
    return [f"      | {escape(ln, 1000)}" for ln in chosen]


def frame_name(frame):
    """A gdb frame line (#3  0x... in fn (args) at file:line) -> fn."""
    name = re.sub(r"^#[0-9]+ +", "", frame)
    name = re.sub(r"^0x[0-9a-f]+ in ", "", name)
    name = name.replace("(anonymous namespace)", "{anon}")
    return re.sub(r" ?\(.*$", "", name, count=1)


def stack_summary(log):
    """One line per rank from the stacks a time-out wrote into the log: "stack of pid P: innermost < ... <
    outermost", the first 9 named frames."""
    out, line, n = [], None, 0
    for text in log.splitlines():
        if text.startswith("### backtrace of rank process"):
            if line is not None:
                out.append(line)
            line, n = f"stack of pid {text.split()[-1]}:", 0
        elif line is not None and re.match(r"#[0-9]+ ", text):
            name = frame_name(text)
            if name != "??" and n < 9:
                line += (" < " if n else " ") + name
                n += 1
    if line is not None:
        out.append(line)
    return out


def arshim_digest(stats):
    """What ARShim did in a run, from its statistics log: "paths: native=580 multileader=768; verified 768 calls"."""
    if not stats:
        return ""
    paths = " ".join(f"{p['path']}={p['calls']}" for p in stats["paths"])
    verified = stats.get("verify", {}).get("calls", 0)
    return f"paths: {paths}" + (f"; verified {verified} calls" if verified else "") if paths else ""


def warning_count(log):
    return len(re.findall(r"^arshim\[[0-9]+\] (?:warning|error):", log, re.M))


def passed_digest(config, log, stats=None):
    """What the line of a passed run adds: ARShim's digest (from its statistics log), and how many warnings ARShim
    printed."""
    digest = arshim_digest(stats) if config != "native" else ""
    warnings = warning_count(log)
    return digest + (f"; {warnings} ARShim warning/error lines (see log)" if warnings else "")


# ------------------------------------------------------------------------------------------------------------------
# The tally

OK, FAIL, BUG, NA, NOT_BUILT = "ok", "FAIL", "bug", "n/a", "build"


class Tally:
    """Each run's verdict (ok, FAIL, bug, n/a, build), the failures' one-line descriptions, the table and the exit
    status: 1 when a run failed (other than a known library bug in a native run) or a test did not build, 3 when
    the only failures are native runs explained by known library bugs, else 0."""

    def __init__(self, runs, flavors, configs):
        self.runs, self.flavors, self.configs = runs, flavors, configs
        self.cells = {}
        self.failures = []

    def record(self, run, flavor, config, verdict, failure=None):
        self.cells[run, flavor, config] = verdict
        if failure:
            self.failures.append(failure)

    def count(self, *verdicts):
        return sum(v in verdicts for v in self.cells.values())

    @property
    def total(self):
        return len(self.runs) * len(self.flavors) * len(self.configs)

    def table(self):
        lines = ["Tally (ok = passed; FAIL = failed; bug = native failure explained by a known MPI library bug; "
                 "n/a = not applicable)"]
        for flavor in self.flavors:
            lines += ["", f"  {flavor:<24} {'np':<3}" + "".join(f" {c:<17}" for c in self.configs)]
            for run in self.runs:
                cells = "".join(f" {self.cells.get((run, flavor, c), '?'):<17}" for c in self.configs)
                lines.append(f"  {run.label:<24} {run.np:<3}" + cells)
        return lines

    def total_line(self, seconds):
        return (f"Total: {self.total} runs: {self.count(OK)} ok, {self.count(FAIL, NOT_BUILT)} FAIL, "
                f"{self.count(BUG)} known library bug (native), {self.count(NA)} not applicable; "
                f"{int(seconds) // 60} min {int(seconds) % 60:02d} s")

    def exit_status(self):
        if self.count(FAIL, NOT_BUILT):
            return 1
        return 3 if self.count(BUG) else 0


# ------------------------------------------------------------------------------------------------------------------
# The MPICH source

def natural_key(name):
    """Version order (sort -V): mpich-4.0.10 after mpich-4.0.2."""
    return [int(p) if p.isdigit() else p for p in re.split(r"([0-9]+)", name)]


def tarball_in(directory):
    """The newest mpich_*.orig.tar.* (or mpich-*.tar.*) in a directory, or None."""
    try:
        names = [e.name for e in os.scandir(directory) if e.is_file()
                 and any(fnmatch.fnmatch(e.name, p) for p in TARBALL_PATTERNS)]
    except OSError:
        return None
    return os.path.join(directory, max(names, key=natural_key)) if names else None


def is_test_suite(directory):
    return os.path.isfile(os.path.join(directory, "coll", "allred.c"))


def extracted_suite(src):
    """test/mpi of an extracted tree: SRC/test/mpi, SRC itself, or SRC/mpich-*/test/mpi; None if none."""
    candidates = [os.path.join(src, "test", "mpi")]
    if os.path.isdir(os.path.join(src, "util")):
        candidates.append(src)
    candidates += sorted(glob.glob(os.path.join(glob.escape(src), "mpich-*", "test", "mpi")))
    return next((os.path.abspath(d) for d in candidates if is_test_suite(d)), None)


def extract_tests(tarball, workdir):
    """Unpacks test/mpi only (TAR_MEMBERS) into WORKDIR/src; returns its test/mpi directory."""
    say(f"unpacking test/mpi from {tarball}")
    dest = os.path.join(workdir, "src")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    done = subprocess.run(["tar", "-xf", tarball, "-C", dest, "--wildcards", *TAR_MEMBERS],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          errors="replace")
    if done.returncode != 0:
        first = " ".join(done.stderr.splitlines()[:3])
        raise CheckError(f"cannot unpack MPICH's test/mpi from {tarball}: {escape(first)}")
    suites = [d for pattern in ("test/mpi", "*/test/mpi", "*/*/test/mpi")
              for d in sorted(glob.glob(os.path.join(glob.escape(dest), pattern))) if os.path.isdir(d)]
    if not suites or not is_test_suite(suites[0]):
        raise CheckError(f"{tarball} holds no MPICH test suite (no */test/mpi/coll/allred.c)")
    return suites[0]


def find_source(src, workdir):
    """test/mpi of --source: an extracted tree, a directory with the source tarball, a .dsc or a tarball."""
    if os.path.isdir(src):
        suite = extracted_suite(src)
        if suite:
            return suite
        tarball = tarball_in(src)
        if not tarball:
            raise CheckError(f"no MPICH source in {src}: expected an extracted tree (test/mpi/coll/allred.c) or an "
                             "mpich_*.orig.tar.* tarball")
        return extract_tests(tarball, workdir)
    if os.path.isfile(src):
        if src.endswith(".dsc"):
            tarball = tarball_in(os.path.dirname(src) or ".")
            if not tarball:
                raise CheckError(f"no mpich_*.orig.tar.* next to {src} (download the source package completely)")
            return extract_tests(tarball, workdir)
        if re.search(r"\.(tar(\..*)?|tgz)$", src):
            return extract_tests(src, workdir)
        raise CheckError(f"--source {src}: not a directory, a .dsc or a tarball")
    raise CheckError(f"--source {src}: no such file or directory")


def download_source(workdir):
    """Debian's source package of mpich in WORKDIR/download (reused when already there): its tarball."""
    if not shutil.which("apt-get"):
        raise CheckError("no --source given and apt-get is not available: pass --source PATH")
    download = os.path.join(workdir, "download")
    os.makedirs(download, exist_ok=True)
    tarball = tarball_in(download)
    if tarball:
        say(f"MPICH source: reusing {tarball}")
        return tarball
    say(f"MPICH source: apt-get source --download-only mpich (into {download})")
    apt_log = os.path.join(download, "apt.log")
    with os.fdopen(files.open_output(apt_log), "wb") as log:
        done = subprocess.run(["apt-get", "source", "--download-only", "mpich"], cwd=download,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        for line in read_log(apt_log).splitlines()[-8:]:
            print(f"    {escape(line)}", file=sys.stderr)
        raise CheckError("apt-get source failed (is a deb-src line configured and the mirror reachable? 'apt-get "
                         "update' may help); or pass --source PATH")
    tarball = tarball_in(download)
    if not tarball:
        raise CheckError(f"apt-get source downloaded no mpich_*.orig.tar.* (see {apt_log})")
    return tarball


def suite_version(tdir):
    path = os.path.join(tdir, "version.m4")
    text = read_source_text(path) if os.path.isfile(path) else ""
    match = re.search(r"MPICH_VERSION_m4\],\[([^]]*)\]", text)
    return match.group(1) if match else None


def check_suite(tdir):
    version = suite_version(tdir)
    say(f"MPICH test suite: {tdir} (MPICH {version or 'unknown version'})")
    if version != EXPECTED_VERSION:
        note(f"warning: this tool was written for MPICH {EXPECTED_VERSION}'s tests, the source is "
             f"{version or 'of an unknown version'}")
    for name in HARNESS_SOURCES:
        if not os.path.isfile(os.path.join(tdir, "util", name)):
            raise CheckError(f"the test harness is incomplete: {tdir}/util/{name} missing")
    if not os.path.isfile(os.path.join(tdir, "coll", "testlist.in")):
        raise CheckError(f"{tdir}/coll/testlist.in missing")


def select_programs(coll, testlist, tests):
    """The programs to run: --tests (each a coll/*.c listed in testlist.in), or every listed test of coll/ whose
    source calls MPI_Allreduce."""
    if tests:
        programs = []
        for name in (t.strip() for t in tests.split(",")):
            name = name[:-2] if name.endswith(".c") else name
            if not name or name in programs:
                continue
            if not os.path.isfile(os.path.join(coll, name + ".c")):
                raise CheckError(f"--tests: no test {name} in {coll}")
            if not in_testlist(testlist, name):
                raise CheckError(f"--tests: {name} is not in {coll}/testlist.in (its ranks and arguments come from "
                                 "there)")
            programs.append(name)
        if not programs:
            raise CheckError("--tests: empty list")
        return programs
    programs = []
    for path in sorted(glob.glob(os.path.join(glob.escape(coll), "*.c"))):
        name = os.path.basename(path)[:-2]
        if not calls_allreduce(read_source_text(path)):
            continue
        if not in_testlist(testlist, name):
            note(f"skipping {name}: not in coll/testlist.in (GPU-only or not a standalone test)")
            continue
        programs.append(name)
    if not programs:
        raise CheckError(f"found no test in {coll} that calls MPI_Allreduce")
    return programs


# ------------------------------------------------------------------------------------------------------------------
# Building: the harness once per flavor, then each program; what is up to date is kept (--workdir)

def newer(path, than):
    """Like test's -nt: PATH's modification time is later than THAN's (or THAN does not exist)."""
    try:
        return os.stat(path).st_mtime_ns > os.stat(than).st_mtime_ns
    except FileNotFoundError:
        return os.path.exists(path)


def up_to_date(target, deps):
    return os.path.isfile(target) and not any(newer(d, target) for d in deps)


def compile_into(command, build_log):
    """Runs a compiler command with its output appended to the build log (after the command): success."""
    with os.fdopen(files.open_output(build_log, append=True), "a") as log:
        log.write("+ " + " ".join(command) + "\n")
        log.flush()
        return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT).returncode == 0


def write_config_header(workdir):
    """WORKDIR/include/mpitestconf.h, rewritten only when it changed (its time decides what is rebuilt)."""
    path = os.path.join(workdir, "include", "mpitestconf.h")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        same = files.read_bounded(path, 1 << 16).decode("utf-8", "replace") == MPITESTCONF_H
    except files.InputError:
        same = False
    if not same:
        files.write_file(path, MPITESTCONF_H)
    return path


def build_flavor(flavor, tdir, programs, workdir, conf_h):
    """Builds the harness and the programs with mpicc.FLAVOR into WORKDIR/build/FLAVOR: the programs built."""
    bdir = os.path.join(workdir, "build", flavor)
    os.makedirs(bdir, exist_ok=True)
    build_log = os.path.join(bdir, "build.log")
    os.close(files.open_output(build_log))
    cflags = ["-O2", "-g", f"-I{os.path.dirname(conf_h)}", f"-I{tdir}/include", f"-I{tdir}/dtpools/include"]
    mpicc = f"mpicc.{flavor}"
    started = time.monotonic()
    print(f"==> building with {mpicc}: harness", end="", flush=True)
    objects = []
    for unit in HARNESS_SOURCES:
        source, obj = os.path.join(tdir, "util", unit), os.path.join(bdir, unit[:-2] + ".o")
        objects.append(obj)
        if up_to_date(obj, [source, conf_h]):
            continue
        if not compile_into([mpicc, *cflags, "-c", source, "-o", obj], build_log):
            print(flush=True)
            for line in read_log(build_log).splitlines()[-15:]:
                print(f"    {escape(line)}", file=sys.stderr)
            raise CheckError(f"the MTest harness ({unit}) does not build with {mpicc} (log: {build_log})")
    built, cached = set(), 0
    for program in programs:
        print(f" {program}", end="", flush=True)
        source, exe = os.path.join(tdir, "coll", program + ".c"), os.path.join(bdir, program)
        if up_to_date(exe, [source, *objects]):
            built.add(program)
            cached += 1
        elif compile_into([mpicc, *cflags, source, *objects, "-lm", "-o", exe], build_log):
            built.add(program)
        else:
            print(" (FAILED)", end="", flush=True)
    print(f" -- {len(built)} of {len(programs)} built" + (f" ({cached} up to date)" if cached else "")
          + f" in {elapsed(started)} s", flush=True)
    if len(built) != len(programs):
        note(f"build failures for {flavor}: see {build_log}")
    return built


# ------------------------------------------------------------------------------------------------------------------
# Running: one run at a time through test/mpi/mpirun.sh, stopped by a watchdog (after taking the ranks' stacks)

def process_table(proc="/proc"):
    """pid -> (parent pid, command name) of every process."""
    table = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat")) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        table[int(entry)] = (int(stat[stat.rfind(")") + 2:].split()[1]), comm)
    return table


def descendants(table, root, comm):
    """The processes below `root` (at most 64 levels) named `comm` (cut to 15 characters, as the kernel does)."""
    found = []
    for pid, (_, name) in table.items():
        if name != comm[:15]:
            continue
        at, depth = pid, 0
        while at in table and at != root and at > 1 and depth < 64:
            at, depth = table[at][0], depth + 1
        if at == root:
            found.append(pid)
    return sorted(found)


def dump_stacks(root, program):
    """The stacks of a run's ranks (gdb), as the log keeps them."""
    out = []
    for pid in descendants(process_table(), root, program):
        out.append(f"### backtrace of rank process {pid}")
        try:
            done = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "bt 40"], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, errors="replace", timeout=30)
            out += [ln for ln in (done.stdout + done.stderr).splitlines() if re.match(r"#[0-9]+ ", ln)]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "".join(line + "\n" for line in out)


def remove_stale(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_log(path):
    with open(path, "rb") as f:
        return files.read_at_most(f.fileno(), LOG_LIMIT).decode("utf-8", "replace")


class Runner:
    """Runs the runs and tells what each did; `current` is the run in progress (an interrupt stops it)."""

    def __init__(self, opts, workdir, shim_libs, yield_lib, built):
        self.opts, self.workdir, self.shim_libs, self.built = opts, workdir, shim_libs, built
        self.env = dict(launchers.benchmark_environment(), ARSHIM_TEST_TIMEOUT=str(opts.timeout + 60),
                        ARSHIM_TEST_YIELD_LIB=yield_lib or "")
        self.current = None

    def execute(self, command, flavor, program, log_path):
        """Runs one command line, its output into the log: (exit status as the shell shows it, timed out)."""
        with os.fdopen(files.open_output(log_path), "w") as log:
            log.write(f"# {shlex.join(command)} \n")
        with os.fdopen(files.open_output(log_path, append=True), "ab") as log:
            self.current = subprocess.Popen(command, cwd=os.path.join(self.workdir, "build", flavor), env=self.env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        timed_out = False
        try:
            rc = self.current.wait(timeout=self.opts.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with os.fdopen(files.open_output(log_path, append=True), "a") as log:
                log.write(f"### {PROG}: no end after {self.opts.timeout} s; stopping the run\n")
                if self.opts.backtraces and shutil.which("gdb"):
                    log.write(dump_stacks(self.current.pid, program))
            rc = self.stop_current()
        self.current = None
        return (128 - rc if rc < 0 else rc), timed_out

    def stop_current(self):
        """Stops the run in progress (mpirun.sh's `timeout` passes the signal on to the launcher): its status."""
        self.current.terminate()
        try:
            return self.current.wait(timeout=WAIT_AFTER_TERM)
        except subprocess.TimeoutExpired:
            self.current.kill()
            return self.current.wait()

    def run(self, run, flavor, config, tag, tally):
        """One run: its line of output (and an excerpt of a failure), its verdict in the tally."""
        what = f"{run.label} np={run.np} {flavor} {config}"
        if run.name not in self.built[flavor]:
            build_log = os.path.join(self.workdir, "build", flavor, "build.log")
            print(f"FAIL {tag}  not built (see {build_log})", flush=True)
            tally.record(run, flavor, config, NOT_BUILT, f"{what}: not built")
            return
        log_path = os.path.join(self.workdir, "logs", flavor, log_name(run, config))
        stats_path = os.path.join(self.workdir, "logs", flavor, stats_name(run, config))
        command = run_command(self.opts.mpirun_sh, flavor, run, config, self.shim_libs.get(flavor), self.opts.set,
                              stats_path)
        if command is None:
            print(f"skip {tag}  (needs np even or >= 4)", flush=True)
            tally.record(run, flavor, config, NA)
            return
        remove_stale(stats_path)  # an earlier run's log (--workdir) must never be judged as this run's
        started = time.monotonic()
        rc, timed_out = self.execute(command, flavor, run.name, log_path)
        seconds = elapsed(started)
        log = read_log(log_path)
        stats, problem = read_stats(stats_path) if config != "native" else (None, None)
        why = "; ".join(judge(config, rc, timed_out, log, self.opts.timeout, run.np, stats, problem))
        if not why:
            digest = passed_digest(config, log, stats)
            print(f"ok   {tag}  {seconds}s" + (f"  {digest}" if digest else ""), flush=True)
            tally.record(run, flavor, config, OK)
            return
        bug = known_bug_of(flavor, log) if config == "native" and not timed_out else None
        if bug:
            print(f"FAIL {tag}  {seconds}s  known library bug, not ARShim: {bug}")
            tally.record(run, flavor, config, BUG, f"{what}: known library bug: {bug} (log: {log_path})")
        else:
            print(f"FAIL {tag}  {seconds}s  {escape(why, 2000)}")
            tally.record(run, flavor, config, FAIL, f"{what}: {escape(why, 2000)} (log: {log_path})")
        for line in excerpt(log, self.opts.verbose):
            print(line)
        print(f"      log: {log_path}", flush=True)


def run_all(runner, runs, tally):
    opts = runner.opts
    say(f"running {tally.total} runs one at a time (time limit {opts.timeout} s each); logs in "
        f"{runner.workdir}/logs")
    index = 0
    for run in runs:
        for flavor in opts.flavors:
            os.makedirs(os.path.join(runner.workdir, "logs", flavor), exist_ok=True)
            for config in opts.configs:
                index += 1
                tag = f"[{index:3d}/{tally.total}] {run.label:<22} np={run.np:<2} {flavor:<7} {config:<17}"
                runner.run(run, flavor, config, tag, tally)


# ------------------------------------------------------------------------------------------------------------------
# The command

DESCRIPTION = f"""\
Runs MPICH's own MPI_Allreduce tests (MPICH {EXPECTED_VERSION}, test/mpi/coll) under MPICH and Open MPI, natively and
with ARShim preloaded, and prints one line per (test, flavor, configuration) and a tally.

Source (MPICH's source package; only test/mpi is used, MPICH itself is not built): --source, or without it
'apt-get source --download-only mpich' into the work directory (needs a deb-src line in the apt sources and network
access to the mirror).

Configurations: native (no preload); default (ARShim with default settings); pipelined-1K (ARSHIM_PATH=pipelined
ARSHIM_SEGMENT_BYTES=1K); multileader (ARSHIM_PATH=multileader); multileader-vppn2 (ARSHIM_PATH=multileader
ARSHIM_VIRTUAL_PPN=2; np even or >= 4 only). Every ARShim configuration also sets {' '.join(CHECK_VARS)}."""

EPILOG = f"""\
A run passes when it exits 0 and prints MPICH's " No Errors" line; an ARShim run also needs its statistics log
(ARSHIM_STATS, written beside the run's log as NAME.CONFIG.stats.json and validated against its schema) saying that
every rank loaded ARShim, that verify and the argument check ran, with 0 mismatches each, and no "MISMATCH" and no
"arguments differ" line. A missing or unreadable log fails the run. Runs go one after another through
test/mpi/mpirun.sh (oversubscription flags; under MPICH the yield helper is preloaded so busy-polling ranks give up
the CPU). ARSHIM_* variables of the calling environment are ignored (use --set; ARSHIM_STATS is the tool's). The
ARShim libraries are copied into the work directory first, so that a rebuild during the runs does not change
what is tested. With --workdir, a second run rebuilds only what changed.

A native run that fails only with MPICH's "Error for type T and op O" lines that a known bug of the MPI library
explains (docs/library-bugs.md: MPICH 4.0.x MIN/MAX on unsigned types; Open MPI 4.1.x op/avx 8/16-bit SUM,
MPI_UNSIGNED_LONG and MPI_OFFSET MIN/MAX) is reported as FAIL with "known library bug" and counted apart.

Exit status: 0 all runs passed; 1 a run failed (other than a known library bug in a native run) or a test did
not build; 3 the only failures are native runs explained by known library bugs; 2 usage or setup error;
130 interrupted.

Examples:
  {PROG} --source /tmp/src/mpich-{EXPECTED_VERSION}
  {PROG} --workdir /tmp/mct --flavors openmpi --configs native,default --tests allred,allred2"""


def build_parser():
    parser = options.Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_argument_group("source")
    source.add_argument("--source", type=nonempty, metavar="PATH",
                        help="an extracted MPICH source tree (or its test/mpi directory), a directory holding the "
                             "Debian source package (mpich_*.orig.tar.*), a .dsc file, or a tarball "
                             "(mpich_*.orig.tar.xz, mpich-*.tar.gz); default: apt-get source")
    source.add_argument("--workdir", type=nonempty, metavar="DIR",
                        help="where the source is unpacked, the tests are built and the run logs are written; it is "
                             "kept. Default: a new temporary directory, removed at exit unless a run failed or "
                             "--keep is given")
    source.add_argument("--keep", action="store_true", help="keep the temporary work directory")
    what = parser.add_argument_group("what runs")
    what.add_argument("--flavors", default=",".join(FLAVORS), metavar="LIST",
                      help="comma-separated MPI flavors (default: %(default)s); built with mpicc.FLAVOR")
    what.add_argument("--configs", default=",".join(CONFIGS), metavar="LIST",
                      help=f"comma-separated configurations (default: all: {', '.join(CONFIGS)})")
    what.add_argument("--tests", metavar="LIST",
                      help="comma-separated test programs of test/mpi/coll (default: every test there whose source "
                           "calls MPI_Allreduce( directly and that coll/testlist.in lists); the ranks and arguments "
                           "come from coll/testlist.in (one run per distinct entry)")
    what.add_argument("--max-np", default="4", metavar="N",
                      help="cap on the ranks of a run (default 4; the machine is oversubscribed)")
    what.add_argument("--timeout", metavar="SECONDS",
                      help=f"per-run time limit (default $ARSHIM_TEST_TIMEOUT or {DEFAULT_TIMEOUT}; allredmany "
                           "needs 20-60 s under MPICH on 2 busy cores, the other tests a few seconds)")
    what.add_argument("--set", action="append", default=[], type=setting, metavar="VAR=VALUE",
                      help="an extra setting for every ARShim run (repeatable), e.g. --set ARSHIM_LOG=info")
    what.add_argument("--build-dir", type=nonempty, metavar="DIR",
                      help="ARShim's meson build directory (default: the build this arshim belongs to, or the "
                           "source tree's build/); the libraries are DIR/shim/libarshim-FLAVOR.so, the MPICH yield "
                           "helper DIR/test/libarshim-test-yield.so")
    what.add_argument("--list", action="store_true", help="print the test runs that would be made and exit")
    what.add_argument("--no-backtraces", dest="backtraces", action="store_false",
                      help="on a time-out, do not attach gdb to the hung ranks (default: their stacks go to the log "
                           "and a one-line summary per rank to the output, when gdb is installed)")
    what.add_argument("-v", "--verbose", action="store_true",
                      help="print the whole output of a failed run (default: an excerpt; the full log is kept)")
    # Given by `arshim` (tools/arshim.py): the source tree (test/mpi/mpirun.sh) and its default build directory.
    parser.add_argument("--repo-root", help=argparse.SUPPRESS)
    parser.add_argument("--default-build-dir", help=argparse.SUPPRESS)
    return parser


def validate(opts):
    """Checks and completes the options (CheckError on a bad one), before anything is created."""
    opts.max_np = positive_int("--max-np", opts.max_np, "integer", MAX_NP)
    timeout = opts.timeout if opts.timeout is not None else os.environ.get("ARSHIM_TEST_TIMEOUT") or DEFAULT_TIMEOUT
    opts.timeout = positive_int("--timeout", timeout, "number of seconds", MAX_TIMEOUT_S)
    opts.tests = check_tests(opts.tests)
    check_workdir(opts.workdir)
    if opts.source and not os.path.exists(opts.source):
        raise CheckError(f"--source {escape(opts.source)}: no such file or directory")
    if any(v.split("=", 1)[0] == "ARSHIM_STATS" for v in opts.set):
        raise CheckError("--set ARSHIM_STATS: each run's statistics log is set by the tool (a run is judged on it)")
    opts.flavors = split_list(opts.flavors, FLAVORS, "--flavors", "flavor")
    opts.configs = split_list(opts.configs, CONFIGS, "--configs", "configuration")
    if not opts.repo_root:
        raise CheckError("the source tree is unknown: run this as `arshim mpich-tests` from a source or build tree")
    opts.build_dir = opts.build_dir or opts.default_build_dir or os.path.join(opts.repo_root, "build")
    opts.mpirun_sh = os.path.join(opts.repo_root, "test", "mpi", "mpirun.sh")
    if not (os.path.isfile(opts.mpirun_sh) and os.access(opts.mpirun_sh, os.X_OK)):
        raise CheckError(f"launcher helper not found or not executable: {opts.mpirun_sh}")


def check_tools(opts):
    """The environment's settings (ignored), ARShim's libraries, the yield helper, gdb, mpicc and mpirun: the
    libraries {flavor: path} and the yield helper (or None)."""
    # Settings of the calling environment would leak into every rank (hydra forwards the whole environment); the
    # runs get launchers.benchmark_environment(), without them.
    stray = sorted(n for n in os.environ if n.startswith("ARSHIM_") and not n.startswith("ARSHIM_TEST_"))
    if stray:
        note(f"ignoring the environment's {' '.join(stray)} (use --set VAR=VALUE)")
    libs = {}
    if any(c != "native" for c in opts.configs) and not opts.list:
        for flavor in opts.flavors:
            libs[flavor] = os.path.join(opts.build_dir, "shim", f"libarshim-{flavor}.so")
            if not os.path.isfile(libs[flavor]):
                raise CheckError(f"ARShim library not found: {libs[flavor]} (build it: meson compile -C "
                                 f"{opts.build_dir}; or pass --build-dir)")
    if opts.list:
        return libs, None
    if libs:
        statslog.validator()  # ARShim runs are judged on their statistics logs: needs jsonschema, before any run
    yield_lib = os.environ.get("ARSHIM_TEST_YIELD_LIB") or os.path.join(opts.build_dir, "test",
                                                                         "libarshim-test-yield.so")
    if opts.backtraces and not shutil.which("gdb"):
        note("gdb not found: the stacks of hung ranks will not be shown (apt-get install gdb)")
    if "mpich" not in opts.flavors:
        yield_lib = None  # only MPICH's runs preload it
    elif not os.path.isfile(yield_lib):
        note(f"warning: MPICH yield helper not found ({yield_lib}): oversubscribed MPICH runs may be very slow")
        yield_lib = None
    for flavor in opts.flavors:
        if not shutil.which(f"mpicc.{flavor}"):
            raise CheckError(f"mpicc.{flavor} not found (install the {flavor} development package or drop it with "
                             "--flavors)")
        if not shutil.which(f"mpirun.{flavor}"):
            raise CheckError(f"mpirun.{flavor} not found (needed by {opts.mpirun_sh})")
    return libs, yield_lib


def snapshot(path, workdir):
    """A copy of a library in WORKDIR/lib (a rebuild during the runs must not change what is tested): its path."""
    copy = os.path.join(workdir, "lib", os.path.basename(path))
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    try:
        files.write_file(copy, files.read_bounded(path, LIBRARY_LIMIT))
    except ToolError as e:
        raise CheckError(f"cannot copy {escape(path)} into {escape(os.path.dirname(copy))} ({e})") from None
    return copy


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def snapshot_libraries(libs, yield_lib, workdir):
    copies = {}
    for flavor, path in libs.items():
        built = datetime.datetime.fromtimestamp(os.path.getmtime(path)).strftime("%Y-%m-%d %H:%M:%S")
        copies[flavor] = snapshot(path, workdir)
        say(f"ARShim for {flavor}: {path} (built {built}, sha256 {sha256_of(path)[:12]})")
    return copies, (snapshot(yield_lib, workdir) if yield_lib else None)


def mpich_suite(opts, workdir):
    """test/mpi of the MPICH source: --source, or Debian's source package."""
    if opts.source:
        say(f"MPICH source: {opts.source}")
        tdir = find_source(opts.source, workdir)
    else:
        tdir = extract_tests(download_source(workdir), workdir)
    check_suite(tdir)
    return tdir


def check(opts, libs, yield_lib, workdir, state):
    """Everything after the options: source, tests, build, runs, tally. The exit status."""
    started = time.monotonic()
    tdir = mpich_suite(opts, workdir)
    if not opts.list:
        libs, yield_lib = snapshot_libraries(libs, yield_lib, workdir)
    coll = os.path.join(tdir, "coll")
    testlist = read_source_text(os.path.join(coll, "testlist.in"))
    programs = select_programs(coll, testlist, opts.tests)
    runs = plan_runs(programs, testlist_entries(testlist), opts.max_np)
    say(f"{len(runs)} test runs from {len(programs)} programs ({' '.join(programs)}); ranks capped at {opts.max_np}")
    if opts.list:
        for run in runs:
            print(run_list_line(run))
        return 0
    conf_h = write_config_header(workdir)
    built = {flavor: build_flavor(flavor, tdir, programs, workdir, conf_h) for flavor in opts.flavors}
    tally = Tally(runs, opts.flavors, opts.configs)
    state.runner = Runner(opts, workdir, libs, yield_lib, built)
    run_all(state.runner, runs, tally)
    print()
    for line in tally.table():
        print(line)
    print()
    print(tally.total_line(time.monotonic() - started))
    if tally.failures:
        print("Failures:")
        for failure in tally.failures:
            print(f"  {failure}")
        state.keep = True
    return tally.exit_status()


def interrupted(*_):
    raise KeyboardInterrupt


def main(argv=None):
    opts = build_parser().parse_args(argv)
    try:
        validate(opts)
        libs, yield_lib = check_tools(opts)
        made = not opts.workdir
        workdir = tempfile.mkdtemp(prefix="mpich-coll-tests.") if made else os.path.abspath(opts.workdir)
        os.makedirs(workdir, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: error: cannot create the work directory ({e.strerror})", file=sys.stderr)
        return 2
    except ToolError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    state = argparse.Namespace(keep=opts.keep, runner=None)
    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        return check(opts, libs, yield_lib, workdir, state)
    except ToolError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a log in the work directory that is no regular file (files.open_output), a full disk
        print(f"{PROG}: error: {escape(e.filename or '')}: cannot write ({e.strerror})", file=sys.stderr)
        state.keep = True
        return 2
    except KeyboardInterrupt:
        print()
        current = state.runner and state.runner.current
        if current and current.poll() is None:
            note("interrupted: stopping the current run")
            state.runner.stop_current()
        else:
            note("interrupted")
        state.keep = True
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if made and not state.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif made:
            note(f"work directory kept: {workdir}")
