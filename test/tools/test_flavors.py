"""arshim.flavors: the MPI of a program from its `ldd` output, and of a launcher from its name and link target."""
import os

import pytest

from arshim import ToolError
from arshim.flavors import flavor_of_libraries, launcher_flavor, program_flavor

LIBC = "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1a000000)\n"
LDD = {
    "mpich": "\tlibmpich.so.12 => /lib/x86_64-linux-gnu/libmpich.so.12 (0x00007f0c1a400000)\n" + LIBC,
    "openmpi": "\tlibmpi.so.40 => /lib/x86_64-linux-gnu/libmpi.so.40 (0x00007f0c1a400000)\n"
               "\tlibopen-pal.so.40 => /lib/x86_64-linux-gnu/libopen-pal.so.40 (0x00007f0c19e00000)\n" + LIBC,
    "intel": "\tlibmpi.so.12 => /opt/intel/oneapi/mpi/2021.9.0/lib/release/libmpi.so.12 (0x00007f3a)\n" + LIBC,
    "cray": "\tlibmpi_cray.so.12 => /opt/cray/pe/lib64/libmpi_cray.so.12 (0x00007f3a)\n" + LIBC,
    "cray-gnu": "\tlibmpi_gnu_123.so.12 => /opt/cray/pe/lib64/libmpi_gnu_123.so.12 (0x00007f3a)\n" + LIBC,
    "openmpi-fortran": "\tlibmpi_mpifh.so.40 => /usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40 (0x00007f3a)\n" + LIBC,
    "openmpi-f08": "\tlibmpi_usempif08.so.40 => /usr/lib/libmpi_usempif08.so.40 (0x00007f3a)\n" + LIBC,
    "openmpi-5": "\tlibmpi.so.40 => /opt/openmpi-5.0.3/lib/libmpi.so.40 (0x00007f3a)\n" + LIBC,
    "hpcx": "\tlibmpi.so.40 => /opt/hpcx/ompi/lib/libmpi.so.40 (0x00007f3a)\n" + LIBC,
    "none": "\tlinux-vdso.so.1 (0x00007ffd)\n" + LIBC,
    # MPICH 5.0.2 (Debian forky), a program built against mpi_abi_mpich/include and linked with -lmpi_abi.
    "abi-mpich5": "\tlibmpi_abi.so.1 => /usr/lib/x86_64-linux-gnu/libmpi_abi.so.1 (0x00007fedb2200000)\n" + LIBC,
}
EXPECTED = {"mpich": "mpich", "openmpi": "openmpi", "intel": "mpich", "cray": "mpich", "cray-gnu": "mpich",
            "openmpi-fortran": "openmpi", "openmpi-f08": "openmpi", "openmpi-5": "openmpi", "hpcx": "openmpi",
            "none": None, "abi-mpich5": "abi"}


@pytest.mark.parametrize("case", sorted(LDD))
def test_flavor_of_ldd_text(case):
    assert flavor_of_libraries(LDD[case]) == EXPECTED[case]


def test_flavor_of_a_list_of_names():
    assert flavor_of_libraries("libmpich.so") == "mpich"
    assert flavor_of_libraries("libmpi.so.40 libopen-rte.so.40") == "openmpi"
    assert flavor_of_libraries("libmpi.so.13") is None  # neither ABI: no guess


@pytest.fixture
def launcher_dir(tmp_path, monkeypatch):
    """A PATH with Debian's launcher layout: mpirun.openmpi -> orterun, mpirun.mpich -> mpiexec.hydra, and plain
    mpirun -> either."""
    for name in ("orterun", "mpiexec.hydra", "srun", "wrapper"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    os.symlink("orterun", tmp_path / "mpirun.openmpi")
    os.symlink("mpiexec.hydra", tmp_path / "mpirun.mpich")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("launcher, flavor", [("mpirun.openmpi", "openmpi"), ("mpirun.mpich", "mpich"),
                                              ("orterun", "openmpi"), ("mpiexec.hydra", "mpich"), ("srun", None),
                                              ("wrapper", None)])
def test_launcher_flavor(launcher_dir, launcher, flavor):
    assert launcher_flavor(launcher) == flavor


def test_launcher_flavor_follows_mpirun_to_its_target(launcher_dir):
    os.symlink("orterun", launcher_dir / "mpirun")
    assert launcher_flavor("mpirun") == "openmpi"
    os.remove(launcher_dir / "mpirun")
    os.symlink("mpiexec.hydra", launcher_dir / "mpirun")
    assert launcher_flavor("mpirun") == "mpich"


def test_program_flavor_of_a_missing_or_non_mpi_program(tmp_path):
    with pytest.raises(ToolError, match="program not found; pass --mpi"):
        program_flavor(str(tmp_path / "no-such-program"))
    with pytest.raises(ToolError, match="linked to neither MPICH, Open MPI nor the MPI standard ABI"):
        program_flavor("/bin/true")
