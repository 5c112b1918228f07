#!/usr/bin/env python3
"""mpi_loads: whether an MPI library pulls in a given shared library (test/device/meson.build: Debian's MPICH 5 links
Intel's Level Zero loader, so a test double with the loader's soname cannot stand in for it there).

  mpi_loads.py LIBDIR SONAME LIBRARY...

Prints "yes" when `ldd` of LIBDIR/LIBRARY (the first of the names that exists) lists SONAME, or when that library
links UCX and one of UCX's run-time modules (the `ucx` directory beside libucs) does (Debian forky's Open MPI 6:
UCX loads libuct_ze.so, which links the real libze_loader.so.1, inside every rank); "no" when neither does; and
"unknown" (with the reason on stderr) when no such library is found or ldd fails. Exit status 0 in every case."""
import os
import subprocess
import sys


def lists(listing, soname):
    return any(line.split()[:1] == [soname] for line in listing.splitlines())


def ucx_module_loads(listing, soname):
    """Whether UCX, when the listing shows it linked (libucs.so.0 => PATH), has a module in PATH's directory's ucx/
    that links SONAME. UCX dlopens its modules at start-up, so they load SONAME into the process as surely as a link."""
    for line in listing.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].startswith("libucs.so") and words[1] == "=>":
            modules = os.path.join(os.path.dirname(words[2]), "ucx")
            try:
                names = sorted(os.listdir(modules))
            except OSError:
                return False
            for name in names:
                path = os.path.join(modules, name)
                if ".so" not in name or os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    module = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60).stdout
                except (OSError, subprocess.SubprocessError):
                    continue
                if lists(module, soname):
                    return True
    return False


def main(argv):
    if len(argv) < 3:
        print("usage: mpi_loads.py LIBDIR SONAME LIBRARY...", file=sys.stderr)
        return 2
    libdir, soname, names = argv[0], argv[1], argv[2:]
    for name in names:
        path = os.path.join(libdir, name)
        if os.path.isfile(path):
            try:
                listing = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60, check=True).stdout
            except (OSError, subprocess.SubprocessError) as error:
                print(f"mpi_loads.py: ldd {path}: {error}", file=sys.stderr)
                print("unknown")
                return 0
            print("yes" if lists(listing, soname) or ucx_module_loads(listing, soname) else "no")
            return 0
    print(f"mpi_loads.py: none of {', '.join(names)} in {libdir}", file=sys.stderr)
    print("unknown")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
