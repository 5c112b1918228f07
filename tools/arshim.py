#!/usr/bin/env python3
"""arshim: run MPI programs with the ARShim allreduce accelerator preloaded, and inspect what it did.

  arshim run [--mpi mpich|openmpi] [--lib PATH] -- mpirun -n 4 ./app args
  arshim policy explain|check|show|options ...
  arshim bench kernels|allreduce|cma ...
  arshim report RUN.json [RUN.json] ...
  arshim cluster up|run|verify|down ...

ARShim's settings are ARSHIM_* environment variables (see README.md or `arshim policy options`).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

FLAVORS = ("mpich", "openmpi")
HERE = os.path.dirname(os.path.realpath(__file__))

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


class ArshimError(Exception):
    pass


def find_library(flavor, explicit=None):
    """The libarshim-<flavor>.so to preload: --lib, $ARSHIM_LIB_DIR, the build tree, or the install tree."""
    if explicit:
        if not os.path.isfile(explicit):
            raise ArshimError(f"--lib {explicit}: no such file")
        return os.path.realpath(explicit)
    name = f"libarshim-{flavor}.so"
    candidates = []
    if os.environ.get("ARSHIM_LIB_DIR"):
        candidates.append(os.environ["ARSHIM_LIB_DIR"])
    candidates += [os.path.join(HERE, "..", "shim"), os.path.join(HERE, "..", "lib")]
    lib_root = os.path.join(HERE, "..", "lib")
    if os.path.isdir(lib_root):
        candidates += [os.path.join(lib_root, d) for d in sorted(os.listdir(lib_root))]
    for directory in candidates:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ArshimError(f"cannot find {name} (looked in {', '.join(os.path.normpath(c) for c in candidates)}); "
                      "build it with `meson compile -C build` or set ARSHIM_LIB_DIR")


def flavor_of_libraries(text):
    """MPI flavor from `ldd` output or a list of library names: Open MPI's libmpi.so.40, MPICH's libmpich.so.12."""
    if re.search(r"libmpich(fort|cxx)?\.so", text) or re.search(r"libmpi\.so\.12\b", text):
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


def program_of(command):
    """Index of the application in an mpirun command line, or None."""
    i = 1
    while i < len(command):
        word = command[i]
        if word == "--":
            return i + 1 if i + 1 < len(command) else None
        if word in PAIR_OPTIONS:
            i += 3
        elif word in VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        elif word.startswith(":"):
            i += 1
        else:
            return i
    return None


def detect_flavor(command):
    index = program_of(command)
    if index is None:
        raise ArshimError("cannot find the program in the mpirun command line; pass --mpi mpich|openmpi")
    program = resolve_program(command[index])
    if program is None:
        raise ArshimError(f"{command[index]}: program not found; pass --mpi mpich|openmpi")
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


def launcher_flavor(launcher):
    real = os.path.realpath(shutil.which(launcher) or launcher)
    name = os.path.basename(real)
    if "openmpi" in real or name in ("orterun", "prterun"):
        return "openmpi"
    if "mpich" in real or "hydra" in name:
        return "mpich"
    return None


def preload_arguments(flavor, library):
    """Launcher options that preload the library in every rank and pass this environment's ARSHIM_* settings to
    every rank (on other hosts too). Rank 0's settings win anyway: the shim broadcasts them at MPI_Init."""
    preload = library
    if os.environ.get("LD_PRELOAD"):
        preload = library + ":" + os.environ["LD_PRELOAD"]
    settings = sorted(name for name in os.environ if name.startswith("ARSHIM_"))
    if flavor == "openmpi":
        out = ["-x", f"LD_PRELOAD={preload}"]
        for name in settings:
            out += ["-x", name]
        return out
    out = ["-genv", "LD_PRELOAD", preload]
    for name in settings:
        out += ["-genv", name, os.environ[name]]
    return out


def cmd_run(args):
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ArshimError("nothing to run: arshim run [--mpi mpich|openmpi] -- mpirun -n 4 ./app")
    flavor = args.mpi or detect_flavor(command)
    library = find_library(flavor, args.lib)
    launcher = launcher_flavor(command[0])
    if launcher and launcher != flavor:
        raise ArshimError(f"{command[0]} is the {launcher} launcher but the program uses {flavor}; "
                          f"use mpirun.{flavor}")
    full = [command[0]] + preload_arguments(flavor, library) + command[1:]
    if args.verbose:
        print("arshim: " + " ".join(full), file=sys.stderr)
    os.execvp(full[0], full)


def tool_path(name):
    for directory in (os.path.join(HERE, "policy"), os.path.join(HERE, "bench"), HERE):
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
    scripts = {"kernels": os.path.join("bench", "bench_kernels_report.py"),
               "allreduce": os.path.join("allreduce_bench", "bench_allreduce.py")}
    if args.what == "cma":
        exe = os.path.join(HERE, "bench", "arshim-bench-cma")
        if not os.access(exe, os.X_OK):
            raise ArshimError(f"cannot find {exe} (build ARShim first)")
        os.execv(exe, [exe] + args.rest)
    path = find_script(scripts[args.what])
    extra = []
    if args.what == "kernels":
        # The kernel benchmark programs are built next to this launcher (build/tools/bench/), not next to the
        # report script's source: name them unless the caller did.
        for flavor in FLAVORS:
            exe = os.path.join(HERE, "bench", "arshim-bench-kernels-" + flavor)
            if os.access(exe, os.X_OK) and f"--{flavor}-exe" not in args.rest:
                extra += [f"--{flavor}-exe", exe]
    os.execv(sys.executable, [sys.executable, path] + extra + args.rest)


def find_script(relative):
    """A helper script of the source tree, from the build tree (tools/ is next to this file's source) or beside."""
    source_root = os.path.realpath(os.path.join(HERE, "..", ".."))
    for candidate in (os.path.join(HERE, relative), os.path.join(source_root, "tools", relative),
                      os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])), relative)):
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
    raise ArshimError(f"cannot find tools/{relative}")


def cmd_report(args):
    path = find_script(os.path.join("report", "arshim_report.py"))
    os.execv(sys.executable, [sys.executable, path] + args.rest)


def cmd_cluster(args):
    path = find_script(os.path.join("cluster", "arshim-cluster"))
    os.execv("/bin/bash", ["/bin/bash", path] + args.rest)


# Commands run as `arshim COMMAND ARGS...` that pass ARGS untouched to another program: name -> (help, function).
PASSTHROUGH = {
    "policy": ("explain, check or show the selection policy (arshim-policy)", cmd_policy),
    "report": ("print, compare or plot call-statistics logs (ARSHIM_STATS files)", cmd_report),
    "cluster": ("run programs on an emulated multi-host cluster (network namespaces)", cmd_cluster),
}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="arshim", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Run `arshim COMMAND --help` for each command's options.")
    sub = parser.add_subparsers(dest="command_name", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run an mpirun command line with ARShim preloaded",
                         description="Adds ARShim's library to an mpirun command line: `-x LD_PRELOAD=...` for Open "
                                     "MPI, `-genv LD_PRELOAD ...` for MPICH. The MPI flavor is detected from the "
                                     "program's shared libraries (for python, from its mpi4py module) unless --mpi "
                                     "is given. LD_PRELOAD is passed to the ranks, never to the launcher itself.",
                         usage="arshim run [--mpi mpich|openmpi] [--lib PATH] [-v] -- mpirun [ARGS] PROGRAM [ARGS]")
    run.add_argument("--mpi", choices=FLAVORS, help="MPI flavor of the program (default: detected)")
    run.add_argument("--lib", help="path of the libarshim-<flavor>.so to preload (default: found next to arshim)")
    run.add_argument("-v", "--verbose", action="store_true", help="print the mpirun command line that is run")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the mpirun command line, after --")
    run.set_defaults(func=cmd_run)

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
