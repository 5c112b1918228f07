"""Launcher command lines that load ARShim in the ranks, not in the launcher: Open MPI's mpirun/mpiexec (`-x`),
Hydra's (MPICH, Intel MPI, MVAPICH: `-genv`) and Slurm's srun (`--export`). `arshim run`, `arshim tune` and the
benchmark drivers build their command lines here, so a job, the tuner and a benchmark load the library alike."""
import fnmatch
import os
import re
import subprocess

from . import ToolError
from .files import read_bounded
from .flavors import program_flavor

# The launcher's own variables: read by `arshim`, never passed to the ranks (they are not settings of the library).
LAUNCHER_VARIABLES = ("ARSHIM_LIB_DIR",)

# mpirun/mpiexec options that take a value (Hydra's and Open MPI's), by the name option_name() gives them: both
# launchers take `-opt` and `--opt` alike, and `-opt=value`. The program is the first word that is neither an option
# nor an option's value.
VALUE_OPTIONS = {
    # both, or Open MPI 4 (`mpirun --help all`)
    "-n", "-np", "-c", "-N", "-ppn", "-host", "-hosts", "-H", "-hostfile", "-machinefile", "-f", "-wdir", "-wd", "-x",
    "-map-by", "-bind-to", "-rank-by", "-prefix", "-path", "-app", "-rankfile", "-rf", "-tmpdir", "-output-filename",
    "-timeout", "-npernode", "-npersocket", "-binding", "-map", "-mca-param-file", "-tune", "-am", "-cf",
    "-cartofile", "-cpu-list", "-cpu-set", "-cpus-per-proc", "-cpus-per-rank", "-debugger", "-default-hostfile",
    "-hnp", "-launch-agent", "-max-restarts", "-max-vm-size", "-ompi-server", "-personality", "-ppr",
    "-preload-files", "-report-events", "-report-pid", "-report-uri", "-stdin", "-xml-file", "-xterm",
    # Open MPI 5 (PRRTE)
    "-set-env", "-unset-env", "-display", "-output", "-stream-buffering", "-pset", "-runtime-options",
    "-forward-signals", "-gpu-support", "-app-pmix-prefix", "-pmix-prefix", "-singleton", "-keepalive",
    "-stop-on-exec", "-stop-in-init", "-stop-in-app", "-spawn-timeout", "-output-proctable", "-arch", "-file",
    # Hydra (`mpiexec.hydra -help`)
    "-configfile", "-genvlist", "-envlist", "-launcher", "-launcher-exec", "-bootstrap", "-bootstrap-exec",
    "-iface", "-rmk", "-topolib", "-membind", "-demux", "-prepend-pattern", "-outfile-pattern", "-errfile-pattern",
    "-nameserver", "-order-nodes", "-localhost", "-usize", "-gpus-per-proc",
}
PAIR_OPTIONS = {"-genv", "-env", "-mca", "-gmca", "-pmixmca", "-prtemca", "-prepend-env", "-append-env"}
# Hydra's variable options, which take NAME VALUE or NAME=VALUE: -genv for every program, -env for its section's.
HYDRA_ENV_OPTIONS = {"-genv", "-env"}
# srun options whose value may be the next word (`-n 2`, `--ntasks 2`): those with a required argument. `--opt=value`
# is one word anyway; options with an optional argument (--kill-on-bad-exit, --propagate, --bcast, --compress,
# --resv-ports, --exclusive) take it only after `=`.
SRUN_VALUE_OPTIONS = {
    "-A", "-b", "-c", "-C", "-D", "-d", "-e", "-G", "-i", "-J", "-L", "-M", "-m", "-N", "-n", "-o", "-p", "-q", "-r",
    "-S", "-T", "-t", "-W", "-w", "-x", "-B", "--account", "--begin", "--cpus-per-task", "--constraint", "--chdir",
    "--dependency", "--error", "--gpus", "--input", "--job-name", "--licenses", "--clusters", "--distribution",
    "--nodes", "--ntasks", "--output", "--partition", "--qos", "--relative", "--core-spec", "--threads", "--time",
    "--wait", "--nodelist", "--exclude", "--extra-node-info", "--mpi", "--export", "--cpu-bind", "--mem-bind",
    "--mem", "--mem-per-cpu", "--mem-per-gpu", "--ntasks-per-node", "--ntasks-per-socket", "--ntasks-per-core",
    "--gres", "--gpus-per-node", "--gpus-per-task", "--cpus-per-gpu", "--reservation", "--jobid", "--het-group",
    "--signal", "--switches", "--hint", "--network", "--comment", "--prolog", "--epilog", "--task-prolog",
    "--task-epilog", "--uid", "--gid", "--nice", "--slurmd-debug", "--tmp", "--mincpus", "--sockets-per-node",
    "--cores-per-socket", "--threads-per-core", "--open-mode", "--profile", "--container", "--deadline",
    "--delay-boot", "--time-min", "--wckey", "--mcs-label", "--power", "--accel-bind", "--tres-per-task",
    "--gpu-bind", "--gpu-freq", "--cpu-freq", "--gres-flags", "--mail-type", "--mail-user", "--ntasks-per-gpu",
}
# env(1) as the ranks' program (`mpirun -n 4 env LD_PRELOAD=x.so ./app`): its options that take the next word.
ENV_VALUE_OPTIONS = {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}
# How a user sets the ranks' LD_PRELOAD in a way `arshim run` merges ARShim's library into, per launcher.
SPELLING = {"openmpi": "-x LD_PRELOAD=...", "mpich": "-genv LD_PRELOAD ... (or -env in one section)",
            "srun": "--export=ALL,LD_PRELOAD=..."}


def option_name(word):
    """An mpirun/mpiexec option by one name: `-opt`, `--opt` and `-opt=value` are all `-opt`."""
    return "-" + word.split("=", 1)[0].lstrip("-")


def option_values(words):
    """The values of an option's words: [-opt, a, b] and [-opt=a, b] are both [a, b]."""
    _, attached, first = words[0].partition("=")
    return ([first] if attached else []) + words[1:]


def mpirun_option_width(command, i):
    """How many words the mpirun/mpiexec option at command[i] spans, itself included."""
    word = command[i]
    name, attached = option_name(word), "=" in word
    if name in PAIR_OPTIONS:
        first = word.split("=", 1)[1] if attached else (command[i + 1] if i + 1 < len(command) else "")
        if name in HYDRA_ENV_OPTIONS and "=" in first:  # -genv NAME=VALUE
            return 1 if attached else 2
        return 2 if attached else 3
    if name in VALUE_OPTIONS:
        return 1 if attached else 2
    return 1


def srun_option_width(command, i):
    return 2 if command[i] in SRUN_VALUE_OPTIONS else 1


def sections(command, width=mpirun_option_width):
    """The `:`-separated sections of a launcher line (MPMD programs; for srun, a heterogeneous step's components),
    each (start, options, program, end): its options as (index, word count) pairs from command[start], its program
    and the program's arguments command[program:end] (program None: the section has none), `:` or the line's end at
    command[end]."""
    out, start = [], 1
    while True:
        options, program, i = [], None, start
        while i < len(command) and command[i] != ":":
            if command[i] == "--":
                i += 1
                if i < len(command) and command[i] != ":":
                    program = i
                break
            if not command[i].startswith("-"):
                program = i
                break
            n = min(width(command, i), len(command) - i)
            options.append((i, n))
            i += n
        end = i if program is None else next((k for k in range(program, len(command)) if command[k] == ":"),
                                             len(command))
        out.append((start, options, program, end))
        if end >= len(command):
            return out
        start = end + 1


def program_of(command, width=mpirun_option_width):
    """Index of the (first) application in a launcher command line, or None."""
    return next((program for _, _, program, _ in sections(command, width) if program is not None), None)


def is_srun(command):
    return os.path.basename(command[0]) == "srun"


def program_index(command):
    return program_of(command, srun_option_width if is_srun(command) else mpirun_option_width)


def detect_flavor(command):
    """The MPI flavor of the program a launcher command line runs."""
    index = program_index(command)
    if index is None:
        raise ToolError(f"cannot find the program in the {os.path.basename(command[0])} command line; "
                        "pass --mpi mpich|openmpi")
    return program_flavor(command[index])


def settings_to_pass():
    """The ARSHIM_* settings of this environment (not the launcher's own variables)."""
    return sorted(name for name in os.environ if name.startswith("ARSHIM_") and name not in LAUNCHER_VARIABLES)


def same_library(entry, library):
    return entry == library or ("/" in entry and os.path.realpath(entry) == os.path.realpath(library))


def merged_preload(library, value):
    """An LD_PRELOAD value with ARShim's library first (its MPI_Allreduce interposes before any other preloaded
    library's), then the libraries of `value` (separated by colons or spaces, as ld.so reads them), ARShim's not
    twice."""
    return ":".join([library] + [e for e in re.split(r"[: ]", value or "") if e and not same_library(e, library)])


def preload_value(library):
    """The ranks' LD_PRELOAD when the launcher line sets none: ARShim's library, then this environment's LD_PRELOAD."""
    return merged_preload(library, os.environ.get("LD_PRELOAD"))


def env_args(flavor, env):
    """mpirun/mpiexec options that give every rank these VAR=VALUE pairs: -x under Open MPI, -genv under Hydra."""
    out = []
    for name, value in env.items():
        out += ["-x", f"{name}={value}"] if flavor == "openmpi" else ["-genv", name, value]
    return out


def settings_arguments(flavor):
    """mpirun/mpiexec options that pass this environment's ARSHIM_* settings to every rank (on other hosts too).
    Rank 0's settings win anyway: the shim broadcasts them at MPI_Init."""
    if flavor == "openmpi":
        return [word for name in settings_to_pass() for word in ("-x", name)]  # Open MPI takes the value from here
    return env_args(flavor, {name: os.environ[name] for name in settings_to_pass()})


def preload_arguments(flavor, library):
    """mpirun/mpiexec options that preload the library in every rank and pass this environment's ARSHIM_* settings
    to every rank."""
    return env_args(flavor, {"LD_PRELOAD": preload_value(library)}) + settings_arguments(flavor)


def refuse_unknown_preload(launcher, words, spelling):
    """Any other word of a launcher line's options that names LD_PRELOAD: arshim run cannot tell what it does to
    the ranks' LD_PRELOAD, so it refuses rather than lose ARShim's library without a word."""
    if any("LD_PRELOAD" in word for word in words):
        raise ToolError(f"{launcher} {' '.join(words)}: arshim run cannot merge ARShim's library into LD_PRELOAD "
                        f"set this way; set it with {spelling} instead (ARShim's library then goes first)")


def file_sets_preload(value):
    """Whether a launcher's option file (a comma-separated list of them) names LD_PRELOAD. A file that cannot be read
    here is left to the launcher (Open MPI looks --am names up in its own directories)."""
    for path in value.split(","):
        try:
            if b"LD_PRELOAD" in read_bounded(path, 1 << 20):
                return True
        except ToolError:
            pass
    return False


def env_program_edits(command, program, end, library, replace, spelling):
    """`env [OPTIONS] NAME=VALUE ... PROGRAM` as the ranks' program: its LD_PRELOAD=v becomes ARShim's library
    followed by v (the ranks start env with ARShim preloaded, and env would replace that LD_PRELOAD)."""
    if program is None or os.path.basename(command[program]) != "env":
        return
    k = program + 1
    while k < end:
        word = command[k]
        if word.startswith("-"):
            n = min(2 if word in ENV_VALUE_OPTIONS else 1, end - k)
            refuse_unknown_preload("env", command[k:k + n], f"env LD_PRELOAD=... or {spelling}")
            k += n
        elif "=" in word:
            name, _, value = word.partition("=")
            if name == "LD_PRELOAD":
                replace[k] = "LD_PRELOAD=" + merged_preload(library, value)
            k += 1
        else:
            return


def replace_suffix(word, old, new):
    return word[:len(word) - len(old)] + new


def assemble(command, replace, insert):
    """The command line with words replaced (None: removed) and words inserted before the given indices."""
    out = [command[0]]
    for k in range(1, len(command) + 1):
        out += insert.get(k, [])
        if k < len(command) and replace.get(k, command[k]) is not None:
            out.append(replace.get(k, command[k]))
    return out


def hydra_command(command, library):
    """Hydra (MPICH, Intel MPI, MVAPICH): -genv LD_PRELOAD for every program. The ranks' LD_PRELOAD is the last
    -genv LD_PRELOAD anywhere on the line, in a section the section's own -env LD_PRELOAD, and either wins over
    -genvlist/-envlist and the launcher's environment (checked with Hydra 4.0): so each user -genv/-env LD_PRELOAD v
    becomes ARShim's library followed by v in place, and ARShim's own -genv is added only when the line has none."""
    launcher, spelling = os.path.basename(command[0]), SPELLING["mpich"]
    replace, global_preload = {}, False
    for _, options, program, end in sections(command):
        for i, n in options:
            words = command[i:i + n]
            name, values = option_name(words[0]), option_values(words)
            if name in HYDRA_ENV_OPTIONS and len(values) == 1 and "=" in values[0]:
                values = values[0].split("=", 1)  # -genv NAME=VALUE
            if name in HYDRA_ENV_OPTIONS and len(values) == 2 and values[0] == "LD_PRELOAD":
                replace[i + n - 1] = replace_suffix(words[-1], values[1], merged_preload(library, values[1]))
                global_preload |= name == "-genv"
                continue
            if name in HYDRA_ENV_OPTIONS and len(values) == 2 or name in ("-genvlist", "-envlist"):
                continue  # another variable; or LD_PRELOAD forwarded from this environment, already in ARShim's -genv
            if name == "-configfile" and values and file_sets_preload(values[0]):
                raise ToolError(f"{launcher} -configfile {values[0]}: the file sets LD_PRELOAD, which arshim run "
                                "cannot merge ARShim's library into; set it on the command line instead "
                                f"({spelling})")
            refuse_unknown_preload(launcher, words, spelling)
        env_program_edits(command, program, end, library, replace, spelling)
    preload = [] if global_preload else env_args("mpich", {"LD_PRELOAD": preload_value(library)})
    return assemble(command, replace, {1: preload + settings_arguments("mpich")})


def openmpi_command(command, library):
    """Open MPI's mpirun/mpiexec: -x LD_PRELOAD=... in every section, for Open MPI 4 applies -x (and 5's --set-env)
    to its own section (app context) only, the last of a name winning. A user's -x LD_PRELOAD=v (or --set-env)
    becomes ARShim's library followed by v in place; -x LD_PRELOAD (this environment's value) ARShim's library
    followed by that value; a pattern that forwards it (-x LD_*, Open MPI 5) is followed by ARShim's -x."""
    launcher, spelling = os.path.basename(command[0]), SPELLING["openmpi"]
    replace, insert = {}, {}
    for start, options, program, end in sections(command):
        preload_set = False
        for i, n in options:
            words = command[i:i + n]
            name, values = option_name(words[0]), option_values(words)
            variable, assigned, value = values[-1].partition("=") if values else ("", "", "")
            if name in ("-x", "-set-env") and len(values) == 1 and (assigned or name == "-x"):
                if variable == "LD_PRELOAD":
                    merged = merged_preload(library, value) if assigned else preload_value(library)
                    replace[i + n - 1] = replace_suffix(words[-1], values[0], "LD_PRELOAD=" + merged)
                    preload_set = True
                elif not assigned and "*" in variable and fnmatch.fnmatchcase("LD_PRELOAD", variable):
                    insert.setdefault(i + n, []).extend(["-x", "LD_PRELOAD=" + preload_value(library)])
                    preload_set = True
                continue
            target = values[0].split("[", 1)[0] if values else ""
            if name == "-append-env" and len(values) == 2:
                continue  # applied in order after ARShim's -x at the section's start: ARShim's library stays first
            if name in ("-prepend-env", "-unset-env") and target == "LD_PRELOAD":
                raise ToolError(f"{launcher} {' '.join(words)}: this would take ARShim's library out of the first "
                                f"place in LD_PRELOAD or out of it; set the ranks' LD_PRELOAD with {spelling} "
                                "instead (ARShim's library then goes first)")
            if name == "-app":
                raise ToolError(f"{launcher} {' '.join(words)}: Open MPI gives the programs of an app file none of "
                                "the command line's -x, so arshim run cannot preload ARShim in them; add -x "
                                f"LD_PRELOAD={library} to each line of the file and run {launcher} itself")
            if name in ("-tune", "-am") and values and file_sets_preload(values[0]):
                raise ToolError(f"{launcher} {' '.join(words)}: the file sets LD_PRELOAD, which arshim run cannot "
                                f"merge ARShim's library into; set it on the command line instead ({spelling})")
            refuse_unknown_preload(launcher, words, spelling)
        env_program_edits(command, program, end, library, replace, spelling)
        own = [] if preload_set else env_args("openmpi", {"LD_PRELOAD": preload_value(library)})
        insert.setdefault(start, [])[:0] = own + settings_arguments("openmpi")
    return assemble(command, replace, insert)


def export_value(value, library):
    """An srun --export value (or SLURM_EXPORT_ENV) with ARShim's library first in LD_PRELOAD: the value's own
    LD_PRELOAD=v after it (LD_PRELOAD by name: this environment's), and with a list of names the ARSHIM_* settings
    added by name."""
    words = [w for w in value.split(",") if w]
    if words and words[0].upper() in ("NONE", "NIL"):
        raise ToolError(f"srun --export={value}: Slurm passes no variable to the ranks with {words[0]}, so "
                        "ARShim cannot be preloaded; use --export=ALL or a list of variable names")
    own = [w for w in words if w.split("=", 1)[0] == "LD_PRELOAD"]
    kept = [w for w in words if w.split("=", 1)[0] != "LD_PRELOAD"]
    preload = merged_preload(library, own[-1].split("=", 1)[1]) if own and "=" in own[-1] else preload_value(library)
    if "," in preload:
        raise ToolError(f"LD_PRELOAD={preload}: srun --export separates variables with commas, so a path with a "
                        "comma cannot be passed; move the library (--lib) or set LD_PRELOAD in the job script")
    if any(w.upper() == "ALL" for w in kept):
        return ",".join(kept + [f"LD_PRELOAD={preload}"])
    return ",".join(kept + [f"LD_PRELOAD={preload}"] + [n for n in settings_to_pass() if n not in kept])


def srun_command(command, library):
    """srun: the ranks, not srun, get LD_PRELOAD, through --export. An --export already on the command line (or
    SLURM_EXPORT_ENV) is kept and extended: with ALL the ranks inherit the ARSHIM_* settings, with a list of names
    they are added to it by name; an LD_PRELOAD=v in it follows ARShim's library. A heterogeneous step's later
    components (`:`) inherit the first one's --export unless they give their own, which is extended alike. Slurm
    lets the user's environment win over explicit values under ALL, so srun runs without LD_PRELOAD in its own
    environment (an earlier LD_PRELOAD is kept after ARShim's library)."""
    spelling = SPELLING["srun"]
    replace, insert = {}, {}
    for component, (_, options, program, end) in enumerate(sections(command, srun_option_width)):
        exported = False
        for i, n in options:
            words = command[i:i + n]
            if words[0] == "--export" and n == 2:
                replace[i], replace[i + 1] = "--export=" + export_value(words[1], library), None
                exported = True
            elif words[0].startswith("--export="):
                replace[i] = "--export=" + export_value(words[0][len("--export="):], library)
                exported = True
            else:
                refuse_unknown_preload("srun", words, spelling)
        if component == 0 and not exported:
            insert[1] = ["--export=" + export_value(os.environ.get("SLURM_EXPORT_ENV", "ALL"), library)]
        env_program_edits(command, program, end, library, replace, spelling)
    return assemble(command, replace, insert)


def preloaded_command(command, flavor, library):
    """The launcher command line with the library preloaded in its ranks (srun, or mpirun/mpiexec of `flavor`), first
    in their LD_PRELOAD whichever way the line sets one; a way it cannot merge into is refused (ToolError)."""
    if is_srun(command):
        return srun_command(command, library)
    return openmpi_command(command, library) if flavor == "openmpi" else hydra_command(command, library)


def launch_environment(command):
    """The launcher's environment: without the launcher's own variables (not settings of the library), and for srun
    without LD_PRELOAD (srun passes ARShim's LD_PRELOAD to the ranks in --export)."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    if is_srun(command):
        env.pop("LD_PRELOAD", None)
    return env


# ------------------------------------------------------------------------------------------------------------------
# benchmark launches: each configuration sets exactly the ARSHIM_* variables it wants

def mpirun(flavor, np_, *extra):
    """The plain launcher line of the benchmark drivers on this machine: Debian's mpirun of the flavor; Open MPI
    oversubscribed and yielding (more ranks than cores must not spin each other out), then `extra` options."""
    if flavor == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "-n", str(np_), *extra]
    return ["mpirun.mpich", "-n", str(np_), *extra]


def benchmark_environment():
    """This environment for a benchmark launch: root allowed under Open MPI (containers, CI), and no inherited
    ARSHIM_* variable, so that only what a configuration sets reaches the ranks."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return {k: v for k, v in env.items() if not k.startswith("ARSHIM_")}


def run_benchmark(cmd, timeout):
    """Runs a benchmark launch in benchmark_environment(); its stdout, or RuntimeError with its output."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=benchmark_environment())
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return proc.stdout
