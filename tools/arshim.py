#!/usr/bin/env python3
"""arshim: run MPI programs with the ARShim allreduce accelerator preloaded, and inspect what it did.

  arshim run [--mpi mpich|openmpi] [--lib PATH] -- mpirun|mpiexec|srun ... PROGRAM args
  arshim lib [--mpi mpich|openmpi] [PROGRAM]     the library to preload (for batch scripts and other launchers)
  arshim policy explain|check|show|options|default ...
  arshim report RUN.json [RUN.json] ...
  arshim bench kernels|allreduce|cma ...
  arshim cluster up|run|verify|down ...
  arshim --version

ARShim's settings are ARSHIM_* environment variables (`arshim policy options`, man arshim, README.md).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

FLAVORS = ("mpich", "openmpi")
HERE = os.path.dirname(os.path.realpath(__file__))
# Filled in by meson (tools/meson.build): ARShim's version, and where an installation keeps the libraries and the
# data files relative to this script's directory (bindir). Unfilled when the script runs from the source tree.
VERSION = "@ARSHIM_VERSION@"
INSTALLED_LIBDIR = "@ARSHIM_LIBDIR_FROM_BINDIR@"
INSTALLED_DATADIR = "@ARSHIM_DATADIR_FROM_BINDIR@"
# The launcher's own variables: read here, never passed to the ranks (they are not settings of the library).
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


class ArshimError(Exception):
    pass


def library_dirs():
    """Where the libarshim-<flavor>.so files are looked for, in order: $ARSHIM_LIB_DIR, the installation this
    script belongs to (bindir -> libdir, as configured), the build tree (build/tools/arshim -> build/shim)."""
    dirs = []
    if os.environ.get("ARSHIM_LIB_DIR"):
        dirs.append(os.environ["ARSHIM_LIB_DIR"])
    if not INSTALLED_LIBDIR.startswith("@"):
        dirs.append(os.path.normpath(os.path.join(HERE, INSTALLED_LIBDIR)))
    dirs.append(os.path.normpath(os.path.join(HERE, "..", "shim")))
    return dirs


def find_library(flavor, explicit=None):
    """The libarshim-<flavor>.so to preload: --lib, or the first of library_dirs() that has it."""
    if explicit:
        if not os.path.isfile(explicit):
            raise ArshimError(f"--lib {explicit}: no such file")
        return os.path.realpath(explicit)
    name = f"libarshim-{flavor}.so"
    for directory in library_dirs():
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ArshimError(f"cannot find {name} (looked in {', '.join(library_dirs())}); build it with "
                      "`meson compile -C build`, install ARShim with that MPI enabled, or set ARSHIM_LIB_DIR")


def available_libraries():
    """flavor -> library path, for the flavors this installation or build has a library for."""
    found = {}
    for flavor in FLAVORS:
        try:
            found[flavor] = find_library(flavor)
        except ArshimError:
            pass
    return found


def flavor_of_libraries(text):
    """MPI flavor from `ldd` output or a list of library names. MPICH ABI (soname version 12): MPICH's
    libmpich.so.12, Intel MPI's and MVAPICH's libmpi.so.12, Cray MPICH's libmpi_cray.so.12 / libmpi_gnu_123.so.12.
    Open MPI (3.x-5.x): libmpi.so.40 and its Fortran libraries."""
    if re.search(r"libmpich\w*\.so", text) or re.search(r"libmpi\w*\.so\.12\b", text):
        return "mpich"
    if re.search(r"libmpi(_mpifh|_usempif08|_usempi_ignore_tkr|_cxx)?\.so\.4\d", text) or "openmpi" in text:
        return "openmpi"
    return None


def ldd(path):
    try:
        return subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def resolve_program(word):
    if os.sep in word:
        return word if os.path.isfile(word) else None
    return shutil.which(word)


def python_mpi_flavor(python):
    """The MPI an interpreter's mpi4py is built against (its MPI extension module's shared-library dependencies)."""
    code = "import glob, os, mpi4py; print('\\n'.join(glob.glob(os.path.join(os.path.dirname(mpi4py.__file__), 'MPI*.so'))))"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for module in out.split():
        flavor = flavor_of_libraries(ldd(module))
        if flavor:
            return flavor
    return None


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


def program_flavor(word):
    """The MPI flavor of a program (a path or a name on PATH): its shared libraries, or for a Python interpreter its
    mpi4py's."""
    program = resolve_program(word)
    if program is None:
        raise ArshimError(f"{word}: program not found; pass --mpi mpich|openmpi")
    if os.path.basename(program).startswith("python"):
        flavor = python_mpi_flavor(program)
        if flavor:
            return flavor
        raise ArshimError(f"{program}: cannot tell which MPI its mpi4py uses; pass --mpi mpich|openmpi")
    flavor = flavor_of_libraries(ldd(program))
    if flavor is None:
        raise ArshimError(f"{program} is linked to neither MPICH nor Open MPI (ldd shows no libmpich/libmpi); "
                          "pass --mpi mpich|openmpi if it loads MPI at run time")
    return flavor


def detect_flavor(command):
    index = program_index(command)
    if index is None:
        raise ArshimError(f"cannot find the program in the {os.path.basename(command[0])} command line; "
                          "pass --mpi mpich|openmpi")
    return program_flavor(command[index])


def launcher_flavor(launcher):
    real = os.path.realpath(shutil.which(launcher) or launcher)
    name = os.path.basename(real)
    if "openmpi" in real or name in ("orterun", "prterun"):
        return "openmpi"
    if "mpich" in real or "hydra" in name:
        return "mpich"
    return None


def settings_to_pass():
    """The ARSHIM_* settings of this environment (not the launcher's own variables)."""
    return sorted(name for name in os.environ if name.startswith("ARSHIM_") and name not in LAUNCHER_VARIABLES)


def preload_value(library):
    return library + ":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else library


def preload_arguments(flavor, library):
    """mpirun/mpiexec options that preload the library in every rank and pass this environment's ARSHIM_* settings
    to every rank (on other hosts too). Rank 0's settings win anyway: the shim broadcasts them at MPI_Init."""
    preload = preload_value(library)
    if flavor == "openmpi":
        out = ["-x", f"LD_PRELOAD={preload}"]
        for name in settings_to_pass():
            out += ["-x", name]
        return out
    out = ["-genv", "LD_PRELOAD", preload]
    for name in settings_to_pass():
        out += ["-genv", name, os.environ[name]]
    return out


def srun_command(command, library):
    """srun: the ranks, not srun, get LD_PRELOAD, through --export. An --export already on the command line (or
    SLURM_EXPORT_ENV) is kept and extended: with ALL the ranks inherit the ARSHIM_* settings, with a list of names
    they are added to it by name. Slurm lets the user's environment win over explicit values under ALL, so srun
    runs without LD_PRELOAD in its own environment (an earlier LD_PRELOAD is kept after ARShim's library)."""
    preload = preload_value(library)
    if "," in preload:
        raise ArshimError(f"LD_PRELOAD={preload}: srun --export separates variables with commas, so a path with a "
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
        raise ArshimError(f"srun --export={value}: Slurm passes no variable to the ranks with {words[0]}, so "
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


def launch_environment(command):
    """The launcher's environment: without the launcher's own variables (not settings of the library), and for srun
    without LD_PRELOAD (srun passes ARShim's LD_PRELOAD to the ranks in --export)."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    if is_srun(command):
        env.pop("LD_PRELOAD", None)
    return env


def cmd_run(args):
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ArshimError("nothing to run: arshim run [--mpi mpich|openmpi] -- mpirun|mpiexec|srun ... ./app")
    flavor = args.mpi or detect_flavor(command)
    library = find_library(flavor, args.lib)
    if is_srun(command):
        full = srun_command(command, library)
    else:
        launcher = launcher_flavor(command[0])
        if launcher and launcher != flavor:
            raise ArshimError(f"{command[0]} is the {launcher} launcher but the program uses {flavor}; "
                              f"use mpirun.{flavor}")
        full = [command[0]] + preload_arguments(flavor, library) + command[1:]
    if args.verbose:
        print("arshim: " + " ".join(full), file=sys.stderr)
    try:
        os.execvpe(full[0], full, launch_environment(command))
    except OSError as e:
        raise ArshimError(f"{full[0]}: cannot run ({e.strerror})") from None


def cmd_lib(args):
    """Prints the library to preload, for launchers `arshim run` does not know (docs/install.md has recipes)."""
    if args.mpi:
        flavor = args.mpi
    elif args.program:
        flavor = program_flavor(args.program[0])
    else:
        found = available_libraries()
        if len(found) != 1:
            raise ArshimError("name the MPI: arshim lib --mpi mpich|openmpi, or arshim lib PROGRAM "
                              f"(libraries found for: {', '.join(found) or 'none'})")
        flavor = next(iter(found))
    print(find_library(flavor, args.lib))


# What each library serves (docs/install.md "Other MPI builds").
FAMILY = {"mpich": "MPICH ABI: MPICH >= 3.x, Intel MPI, MVAPICH, Cray MPICH",
          "openmpi": "Open MPI, the version it was built against (4.x or 5.x), HPC-X"}


def version_text():
    lines = [f"arshim {VERSION if not VERSION.startswith('@') else '(source tree, version unknown)'}"]
    found = available_libraries()
    for flavor in FLAVORS:
        where = found.get(flavor, "not built")
        lines.append(f"  {flavor:8} {where}  [{FAMILY[flavor]}]")
    return "\n".join(lines)


def tool_path(name):
    for directory in (os.path.join(HERE, "policy"), os.path.join(HERE, "bench"), os.path.join(HERE, "tune"), HERE):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise ArshimError(f"cannot find {name} next to {HERE}; build it with `meson compile -C build`")


def cmd_policy(args):
    path = tool_path("arshim-policy")
    os.execv(path, [path] + args.rest)


def cmd_bench(args):
    if args.what == "cma":
        exe = tool_path("arshim-bench-cma")
        os.execv(exe, [exe] + args.rest)
    if args.what == "allreduce":
        path = find_script(os.path.join("allreduce_bench", "bench_allreduce.py"), build_tree_only=True)
        os.execv(sys.executable, [sys.executable, path] + args.rest)
    # kernels: the report script and the benchmark programs, from the build tree (build/tools/bench/) or the
    # installation (bin/arshim-bench-kernels-*); the programs are named unless the caller did.
    try:
        path = find_script(os.path.join("bench", "bench_kernels_report.py"))
    except ArshimError:
        path = tool_path("arshim-bench-kernels-report")
    extra = []
    for flavor in FLAVORS:
        for exe in (os.path.join(HERE, "bench", "arshim-bench-kernels-" + flavor),
                    os.path.join(HERE, "arshim-bench-kernels-" + flavor)):
            if os.access(exe, os.X_OK) and f"--{flavor}-exe" not in args.rest:
                extra += [f"--{flavor}-exe", exe]
                break
    os.execv(sys.executable, [sys.executable, path] + extra + args.rest)


def find_script(relative, build_tree_only=False):
    """A helper script: installed (<datadir>/arshim/tools/), or from the source tree of this build."""
    candidates = []
    if not INSTALLED_DATADIR.startswith("@") and not build_tree_only:
        candidates.append(os.path.join(HERE, INSTALLED_DATADIR, "tools", relative))
    source_root = os.path.realpath(os.path.join(HERE, "..", ".."))
    candidates += [os.path.join(HERE, relative), os.path.join(source_root, "tools", relative),
                   os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])), relative)]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    meson_info = os.path.join(HERE, "..", "meson-info", "meson-info.json")
    if os.path.isfile(meson_info):
        import json
        with open(meson_info) as f:
            root = json.load(f)["directories"]["source"]
        candidate = os.path.join(root, "tools", relative)
        if os.path.isfile(candidate):
            return candidate
    if build_tree_only:
        raise ArshimError(f"this command is a development tool that runs from a build tree (tools/{relative} is not "
                          "installed): build/tools/arshim in a meson build of the source")
    raise ArshimError(f"cannot find tools/{relative}")


def cmd_report(args):
    path = find_script(os.path.join("report", "arshim_report.py"))
    os.execv(sys.executable, [sys.executable, path] + args.rest)


def cmd_tune(args):
    """arshim tune: the driver script, told where this command and the measurement programs are."""
    path = find_script(os.path.join("tune", "arshim_tune.py"))
    extra = ["--arshim", os.path.realpath(sys.argv[0])]
    for flavor in FLAVORS:
        try:
            extra += [f"--probe-{flavor}", tool_path("arshim-tune-probe-" + flavor)]
        except ArshimError:
            pass
    os.execv(sys.executable, [sys.executable, path] + extra + args.rest)


def cmd_cluster(args):
    path = find_script(os.path.join("cluster", "arshim-cluster"), build_tree_only=True)
    os.execv("/bin/bash", ["/bin/bash", path] + args.rest)


# Commands run as `arshim COMMAND ARGS...` that pass ARGS untouched to another program: name -> (help, function).
PASSTHROUGH = {
    "policy": ("explain, check or show the selection policy (arshim-policy)", cmd_policy),
    "report": ("print, compare or plot call-statistics logs (ARSHIM_STATS files)", cmd_report),
    "cluster": ("run programs on an emulated multi-host cluster (network namespaces)", cmd_cluster),
    "tune": ("measure this machine under your launcher line and write a tuned policy table", cmd_tune),
}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="arshim", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Run `arshim COMMAND --help` for each command's options.")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run an mpirun, mpiexec or srun command line with ARShim preloaded",
                         description="Adds ARShim's library to a launcher command line so that the ranks, not the "
                                     "launcher, load it: `-x LD_PRELOAD=...` for Open MPI's mpirun/mpiexec, "
                                     "`-genv LD_PRELOAD ...` for Hydra's (MPICH, Intel MPI, MVAPICH), "
                                     "`--export=ALL,LD_PRELOAD=...` for Slurm's srun (an --export already there is "
                                     "extended). The MPI flavor is detected from the program's shared libraries "
                                     "(for python, from its mpi4py module), not from the launcher, unless --mpi is "
                                     "given. ARSHIM_* settings of this environment reach every rank.",
                         usage="arshim run [--mpi mpich|openmpi] [--lib PATH] [-v] -- LAUNCHER [ARGS] PROGRAM [ARGS]",
                         epilog="examples:\n"
                                "  arshim run -- mpirun.openmpi -n 4 ./app\n"
                                "  arshim run -- mpiexec -n 4 python3 train.py\n"
                                "  arshim run -- srun -n 64 --mpi=pmix ./app",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--mpi", choices=FLAVORS, help="MPI flavor of the program (default: detected)")
    run.add_argument("--lib", help="path of the libarshim-<flavor>.so to preload (default: found next to arshim)")
    run.add_argument("-v", "--verbose", action="store_true", help="print the command line that is run")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the launcher command line, after --")
    run.set_defaults(func=cmd_run)

    lib = sub.add_parser("lib", help="print the library to preload (batch scripts, other launchers)",
                         description="Prints the absolute path of the libarshim-<flavor>.so for the given MPI "
                                     "flavor, or for the MPI a program uses (detected as by `arshim run`). For "
                                     "launchers `arshim run` does not handle: put it in the ranks' LD_PRELOAD "
                                     "(docs/install.md has recipes for batch scripts, torchrun and horovodrun).",
                         usage="arshim lib [--mpi mpich|openmpi] [--lib PATH] [PROGRAM]",
                         epilog="examples:\n"
                                "  srun --export=ALL,LD_PRELOAD=$(arshim lib ./app) ./app\n"
                                "  horovodrun -np 4 --mpi-args=\"-x LD_PRELOAD=$(arshim lib python3)\" python3 train.py",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    lib.add_argument("--mpi", choices=FLAVORS, help="MPI flavor (default: detected from PROGRAM)")
    lib.add_argument("--lib", help=argparse.SUPPRESS)
    lib.add_argument("program", nargs="*", help="program whose MPI decides (a path, a name on PATH, or python3)")
    lib.set_defaults(func=cmd_lib)

    # policy, report and cluster hand every argument to another program (which prints its own --help): argparse's
    # REMAINDER cannot take a first argument that looks like an option (`arshim cluster --help`), so main()
    # dispatches them before parsing; they are declared here for the command list of `arshim --help`.
    sub.add_parser("policy", help=PASSTHROUGH["policy"][0], add_help=False)

    bench = sub.add_parser("bench", help="benchmarks: kernels (SIMD reductions) or allreduce (paths vs native)")
    bench.add_argument("what", choices=("kernels", "allreduce", "cma"))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options of the benchmark (--help for them)")
    bench.set_defaults(func=cmd_bench)

    for name in ("report", "cluster"):
        sub.add_parser(name, help=PASSTHROUGH[name][0], add_help=False)

    parser.add_argument("--version", action="version", version=version_text(),
                        help="print ARShim's version and the MPI flavors it has libraries for, then exit")

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in PASSTHROUGH:
        args = argparse.Namespace(command_name=argv[0], rest=argv[1:], func=PASSTHROUGH[argv[0]][1])
    else:
        args = parser.parse_args(argv)
    try:
        args.func(args)
    except ArshimError as error:
        print(f"arshim: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
