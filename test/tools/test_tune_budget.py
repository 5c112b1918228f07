"""arshim tune's budget (tools/arshim/tune.py Tuner.measure, docs/tuning.md "Budget and progress"): the coarse sweep
runs whole past the budget, the later phases stop when the mean launch no longer fits, and both say so. Over a fake
probe and a fake clock: no MPI, no launch."""
import argparse
import types

import pytest

from arshim import tune

DECISION = {"path": "multileader", "leaders": 1, "pipeline_k": 1}


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(tune, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    return clock


class ClockedTuner(tune.Tuner):
    """A Tuner whose every launch takes `launch_s` seconds of the fake clock and measures the candidate at 1 us
    against the library's 2 us at each size."""

    def __init__(self, tmp_path, clock, budget_s, launch_s):
        args = argparse.Namespace(out=str(tmp_path / "t.toml"), resume=False, mpi="mpich", cluster=None,
                                  budget=budget_s)
        super().__init__(args)
        self.clock, self.launch_s, self.launched = clock, launch_s, []

    def run_probe(self, name, settings, sizes, shape="all", probe_args=None):
        self.clock.now += self.launch_s
        self.launched.append(name)
        rows = [{"bytes": s, "reps": 5, "p25": 1.0, "median": 1.0, "p75": 1.0, "native_p25": 2.0, "native": 2.0,
                 "native_p75": 2.0, "served": 1.0, "right": 1} for s in sizes]
        return {"nodes": 2, "ppn": 2, "ranks": 4}, rows, {}


def jobs(n):
    return [(f"candidate-{i}", {}, DECISION, [8, 1 << 20], "all") for i in range(n)]


def test_the_coarse_sweep_runs_whole_past_the_budget(tmp_path, capsys, fake_clock):
    tuner = ClockedTuner(tmp_path, fake_clock, budget_s=25, launch_s=10)
    assert tuner.measure(jobs(6), "coarse", whole=True)
    assert tuner.launched == [f"candidate-{i}" for i in range(6)]
    assert len(tuner.state["measurements"]) == 12  # every candidate at both sizes
    said = capsys.readouterr().err
    # said once, when the mean launch (10 s) no longer fit in what was left (5 s after two launches)
    assert said.count("budget reached") == 1 and "20 s of 25 s) with 4 coarse runs left: they run all the same" in said


def test_later_phases_stop_at_the_budget(tmp_path, capsys, fake_clock):
    tuner = ClockedTuner(tmp_path, fake_clock, budget_s=25, launch_s=10)
    assert not tuner.measure(jobs(6), "refine")
    assert tuner.launched == ["candidate-0", "candidate-1"]
    assert "budget reached (20 s of 25 s): 4 refine runs left out" in capsys.readouterr().err
    # a resumed run does not measure again what was measured
    tuner.args.budget = 1000
    assert tuner.measure(jobs(6), "refine")
    assert tuner.launched == [f"candidate-{i}" for i in range(6)]


@pytest.mark.parametrize("whole", [False, True])
def test_within_the_budget_nothing_is_said(tmp_path, capsys, fake_clock, whole):
    tuner = ClockedTuner(tmp_path, fake_clock, budget_s=1000, launch_s=10)
    assert tuner.measure(jobs(3), "coarse", whole=whole)
    assert len(tuner.launched) == 3 and "budget" not in capsys.readouterr().err
