"""Launcher command lines that load ARShim in the ranks, not in the launcher: Open MPI's mpirun/mpiexec (`-x`),
Hydra's (MPICH, Intel MPI, MVAPICH: `-genv`) and Slurm's srun (`--export`). `arshim run`, `arshim tune` and the
benchmark drivers build their command lines here, so a job, the tuner and a benchmark load the library alike."""
import os
import subprocess

from . import ToolError
from .flavors import program_flavor

# The launcher's own variables: read by `arshim`, never passed to the ranks (they are not settings of the library).
LAUNCHER_VARIABLES = ("ARSHIM_LIB_DIR",)

# mpirun options that take a value (both launchers); the program is the first word that is neither an option nor
# an option's value.
VALUE_OPTIONS = {
    "-n", "-np", "-c", "-N", "--n", "--np", "-ppn", "-host", "--host", "-hosts", "-H", "-hostfile", "--hostfile",
    "-machinefile", "--machinefile", "-f", "-wdir", "--wdir", "-x", "-launcher", "-launcher-exec", "-bootstrap",
    "-bootstrap-exec", "-iface", "--map-by", "--bind-to", "--rank-by", "-map-by", "-bind-to", "-rank-by",
    "--prefix", "-prefix", "--path", "-path", "-configfile", "--app", "-genvlist", "-envlist", "-rankfile",
    "--rankfile", "-tmpdir", "--tmpdir", "-output-filename", "--output-filename", "-timeout", "--timeout",
    "-npernode", "--npernode", "-npersocket", "--npersocket", "-binding", "-map", "-mca-param-file",
}
PAIR_OPTIONS = {"-genv", "-env", "--mca", "-mca", "-gmca", "--gmca"}  # take two values
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


def program_of(command, value_options=VALUE_OPTIONS, pair_options=PAIR_OPTIONS):
    """Index of the application in a launcher command line, or None."""
    i = 1
    while i < len(command):
        word = command[i]
        if word == "--":
            return i + 1 if i + 1 < len(command) else None
        if word in pair_options:
            i += 3
        elif word in value_options:
            i += 2
        elif word.startswith("-"):
            i += 1
        elif word.startswith(":"):
            i += 1
        else:
            return i
    return None


def is_srun(command):
    return os.path.basename(command[0]) == "srun"


def program_index(command):
    if is_srun(command):
        return program_of(command, SRUN_VALUE_OPTIONS, set())
    return program_of(command)


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


def preload_value(library):
    return library + ":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else library


def env_args(flavor, env):
    """mpirun/mpiexec options that give every rank these VAR=VALUE pairs: -x under Open MPI, -genv under Hydra."""
    out = []
    for name, value in env.items():
        out += ["-x", f"{name}={value}"] if flavor == "openmpi" else ["-genv", name, value]
    return out


def preload_arguments(flavor, library):
    """mpirun/mpiexec options that preload the library in every rank and pass this environment's ARSHIM_* settings
    to every rank (on other hosts too). Rank 0's settings win anyway: the shim broadcasts them at MPI_Init."""
    out = env_args(flavor, {"LD_PRELOAD": preload_value(library)})
    if flavor == "openmpi":
        for name in settings_to_pass():
            out += ["-x", name]  # by name: Open MPI takes the value from this environment
        return out
    return out + env_args(flavor, {name: os.environ[name] for name in settings_to_pass()})


def srun_command(command, library):
    """srun: the ranks, not srun, get LD_PRELOAD, through --export. An --export already on the command line (or
    SLURM_EXPORT_ENV) is kept and extended: with ALL the ranks inherit the ARSHIM_* settings, with a list of names
    they are added to it by name. Slurm lets the user's environment win over explicit values under ALL, so srun
    runs without LD_PRELOAD in its own environment (an earlier LD_PRELOAD is kept after ARShim's library)."""
    preload = preload_value(library)
    if "," in preload:
        raise ToolError(f"LD_PRELOAD={preload}: srun --export separates variables with commas, so a path with a "
                        "comma cannot be passed; move the library (--lib) or set LD_PRELOAD in the job script")
    end = program_index(command) or len(command)
    at, value = None, None
    for i in range(1, end):
        if command[i] == "--export" and i + 1 < end:
            at, value = (i, i + 2), command[i + 1]
        elif command[i].startswith("--export="):
            at, value = (i, i + 1), command[i][len("--export="):]
    if value is None:
        value = os.environ.get("SLURM_EXPORT_ENV", "ALL")
    words = [w for w in value.split(",") if w]
    if words and words[0].upper() in ("NONE", "NIL"):
        raise ToolError(f"srun --export={value}: Slurm passes no variable to the ranks with {words[0]}, so "
                        "ARShim cannot be preloaded; use --export=ALL or a list of variable names")
    kept = [w for w in words if w.split("=", 1)[0] != "LD_PRELOAD"]
    if any(w.upper() == "ALL" for w in kept):
        export = kept + [f"LD_PRELOAD={preload}"]
    else:
        export = kept + [f"LD_PRELOAD={preload}"] + [n for n in settings_to_pass() if n not in kept]
    option = "--export=" + ",".join(export)
    if at is None:
        return [command[0], option] + command[1:]
    return command[:at[0]] + [option] + command[at[1]:]


def preloaded_command(command, flavor, library):
    """The launcher command line with the library preloaded in its ranks (srun, or mpirun/mpiexec of `flavor`)."""
    if is_srun(command):
        return srun_command(command, library)
    return [command[0]] + preload_arguments(flavor, library) + command[1:]


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
