"""ARShim's user tools as one package: the `arshim` command and the scripts beside it (report, tune, benchmarks)
share these modules instead of each keeping its own copy.

  sizes      byte counts read from and written as text ("64K", "1 MiB")
  flavors    which MPI (mpich, openmpi) a program or a launcher belongs to
  launchers  launcher command lines that preload ARShim in the ranks (mpirun, mpiexec, srun)
  files      bounded reading of untrusted files (regular files only, size and nesting limits), atomic writes that
             never follow a symbolic link or open a FIFO, output names checked before the work
  text       terminal-safe text from untrusted strings
  options    command lines checked before any work: one-line, escaped errors; counts, sizes, output names
  statslog   reading and validating ARShim statistics logs (arshim-stats/1)
  report     `arshim report`
  tune       `arshim tune`
  simulate   `arshim simulate` (SimGrid SMPI)
  mpich_coll `arshim mpich-tests` (MPICH's own allreduce tests, natively and with ARShim; development tool)

Standard library only, except jsonschema (statslog) and matplotlib (report --plot), imported through need().
"""
import importlib
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"


class ToolError(Exception):
    """A problem the user can act on: printed as one line `<tool>: <message>` (exit status 2), never a traceback."""


def need(name, debian_package, purpose):
    """Imports a module from outside the standard library. `arshim` may run under an interpreter without Debian's
    packages (pyenv, a virtual environment): then the command runs again, once, under the system's Python."""
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.path.exists(SYSTEM_PYTHON) \
            and not os.environ.get("ARSHIM_TOOLS_REEXEC"):
        os.environ["ARSHIM_TOOLS_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.realpath(sys.argv[0])] + sys.argv[1:])
    raise ToolError(f"{purpose} needs the Python package {name} (Debian: apt-get install {debian_package})")
