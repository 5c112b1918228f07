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
        "srun", f"--export=ALL,LD_PRELOAD={LIB}:/old.so", "./app"]
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


# ------------------------------------------------------------------------------------------------------------------
# A preload of the user's own on the launcher line (issue 53 item 6): ARShim's library stays, first (its MPI_Allreduce
# interposes before the other library's), the user's library after it, ARShim's not twice; or one line of refusal.
# What each launcher does with two settings of a variable was checked with Hydra 4.0.2 and Open MPI 4.1.4: Hydra keeps
# the last -genv anywhere on the line, a section's -env wins over -genv, -genv wins over -genvlist/-envlist; Open MPI
# applies -x to its own section (app context) only, the last -x of a name winning.

USER = "/opt/tools/libuser.so"


def preloads(command):
    """The LD_PRELOAD values a launcher line sets, in order, whatever the spelling."""
    out = []
    for i, word in enumerate(command):
        if word.lstrip("-").split("=", 1)[0] in ("genv", "env", "x", "set-env"):
            rest = (word.split("=", 1)[1:] + command[i + 1:i + 3])
            if rest[0] == "LD_PRELOAD":
                out.append(rest[1])
            elif rest[0].startswith("LD_PRELOAD="):
                out.append(rest[0][len("LD_PRELOAD="):])
    return out


@pytest.mark.parametrize("spelling, rewritten", [
    (["-genv", "LD_PRELOAD", USER], ["-genv", "LD_PRELOAD", f"{LIB}:{USER}"]),
    (["-genv", f"LD_PRELOAD={USER}"], ["-genv", f"LD_PRELOAD={LIB}:{USER}"]),
    (["--genv", "LD_PRELOAD", USER], ["--genv", "LD_PRELOAD", f"{LIB}:{USER}"]),
    (["-genv=LD_PRELOAD", USER], ["-genv=LD_PRELOAD", f"{LIB}:{USER}"]),
])
def test_hydra_genv_preload_keeps_arshim_first(spelling, rewritten):
    command = ["mpirun.mpich", "-n", "2", *spelling, "./app", "-x"]
    assert launchers.program_index(command) == 3 + len(spelling)
    assert launchers.preloaded_command(command, "mpich", LIB) == [
        "mpirun.mpich", "-genv", "ARSHIM_LOG", "info", "-genv", "ARSHIM_PATH", "pipelined", "-n", "2", *rewritten,
        "./app", "-x"]


def test_hydra_every_genv_preload_is_rewritten_the_last_wins_anyway(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/lib/libenv.so")  # overridden by the line's -genv, as without ARShim
    command = ["mpiexec.hydra", "-genv", "LD_PRELOAD", "/a.so", "-n", "1", "./a", ":", "-genv", "LD_PRELOAD",
               f"/b.so {LIB}", "-n", "1", "./b"]
    assert preloads(launchers.preloaded_command(command, "mpich", LIB)) == [f"{LIB}:/a.so", f"{LIB}:/b.so"]


def test_hydra_env_preload_in_an_mpmd_section():
    command = ["mpirun.mpich", "-n", "1", "./a", ":", "-n", "1", "-env", "LD_PRELOAD", USER, "./b", ":", "-n", "1",
               "-env", f"LD_PRELOAD={USER}", "./c"]
    full = launchers.preloaded_command(command, "mpich", LIB)
    # ARShim's -genv for the first section, each -env (which wins over -genv in its section) with ARShim first
    assert full[:4] == ["mpirun.mpich", "-genv", "LD_PRELOAD", LIB]
    assert full[-10:] == ["-env", "LD_PRELOAD", f"{LIB}:{USER}", "./b", ":", "-n", "1", "-env",
                          f"LD_PRELOAD={LIB}:{USER}", "./c"]
    assert preloads(full) == [LIB, f"{LIB}:{USER}", f"{LIB}:{USER}"]


@pytest.mark.parametrize("option", ["-genvlist", "-envlist", "--genvlist"])
def test_hydra_preload_forwarded_by_name_is_in_arshims_genv(monkeypatch, option):
    monkeypatch.setenv("LD_PRELOAD", USER)
    command = ["mpirun.mpich", "-n", "2", option, "PATH,LD_PRELOAD", "./app"]
    full = launchers.preloaded_command(command, "mpich", LIB)
    assert full[:4] == ["mpirun.mpich", "-genv", "LD_PRELOAD", f"{LIB}:{USER}"]  # wins over the list
    assert full[-3:] == [option, "PATH,LD_PRELOAD", "./app"]


def test_arshims_library_is_not_preloaded_twice(monkeypatch, tmp_path):
    library = tmp_path / "lib" / "libarshim-mpich.so"
    library.parent.mkdir()
    library.write_bytes(b"")
    (tmp_path / "link").symlink_to(library.parent)
    library = str(library)
    again = f"{tmp_path}/link/libarshim-mpich.so"
    monkeypatch.setenv("LD_PRELOAD", f"{library}:/lib/libenv.so")
    assert launchers.preload_value(library) == f"{library}:/lib/libenv.so"
    command = ["mpirun.mpich", "-genv", "LD_PRELOAD", f"{again} {USER}:{library}", "./app"]
    assert preloads(launchers.preloaded_command(command, "mpich", library)) == [f"{library}:{USER}"]
    assert launchers.merged_preload(library, "") == library


@pytest.mark.parametrize("spelling, rewritten", [
    (["-x", f"LD_PRELOAD={USER}"], ["-x", f"LD_PRELOAD={LIB}:{USER}"]),
    (["--x", f"LD_PRELOAD={USER}"], ["--x", f"LD_PRELOAD={LIB}:{USER}"]),
    (["-x=" f"LD_PRELOAD={USER}"], ["-x=" f"LD_PRELOAD={LIB}:{USER}"]),
    (["--set-env", f"LD_PRELOAD={USER}"], ["--set-env", f"LD_PRELOAD={LIB}:{USER}"]),  # Open MPI 5 (PRRTE)
    (["-x", "LD_PRELOAD="], ["-x", f"LD_PRELOAD={LIB}"]),
])
def test_openmpi_x_preload_keeps_arshim_first(spelling, rewritten):
    command = ["mpirun.openmpi", "-n", "2", *spelling, "./app"]
    assert launchers.program_index(command) == 3 + len(spelling)
    assert launchers.preloaded_command(command, "openmpi", LIB) == [
        "mpirun.openmpi", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-n", "2", *rewritten, "./app"]


@pytest.mark.parametrize("inherited, value", [("/lib/libenv.so", f"{LIB}:/lib/libenv.so"), (None, LIB)])
def test_openmpi_x_preload_by_name_gets_this_environments_value_after_arshim(monkeypatch, inherited, value):
    if inherited:
        monkeypatch.setenv("LD_PRELOAD", inherited)
    command = ["mpirun.openmpi", "-x", "LD_PRELOAD", "-n", "2", "./app"]
    assert launchers.preloaded_command(command, "openmpi", LIB) == [
        "mpirun.openmpi", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-x", f"LD_PRELOAD={value}", "-n", "2", "./app"]


def test_openmpi_pattern_forwarding_preload_is_followed_by_arshims(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", USER)  # Open MPI 5 forwards it with -x LD_*, after ARShim's -x
    command = ["mpirun", "-n", "2", "-x", "LD_*", "./app"]
    assert launchers.preloaded_command(command, "openmpi", LIB)[-6:] == [
        "2", "-x", "LD_*", "-x", f"LD_PRELOAD={LIB}:{USER}", "./app"]


def test_openmpi_every_mpmd_section_gets_arshim():
    command = ["mpirun.openmpi", "-n", "1", "./a", "x", ":", "-n", "1", "-x", f"LD_PRELOAD={USER}", "./b", ":",
               "-n", "1", "./c"]
    assert launchers.preloaded_command(command, "openmpi", LIB) == [
        "mpirun.openmpi", "-x", f"LD_PRELOAD={LIB}", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-n", "1", "./a", "x",
        ":", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-n", "1", "-x", f"LD_PRELOAD={LIB}:{USER}", "./b",
        ":", "-x", f"LD_PRELOAD={LIB}", "-x", "ARSHIM_LOG", "-x", "ARSHIM_PATH", "-n", "1", "./c"]


def test_openmpi_append_env_stays_after_arshims_x():
    command = ["mpirun", "--append-env", "LD_PRELOAD[:]", USER, "-n", "2", "./app"]
    full = launchers.preloaded_command(command, "openmpi", LIB)
    assert full[1:3] == ["-x", f"LD_PRELOAD={LIB}"] and full[-6:] == [
        "--append-env", "LD_PRELOAD[:]", USER, "-n", "2", "./app"]


@pytest.mark.parametrize("launcher, flavor, spelling", [
    ("mpirun.mpich", "mpich", ["-n", "2", "env", f"LD_PRELOAD={USER}", "A=1", "./app"]),
    ("mpirun.openmpi", "openmpi", ["-n", "2", "env", "-u", "HOME", f"LD_PRELOAD={USER}", "./app"]),
    ("srun", "mpich", ["-n", "2", "env", f"LD_PRELOAD={USER}", "./app"]),
])
def test_env_program_preload_keeps_arshim_first(launcher, flavor, spelling):
    full = launchers.preloaded_command([launcher, *spelling], flavor, LIB)
    assert f"LD_PRELOAD={LIB}:{USER}" in full and f"LD_PRELOAD={USER}" not in full


def test_srun_export_preload_keeps_arshim_first(monkeypatch):
    assert launchers.srun_command(["srun", "--export", f"PATH,LD_PRELOAD={USER}", "./app"], LIB) == [
        "srun", f"--export=PATH,LD_PRELOAD={LIB}:{USER},ARSHIM_LOG,ARSHIM_PATH", "./app"]
    monkeypatch.setenv("LD_PRELOAD", "/lib/libenv.so")  # by name: this environment's, which srun does not get
    assert launchers.srun_command(["srun", "--export=ALL,LD_PRELOAD", "./app"], LIB)[1] == \
        f"--export=ALL,LD_PRELOAD={LIB}:/lib/libenv.so"
    monkeypatch.setenv("SLURM_EXPORT_ENV", f"ALL,LD_PRELOAD={USER}")
    assert launchers.srun_command(["srun", "./app"], LIB)[1] == f"--export=ALL,LD_PRELOAD={LIB}:{USER}"


def test_srun_heterogeneous_step_components_keep_arshim():
    command = ["srun", "-n", "1", "./a", ":", "-n", "1", f"--export=ALL,LD_PRELOAD={USER}", "./b", ":", "-n", "1",
               "./c"]
    assert launchers.srun_command(command, LIB) == [
        "srun", f"--export=ALL,LD_PRELOAD={LIB}", "-n", "1", "./a", ":", "-n", "1",
        f"--export=ALL,LD_PRELOAD={LIB}:{USER}", "./b", ":", "-n", "1", "./c"]  # ./c inherits the one before


@pytest.mark.parametrize("launcher, flavor, spelling, message", [
    ("mpirun.openmpi", "openmpi", ["--prepend-env", "LD_PRELOAD[:]", USER],
     "mpirun.openmpi --prepend-env LD_PRELOAD[:] /opt/tools/libuser.so: this would take ARShim's library out of the "
     "first place in LD_PRELOAD or out of it; set the ranks' LD_PRELOAD with -x LD_PRELOAD=... instead"),
    ("mpirun.openmpi", "openmpi", ["--unset-env", "LD_PRELOAD"], "mpirun.openmpi --unset-env LD_PRELOAD: this would"),
    ("mpirun.openmpi", "openmpi", ["--mca", "mca_base_env_list", f"LD_PRELOAD={USER}"],
     "mpirun.openmpi --mca mca_base_env_list LD_PRELOAD=/opt/tools/libuser.so: arshim run cannot merge ARShim's "
     "library into LD_PRELOAD set this way; set it with -x LD_PRELOAD=... instead"),
    ("mpirun.openmpi", "openmpi", [f"-xLD_PRELOAD={USER}"],
     "mpirun.openmpi -xLD_PRELOAD=/opt/tools/libuser.so: arshim run cannot merge"),
    ("mpirun.openmpi", "openmpi", ["--app", "/nonexistent/appfile"],
     "mpirun.openmpi --app /nonexistent/appfile: Open MPI gives the programs of an app file none of the command "
     f"line's -x, so arshim run cannot preload ARShim in them; add -x LD_PRELOAD={LIB} to each line"),
    ("mpirun.mpich", "mpich", ["-n", "2", "env", "-u", "LD_PRELOAD"],
     "env -u LD_PRELOAD: arshim run cannot merge ARShim's library into LD_PRELOAD set this way; set it with env "
     "LD_PRELOAD=... or -genv LD_PRELOAD ... (or -env in one section) instead"),
    ("srun", "mpich", ["-n", "2", "./a", ":", "-n", "1", "env", "-S", f"LD_PRELOAD={USER} ./b"], "env -S"),
])
def test_what_cannot_be_merged_is_refused_in_one_line(launcher, flavor, spelling, message):
    with pytest.raises(ToolError) as refused:
        launchers.preloaded_command([launcher, *spelling, "./app"], flavor, LIB)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


@pytest.mark.parametrize("launcher, flavor, option, line", [
    ("mpirun.mpich", "mpich", "-configfile", f"-n 1 -env LD_PRELOAD {USER} ./app"),
    ("mpirun.openmpi", "openmpi", "--tune", f"-x LD_PRELOAD={USER}"),
])
def test_an_option_file_that_sets_preload_is_refused(tmp_path, launcher, flavor, option, line):
    path = tmp_path / "options"
    path.write_text(line + "\n")
    with pytest.raises(ToolError, match=f"^{launcher} {option} {path}: the file sets LD_PRELOAD, which arshim run "
                                        "cannot merge ARShim's library into; set it on the command line instead"):
        launchers.preloaded_command([launcher, option, str(path)], flavor, LIB)
    path.write_text("-n 1 ./app\n")  # without LD_PRELOAD: ARShim's -genv (Hydra) applies to the file's programs
    if flavor == "mpich":
        assert launchers.preloaded_command([launcher, option, str(path)], flavor, LIB)[:4] == [
            launcher, "-genv", "LD_PRELOAD", LIB]


def test_arshim_run_prints_the_merged_line_or_one_refusal_line(tmp_path):
    """The command as users run it, with stand-ins for the launchers that print what they were given."""
    import subprocess
    import sys
    from conftest import TOOLS
    library = tmp_path / "libarshim-mpich.so"
    library.write_bytes(b"")
    for name in ("mpirun.mpich", "mpirun.openmpi"):
        (tmp_path / name).write_text('#!/bin/sh\nfor a in "$@"; do echo "arg $a"; done\n')
        (tmp_path / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    arshim = [sys.executable, os.path.join(TOOLS, "arshim.py"), "run", "--lib", str(library)]
    proc = subprocess.run(arshim + ["--mpi", "mpich", "--", "mpirun.mpich", "-n", "2", "-genv", "LD_PRELOAD", USER,
                                    "./app"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [l for l in proc.stdout.splitlines() if "LD_PRELOAD" in l] == ["arg LD_PRELOAD"]
    assert f"arg {library}:{USER}" in proc.stdout.splitlines()
    proc = subprocess.run(arshim + ["--mpi", "openmpi", "--", "mpirun.openmpi", "--prepend-env", "LD_PRELOAD[:]",
                                    USER, "./app"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("arshim: mpirun.openmpi --prepend-env LD_PRELOAD[:] ") and \
        len(proc.stderr.splitlines()) == 1
