"""Which MPI a program or a launcher belongs to. ARShim has one library per MPI ABI, so the flavor decides which
library a job preloads; it is read from the program's shared libraries, not guessed from names where avoidable."""
import os
import re
import shutil
import subprocess

from . import ToolError
from .text import escape

FLAVORS = ("mpich", "openmpi")
# The libraries: one per flavor, and libarshim-abi.so for programs linked to the MPI standard ABI (libmpi_abi.so.1),
# whatever MPI implements it; its launcher is that MPI's.
LIBRARY_FLAVORS = FLAVORS + ("abi",)
# What each library serves (docs/install.md "Other MPI builds").
FAMILY = {"mpich": "MPICH ABI: MPICH >= 3.x, Intel MPI, MVAPICH, Cray MPICH",
          "openmpi": "Open MPI, the version it was built against (4.x or 5.x), HPC-X",
          "abi": "MPI standard ABI (libmpi_abi.so.1): MPICH >= 5.0, Open MPI >= 6.0"}


def flavor_of_libraries(text):
    """MPI flavor from `ldd` output or a list of library names. MPICH ABI (soname version 12): MPICH's
    libmpich.so.12, Intel MPI's and MVAPICH's libmpi.so.12, Cray MPICH's libmpi_cray.so.12 / libmpi_gnu_123.so.12.
    Open MPI (3.x-5.x): libmpi.so.40 and its Fortran libraries. The MPI standard ABI: libmpi_abi.so.1 ("abi")."""
    if re.search(r"libmpi_abi\w*\.so", text):
        return "abi"
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


def program_flavor(word):
    """The MPI flavor of a program (a path or a name on PATH): its shared libraries, or for a Python interpreter its
    mpi4py's."""
    program = resolve_program(word)
    if program is None:
        raise ToolError(f"{escape(word)}: program not found; pass --mpi mpich|openmpi")
    if os.path.basename(program).startswith("python"):
        flavor = python_mpi_flavor(program)
        if flavor:
            return flavor
        raise ToolError(f"{escape(program)}: cannot tell which MPI its mpi4py uses; pass --mpi mpich|openmpi")
    flavor = flavor_of_libraries(ldd(program))
    if flavor is None:
        raise ToolError(f"{escape(program)} is linked to neither MPICH, Open MPI nor the MPI standard ABI (ldd shows no "
                        "libmpich/libmpi/libmpi_abi); pass --mpi mpich|openmpi|abi if it loads MPI at run time")
    return flavor


def launcher_flavor(launcher):
    """The MPI a launcher belongs to, from its name and the file it resolves to (Debian's mpirun.openmpi is
    orterun, mpirun.mpich is mpiexec.hydra), or None for a launcher of either (srun, a wrapper script)."""
    real = os.path.realpath(shutil.which(launcher) or launcher)
    names = launcher + " " + real
    if "openmpi" in names or os.path.basename(real) in ("orterun", "prterun"):
        return "openmpi"
    if "mpich" in names or "hydra" in os.path.basename(real):
        return "mpich"
    return None
