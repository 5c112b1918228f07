"""Ranks with different settings where MPI_Init is not intercepted (issue 56 item 3): check_local_settings starts MPI
with PMPI_Init and turns ARSHIM_CHECK_ARGS on for rank 0 only. ARShim must take every decision on a communicator from
its agreed settings: the job finishes, every result right (it died with MPI_ERR_TRUNCATE / "Message truncated", or
hung, when the engine read each rank's own setting). np 2 and 3; the default policy and a forced path.

  python3 -m pytest -p arshim_plugin test/hardening/test_local_settings.py --build BUILD --flavor mpich|openmpi"""
import pytest

PROGRAM = "test/hardening/check_local_settings"


@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("path", ["default", "pipelined", "latency"])
def test_one_ranks_argument_check_does_not_split_the_job(harness, np_, path):
    env = {} if path == "default" else {"ARSHIM_PATH": path}
    run = harness.run(np_, harness.program(PROGRAM), env=env, stats=True, trace=False, timeout=90)
    out = run.program_json("local_settings")
    assert run.returncode == 0 and out is not None and out["ok"] and out["calls"] == 400, run.describe()
