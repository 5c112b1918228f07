#!/usr/bin/env python3
"""arshim: run MPI programs with the ARShim allreduce accelerator preloaded, and inspect what it did.

  arshim run [--mpi mpich|openmpi] [--lib PATH] -- mpirun|mpiexec|srun ... PROGRAM args
  arshim lib [--mpi mpich|openmpi] [PROGRAM]     the library to preload (for batch scripts and other launchers)
  arshim policy explain|check|show|options|default ...
  arshim report RUN.json [RUN.json] ...
  arshim bench kernels|allreduce|cma|line-floor ...
  arshim cluster up|run|verify|down ...
  arshim simulate --nodes N --ppn P [--topology flat|fat-tree|torus] [--sizes ...] (SimGrid SMPI)
  arshim mpich-tests [--source PATH] [--flavors ...] [--configs ...] [--tests ...]   (development tool)
  arshim --version

ARShim's settings are ARSHIM_* environment variables (`arshim policy options`, man arshim, README.md).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
# Filled in by meson (tools/meson.build): ARShim's version, and where an installation keeps the libraries and the
# data files relative to this script's directory (bindir). Unfilled when the script runs from the source tree.
VERSION = "@ARSHIM_VERSION@"
INSTALLED_LIBDIR = "@ARSHIM_LIBDIR_FROM_BINDIR@"
INSTALLED_DATADIR = "@ARSHIM_DATADIR_FROM_BINDIR@"


def build_source_dir():
    """The source tree of the meson build this script is part of (build/tools/arshim), or None."""
    try:
        with open(os.path.join(HERE, "..", "meson-info", "meson-info.json")) as f:
            return json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def tools_dirs(installed=True):
    """Where the tools' files are (the arshim package, the helper scripts), in order: the installation's
    <datadir>/arshim/tools, this script's directory when it runs from the source tree (tools/arshim.py), the source
    tree's tools/ when it runs from a build tree (build/tools/arshim)."""
    dirs = [os.path.join(HERE, INSTALLED_DATADIR, "tools")] if installed and not INSTALLED_DATADIR.startswith("@") \
        else []
    source = build_source_dir()
    return [os.path.normpath(d) for d in dirs + [HERE] + ([os.path.join(source, "tools")] if source else [])]


sys.path.insert(0, next((d for d in tools_dirs() if os.path.isfile(os.path.join(d, "arshim", "__init__.py"))), HERE))
from arshim import ToolError, launchers, mpich_coll, options, report, simulate, tune  # noqa: E402
from arshim.text import escape, one_line  # noqa: E402
from arshim.flavors import FAMILY, FLAVORS, LIBRARY_FLAVORS, launcher_flavor, program_flavor  # noqa: E402


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
            raise ToolError(f"--lib {escape(explicit)}: no such file")
        return os.path.realpath(explicit)
    name = f"libarshim-{flavor}.so"
    for directory in library_dirs():
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ToolError(f"cannot find {name} (looked in {', '.join(library_dirs())}); build it with "
                      "`meson compile -C build`, install ARShim with that MPI enabled, or set ARSHIM_LIB_DIR")


def available_libraries():
    """flavor -> library path, for the flavors this installation or build has a library for."""
    found = {}
    for flavor in LIBRARY_FLAVORS:
        try:
            found[flavor] = find_library(flavor)
        except ToolError:
            pass
    return found


def cmd_run(args):
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ToolError("nothing to run: arshim run [--mpi mpich|openmpi|abi] -- mpirun|mpiexec|srun ... ./app")
    flavor = args.mpi or launchers.detect_flavor(command)
    library = find_library(flavor, args.lib)
    launcher = None if launchers.is_srun(command) else launcher_flavor(command[0])
    if flavor == "abi":
        # The standard ABI's program runs under the launcher of the MPI behind libmpi_abi.so.1 (MPICH 5: Hydra).
        spelling = launcher or "mpich"
    elif launcher and launcher != flavor:
        raise ToolError(f"{escape(command[0])} is the {launcher} launcher but the program uses {flavor}; use "
                        f"mpirun.{flavor}")
    else:
        spelling = flavor
    full = launchers.preloaded_command(command, spelling, library)
    if args.verbose:
        print("arshim: " + " ".join(full), file=sys.stderr)
    try:
        os.execvpe(full[0], full, launchers.launch_environment(command))
    except OSError as e:
        raise ToolError(f"{escape(full[0])}: cannot run ({e.strerror})") from None


def cmd_lib(args):
    """Prints the library to preload, for launchers `arshim run` does not know (docs/install.md has recipes)."""
    if args.mpi:
        flavor = args.mpi
    elif args.program:
        flavor = program_flavor(args.program[0])
    else:
        found = available_libraries()
        if len(found) != 1:
            raise ToolError("name the MPI: arshim lib --mpi mpich|openmpi, or arshim lib PROGRAM "
                              f"(libraries found for: {', '.join(found) or 'none'})")
        flavor = next(iter(found))
    print(find_library(flavor, args.lib))


def version_text():
    lines = [f"arshim {VERSION if not VERSION.startswith('@') else '(source tree, version unknown)'}"]
    found = available_libraries()
    for flavor in LIBRARY_FLAVORS:
        where = found.get(flavor, "not built")
        lines.append(f"  {flavor:8} {where}  [{FAMILY[flavor]}]")
    return "\n".join(lines)


def tool_path(name):
    for directory in (os.path.join(HERE, "policy"), os.path.join(HERE, "report"), os.path.join(HERE, "bench"),
                      os.path.join(HERE, "tune"), os.path.join(HERE, "simulate"), HERE):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise ToolError(f"cannot find {name} next to {HERE}; build it with `meson compile -C build`")


def run_compiled(command_name, program, argv, usage_error):
    """Runs one of ARShim's compiled tools (arshim-policy, the C benchmarks) with its stdout passed through and its
    stderr passed on escaped line by line (a value given on the command line comes back in its messages). A usage
    error (usage_error(exit status)) becomes one line `arshim: COMMAND: MESSAGE`, exit status 2."""
    try:
        done = subprocess.run([program] + argv, stderr=subprocess.PIPE)
    except OSError as e:
        raise ToolError(f"{escape(program)}: cannot run ({e.strerror})") from None
    except KeyboardInterrupt:
        return 130
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    if usage_error(done.returncode):
        message = next((line for line in lines if line.strip()), f"exit status {done.returncode}")
        message = message.removeprefix(os.path.basename(program) + ": ")
        raise ToolError(f"{command_name}: {escape(message)}")
    for line in lines:
        print(escape(line, 4000), file=sys.stderr)
    return 128 - done.returncode if done.returncode < 0 else done.returncode  # a signal, as a shell shows it


def cmd_policy(args):
    # CLI11 (tools/policy_cli.cpp) ends a command line it cannot parse with exit status 100-127 and two lines.
    return run_compiled("policy", tool_path("arshim-policy"), args.rest, lambda status: 100 <= status <= 127)


def cmd_bench(args):
    if args.what in ("cma", "line-floor"):
        # Both end a bad command line with exit status 2 and one line that repeats the value given.
        return run_compiled(f"bench {args.what}", tool_path("arshim-bench-" + args.what), args.rest,
                            lambda status: status == 2)
    if args.what == "allreduce":
        path = find_script(os.path.join("allreduce_bench", "bench_allreduce.py"), build_tree_only=True)
        # The build this launcher is part of (build/tools/arshim), wherever it lies: the script alone looks only in
        # the source tree's build/. A --build-dir given (it comes later and wins) or ARSHIM_BUILD_DIR still choose.
        extra = []
        if build_source_dir() is not None and not os.environ.get("ARSHIM_BUILD_DIR"):
            extra = ["--build-dir", os.path.normpath(os.path.join(HERE, ".."))]
        os.execv(sys.executable, [sys.executable, path] + extra + args.rest)
    # kernels: the report script and the benchmark programs, from the build tree (build/tools/bench/) or the
    # installation (bin/arshim-bench-kernels-*); the programs are named unless the caller did.
    try:
        path = find_script(os.path.join("bench", "bench_kernels_report.py"))
    except ToolError:
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
    for directory in tools_dirs(installed=not build_tree_only):
        if os.path.isfile(os.path.join(directory, relative)):
            return os.path.join(directory, relative)
    if build_tree_only:
        raise ToolError(f"this command is a development tool that runs from a build tree (tools/{relative} is not "
                        "installed): build/tools/arshim in a meson build of the source")
    raise ToolError(f"cannot find tools/{relative}")


def cmd_report(args):
    """arshim report, told where arshim-stats-summary is: the summary's formatter, the library's own."""
    extra = []
    try:
        extra = ["--summary-program", tool_path("arshim-stats-summary")]
    except ToolError:
        pass
    return report.main(extra + args.rest)


def simulate_probes(option_prefix):
    """The simulation's probe programs (built with -Dsmpi) as options: [OPTION_PREFIX-native, path, ...]."""
    extra = []
    for kind in ("native", "arshim"):
        try:
            extra += [f"{option_prefix}-{kind}", tool_path("arshim-simulate-probe-" + kind)]
        except ToolError:
            pass
    return extra


def cmd_tune(args):
    """arshim tune, told where this command and the measurement programs are (a launch's, and a simulation's for
    --simulate)."""
    extra = ["--arshim", os.path.realpath(sys.argv[0])] + simulate_probes("--simulate-probe")
    for flavor in FLAVORS:
        try:
            extra += [f"--probe-{flavor}", tool_path("arshim-tune-probe-" + flavor)]
        except ToolError:
            pass
    return tune.main(extra + args.rest)


def cmd_simulate(args):
    """arshim simulate, told where the probe programs (built with -Dsmpi) and arshim-policy (its model_us column)
    are."""
    extra = simulate_probes("--probe")
    try:
        extra += ["--policy-program", tool_path("arshim-policy")]
    except ToolError:
        pass
    return simulate.main(extra + args.rest)


def cmd_mpich_tests(args):
    """arshim mpich-tests, told where the source tree is (its test/mpi/mpirun.sh launches the runs) and which build
    to test by default: the build this script is part of (build/tools/arshim), else the source tree's build/."""
    source, build = build_source_dir(), os.path.normpath(os.path.join(HERE, ".."))
    if source is None and os.path.isfile(os.path.join(build, "test", "mpi", "mpirun.sh")):
        source, build = build, os.path.join(build, "build")  # tools/arshim.py of a source tree
    if source is None:
        raise ToolError("mpich-tests is a development tool: run it from a source tree (tools/arshim.py) or a build "
                        "tree (build/tools/arshim)")
    return mpich_coll.main(["--repo-root", source, "--default-build-dir", build] + args.rest)


def cmd_cluster(args):
    path = find_script(os.path.join("cluster", "arshim-cluster"), build_tree_only=True)
    os.execv("/bin/bash", ["/bin/bash", path] + args.rest)


# Commands run as `arshim COMMAND ARGS...` that pass ARGS untouched to another program: name -> (help, function).
PASSTHROUGH = {
    "policy": ("explain, check or show the selection policy (arshim-policy)", cmd_policy),
    "report": ("print, compare or plot call-statistics logs (ARSHIM_STATS files)", cmd_report),
    "cluster": ("run programs on an emulated multi-host cluster (network namespaces)", cmd_cluster),
    "tune": ("measure this machine under your launcher line and write a tuned policy table", cmd_tune),
    "simulate": ("allreduce times of a simulated cluster, with and without ARShim (SimGrid SMPI)", cmd_simulate),
    "mpich-tests": ("run MPICH's own MPI_Allreduce tests natively and with ARShim (development tool)",
                    cmd_mpich_tests),
}


def main(argv=None):
    parser = options.Parser(prog="arshim", description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="Run `arshim COMMAND --help` for each command's options.")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run an mpirun, mpiexec or srun command line with ARShim preloaded",
                         description="Adds ARShim's library to a launcher command line so that the ranks, not the "
                                     "launcher, load it: `-x LD_PRELOAD=...` for Open MPI's mpirun/mpiexec, "
                                     "`-genv LD_PRELOAD ...` for Hydra's (MPICH, Intel MPI, MVAPICH), "
                                     "`--export=ALL,LD_PRELOAD=...` for Slurm's srun (an --export already there is "
                                     "extended). An LD_PRELOAD of your own (environment, -x, -genv, -env, --export; "
                                     "every MPMD section) keeps its libraries after ARShim's; one that cannot be "
                                     "merged is refused. The MPI flavor is detected from the program's shared "
                                     "libraries (for python, from its mpi4py module), not from the launcher, unless "
                                     "--mpi is given. ARSHIM_* settings of this environment reach every rank.",
                         usage="arshim run [--mpi mpich|openmpi] [--lib PATH] [-v] -- LAUNCHER [ARGS] PROGRAM [ARGS]",
                         epilog="examples:\n"
                                "  arshim run -- mpirun.openmpi -n 4 ./app\n"
                                "  arshim run -- mpiexec -n 4 python3 train.py\n"
                                "  arshim run -- srun -n 64 --mpi=pmix ./app",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--mpi", choices=LIBRARY_FLAVORS, help="MPI flavor of the program (default: detected; abi: the MPI "
                     "standard ABI, libmpi_abi.so.1)")
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
    lib.add_argument("--mpi", choices=LIBRARY_FLAVORS, help="MPI flavor (default: detected from PROGRAM)")
    lib.add_argument("--lib", help=argparse.SUPPRESS)
    lib.add_argument("program", nargs="*", help="program whose MPI decides (a path, a name on PATH, or python3)")
    lib.set_defaults(func=cmd_lib)

    # policy, report and cluster hand every argument to another program (which prints its own --help): argparse's
    # REMAINDER cannot take a first argument that looks like an option (`arshim cluster --help`), so main()
    # dispatches them before parsing; they are declared here for the command list of `arshim --help`.
    sub.add_parser("policy", help=PASSTHROUGH["policy"][0], add_help=False)

    bench = sub.add_parser("bench", help="benchmarks: kernels (SIMD reductions) or allreduce (paths vs native)")
    bench.add_argument("what", choices=("kernels", "allreduce", "cma", "line-floor"))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options of the benchmark (--help for them)")
    bench.set_defaults(func=cmd_bench)

    for name in ("report", "cluster", "simulate", "mpich-tests"):
        sub.add_parser(name, help=PASSTHROUGH[name][0], add_help=False)

    parser.add_argument("--version", action="version", version=version_text(),
                        help="print ARShim's version and the MPI flavors it has libraries for, then exit")

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in PASSTHROUGH:
        args = argparse.Namespace(command_name=argv[0], rest=argv[1:], func=PASSTHROUGH[argv[0]][1])
    else:
        args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except ToolError as error:
        print(f"arshim: {one_line(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
