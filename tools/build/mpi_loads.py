#!/usr/bin/env python3
"""mpi_loads: whether an MPI library pulls in a given shared library (test/device/meson.build: Debian's MPICH 5 links
Intel's Level Zero loader, so a test double with the loader's soname cannot stand in for it there).

  mpi_loads.py LIBDIR SONAME LIBRARY...

Prints "yes" when `ldd` of LIBDIR/LIBRARY (the first of the names that exists) lists SONAME, "no" when it does not,
and "unknown" (with the reason on stderr) when no such library is found or ldd fails. Exit status 0 in every case."""
import os
import subprocess
import sys


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
            print("yes" if any(line.split()[:1] == [soname] for line in listing.splitlines()) else "no")
            return 0
    print(f"mpi_loads.py: none of {', '.join(names)} in {libdir}", file=sys.stderr)
    print("unknown")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
