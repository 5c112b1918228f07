#!/usr/bin/env python3
"""mpi_flags: the compile and link flags of an MPI installation that has an mpicc wrapper but no pkg-config file
(meson.build: -Dmpich_prefix=PREFIX / -Dopenmpi_prefix=PREFIX; docs/install.md "Other MPI builds").

  mpi_flags.py mpich|openmpi PREFIX

Runs PREFIX/bin/mpicc (`-show` for the MPICH family: MPICH, Intel MPI, MVAPICH; `--showme:compile` and
`--showme:link` for Open MPI) and prints one flag per line: the compile flags, a line `--`, the link flags. Only the
flags that locate and link the library are kept (-I, -D, -isystem, -L, -l, -Wl, -Xlinker, -pthread); the MPI's own
optimization and warning flags are not ARShim's. A problem is one line on stderr and exit status 1.
"""
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # tools/: the arshim package
from arshim.flavors import FLAVORS  # noqa: E402

COMPILE_PREFIXES = ("-I", "-D")
LINK_PREFIXES = ("-L", "-l", "-Wl,")


def wrapper(prefix):
    path = os.path.join(prefix, "bin", "mpicc")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise RuntimeError(f"no executable bin/mpicc in {prefix} (an MPI installation prefix is expected; for an "
                           "install with a pkg-config file use PKG_CONFIG_PATH and -Dmpich_pkg/-Dopenmpi_pkg)")
    return path


def run(command):
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"{' '.join(command)}: cannot run ({e})")
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"{' '.join(command)} failed ({first[0] if first else f'exit {proc.returncode}'})")
    try:
        return shlex.split(proc.stdout)
    except ValueError as e:  # unbalanced quotes: not a wrapper's output
        raise RuntimeError(f"{' '.join(command)}: cannot split its output into flags ({e})")


def classify(words):
    """(compile, link) flags from a wrapper's words (the compiler itself removed by the caller)."""
    compile_flags, link_flags = [], []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-isystem", "-Xlinker") and i + 1 < len(words):
            if word == "-isystem":
                compile_flags += [word, words[i + 1]]
            else:
                link_flags.append("-Wl," + words[i + 1])
            i += 2
            continue
        if word == "-pthread":
            compile_flags.append(word)
            link_flags.append(word)
        elif word.startswith(COMPILE_PREFIXES):
            compile_flags.append(word)
        elif word.startswith(LINK_PREFIXES):
            link_flags.append(word)
        i += 1
    return compile_flags, link_flags


def flags(flavor, prefix):
    mpicc = wrapper(prefix)
    if flavor == "openmpi":
        compile_flags, _ = classify(run([mpicc, "--showme:compile"]))
        _, link_flags = classify(run([mpicc, "--showme:link"]))
    else:
        words = run([mpicc, "-show"])
        compile_flags, link_flags = classify(words[1:])
    if not any(f.startswith("-l") for f in link_flags):
        raise RuntimeError(f"{mpicc} names no library to link (-l...): is it an {flavor} wrapper?")
    return compile_flags, link_flags


def main(argv):
    if len(argv) != 3 or argv[1] not in FLAVORS:
        print(f"usage: mpi_flags.py {'|'.join(FLAVORS)} PREFIX", file=sys.stderr)
        return 2
    try:
        compile_flags, link_flags = flags(argv[1], argv[2])
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    print("\n".join(compile_flags + ["--"] + link_flags))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
