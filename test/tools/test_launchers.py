"""arshim.launchers: the command lines `arshim run` and `arshim tune` launch, for Open MPI's mpirun, Hydra's
(MPICH) and Slurm's srun."""
import os

import pytest

from arshim import ToolError, launchers

LIB = "/opt/arshim/lib/libarshim-mpich.so"


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    """A clean environment with two settings, the launcher's own variable and an earlier preload."""
    for name in list(os.environ):
        if name.startswith(("ARSHIM_", "SLURM_")) or name == "LD_PRELOAD":
            monkeypatch.delenv(name)
    monkeypatch.setenv("ARSHIM_LOG", "info")
    monkeypatch.setenv("ARSHIM_PATH", "pipelined")
    monkeypatch.setenv("ARSHIM_LIB_DIR", "/somewhere")  # the launcher's, never the ranks'


def test_openmpi_preload_arguments():
    assert launchers.preload_arguments("openmpi", LIB) == [
        "-x", f"LD_PRELOAD={LIB}", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH"]


def test_mpich_preload_arguments():
    assert launchers.preload_arguments("mpich", LIB) == [
        "-genv", "LD_PRELOAD", LIB, "-genv", "ARSHIM_LOG", "info", "-genv", "ARSHIM_PATH", "pipelined"]


def test_an_earlier_preload_is_kept_after_arshim(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/lib/libother.so")
    assert launchers.preload_arguments("mpich", LIB)[:3] == ["-genv", "LD_PRELOAD", f"{LIB}:/lib/libother.so"]


def test_mpirun_command_lines():
    command = ["mpirun.openmpi", "-n", "4", "--mca", "btl", "self,vader", "./app", "-n", "1"]
    assert launchers.program_index(command) == 6
    assert launchers.preloaded_command(command, "openmpi", LIB) == [
        "mpirun.openmpi", "-x", f"LD_PRELOAD={LIB}", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-n", "4", "--mca",
        "btl", "self,vader", "./app", "-n", "1"]
    command = ["mpirun.mpich", "-genv", "A", "B", "-ppn", "2", "python3", "train.py"]
    assert launchers.program_index(command) == 6
    assert launchers.preloaded_command(command, "mpich", LIB)[:4] == ["mpirun.mpich", "-genv", "LD_PRELOAD", LIB]
    assert launchers.program_index(["mpirun", "-n", "2", "--", "./app"]) == 4
    assert launchers.program_index(["mpirun", "-n", "2"]) is None


def test_env_args():
    env = {"LD_PRELOAD": "/x.so", "ARSHIM_PATH": "native"}
    assert launchers.env_args("openmpi", env) == ["-x", "LD_PRELOAD=/x.so", "-x", "ARSHIM_PATH=native"]
    assert launchers.env_args("mpich", env) == ["-genv", "LD_PRELOAD", "/x.so", "-genv", "ARSHIM_PATH", "native"]


def test_srun_without_export_gets_all():
    assert launchers.preloaded_command(["srun", "-n", "64", "./app"], "mpich", LIB) == [
        "srun", f"--export=ALL,LD_PRELOAD={LIB}", "-n", "64", "./app"]


def test_srun_export_list_is_extended_in_place_with_settings_by_name():
    command = ["srun", "--ntasks", "2", "-l", "--export", "PATH", "./app", "--export", "x"]
    assert launchers.srun_command(command, LIB) == [
        "srun", "--ntasks", "2", "-l", f"--export=PATH,LD_PRELOAD={LIB},ARSHIM_LOG,ARSHIM_PATH", "./app",
        "--export", "x"]


def test_srun_export_equals_and_slurm_export_env(monkeypatch):
    assert launchers.srun_command(["srun", "--export=ALL,LD_PRELOAD=/old.so", "./app"], LIB) == [
        "srun", f"--export=ALL,LD_PRELOAD={LIB}", "./app"]
    monkeypatch.setenv("SLURM_EXPORT_ENV", "ALL,FOO=1")
    assert launchers.srun_command(["srun", "-n", "2", "./app"], LIB)[1] == f"--export=ALL,FOO=1,LD_PRELOAD={LIB}"


@pytest.mark.parametrize("export", ["NONE", "nil"])
def test_srun_export_none_is_refused(monkeypatch, export):
    monkeypatch.setenv("SLURM_EXPORT_ENV", export)
    with pytest.raises(ToolError, match=f"srun --export={export}: Slurm passes no variable"):
        launchers.srun_command(["srun", "./app"], LIB)


def test_srun_cannot_pass_a_comma():
    with pytest.raises(ToolError, match="srun --export separates variables with commas"):
        launchers.srun_command(["srun", "./app"], "/opt/a,b/libarshim-mpich.so")


def test_launch_environment(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/lib/libother.so")
    srun = launchers.launch_environment(["srun", "./app"])
    assert "LD_PRELOAD" not in srun and "ARSHIM_LIB_DIR" not in srun and srun["ARSHIM_LOG"] == "info"
    assert launchers.launch_environment(["mpirun", "./app"])["LD_PRELOAD"] == "/lib/libother.so"


def test_benchmark_launches():
    assert launchers.mpirun("openmpi", 4, "--bind-to", "core") == [
        "mpirun.openmpi", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "-n", "4", "--bind-to", "core"]
    assert launchers.mpirun("mpich", 2) == ["mpirun.mpich", "-n", "2"]
    env = launchers.benchmark_environment()
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and not any(k.startswith("ARSHIM_") for k in env)
