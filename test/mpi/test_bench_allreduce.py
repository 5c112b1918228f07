"""`arshim bench allreduce` runs and reports what it measured (tools/allreduce_bench/): every configuration and size
has a row with a positive time in every timing mode (each call alone from a barrier, loops of back-to-back calls
with --batch, and --paired, where every round also has its ratio to the library's own call in the same launch), the speed-up column is native's time over the configuration's, a bad --batch is refused with exit
status 2 before anything runs, and a failing run makes the exit status nonzero (its figures are missing). The
figure files are written whole and never through a symlink planted where they go; a --csv in a directory that does
not exist is refused before anything runs. Timing
figures themselves are for benchmark runs, not tests.

  python3 -m pytest -p arshim_plugin test/mpi/test_bench_allreduce.py --build BUILD --flavor mpich|openmpi"""
import csv
import os
import statistics
import subprocess

import pytest


def bench(harness, tmp_path, *extra, out=None):
    out = out or tmp_path / "bench.csv"
    tool = os.path.join(harness.build, "tools", "arshim")
    cmd = [tool, "bench", "allreduce", "--mpi", harness.flavor, "--np", "2", "--min", "8", "--max", "512",
           "--factor", "8", "--rounds", "2", "--reps", "5", "--configs", "native,arshim-default",
           "--csv", str(out), "--timeout", "120", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    return done, rows


@pytest.mark.parametrize("extra", [[], ["--batch", "20"], ["--paired"]],
                         ids=["each-call-from-a-barrier", "loops-of-20", "paired-with-the-library"])
def test_every_configuration_and_size_has_a_figure(harness, tmp_path, extra):
    done, rows = bench(harness, tmp_path, *extra)
    assert done.returncode == 0, done.stderr
    got = {(r["config"], int(r["bytes"])): r for r in rows}
    assert set(got) == {(c, b) for c in ("native", "arshim-default") for b in (8, 64, 512)}, rows
    for (config, size), row in got.items():
        assert float(row["median_us"]) > 0 and row["rounds"] == "2", row
        native = float(got[("native", size)]["median_us"])
        # The CSV rounds the ratio to 4 decimals: a ratio of 0.0009 (a loaded machine, 5 calls a round) is exact to
        # 5e-5 at best, not to 1%.
        assert float(row["speedup_vs_native"]) == pytest.approx(native / float(row["median_us"]), rel=0.01,
                                                                abs=5e-5), row
    if extra == ["--batch", "20"]:
        assert "time per call in loops of 20 calls" in done.stdout, done.stdout
    for row in rows:  # --paired: each round's ratio to the library's own call in the same launch, else none
        rounds = row["paired_round"].split(";") if row["paired_round"] else []
        assert len(rounds) == (2 if extra == ["--paired"] else 0), row
        assert all(float(r) > 0 for r in rounds), row
        if rounds:
            assert float(row["paired_speedup"]) == pytest.approx(statistics.median(map(float, rounds)), abs=2e-4), row
    assert ("paired speed-up over the library's own call" in done.stdout) == (extra == ["--paired"]), done.stdout


def test_a_bad_batch_is_refused(harness, tmp_path):
    done, rows = bench(harness, tmp_path, "--batch", "0")
    assert done.returncode == 2 and rows == [], done.stderr
    # One line naming the option, the value and the range, before any run (issue 56 item 6).
    assert done.stderr.count("\n") == 1 and "--batch: 0: not a whole number from 1 to 1000000" in done.stderr


def test_an_unparsable_budget_is_refused_before_any_run(harness, tmp_path):
    # Before issue 56 item 6 the bench program refused it in every run (exit 1, "runs failed"); now arshim checks it
    # before any run starts: one line, exit 2.
    done, rows = bench(harness, tmp_path, "--type", "double", "--budget", "lots")
    assert done.returncode == 2 and rows == [], (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "--budget: lots: not a size" in done.stderr, done.stderr


def test_a_planted_symlink_is_replaced_not_followed(harness, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("the user's data\n")
    planted = tmp_path / "bench.csv"
    planted.symlink_to(victim)
    figures = tmp_path / "bench.json"
    figures.symlink_to(victim)
    done, rows = bench(harness, tmp_path, "--json", str(figures), "--rounds", "1")
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "the user's data\n"
    assert not planted.is_symlink() and not figures.is_symlink()
    assert {r["config"] for r in rows} == {"native", "arshim-default"}, rows
    assert '"config"' in figures.read_text()


def test_a_csv_in_a_missing_directory_is_refused_before_the_runs(harness, tmp_path):
    done, rows = bench(harness, tmp_path, out=tmp_path / "no-such-dir" / "bench.csv")
    assert done.returncode == 2 and rows == [], done.stderr
    assert "--csv" in done.stderr and "does not exist" in done.stderr
    assert "round 1" not in done.stderr  # nothing ran
