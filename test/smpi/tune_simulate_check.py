#!/usr/bin/env python3
"""`arshim tune --simulate` and `arshim simulate`'s candidates under SimGrid's SMPI, end to end (docs/scale.md "The
tuner's goal in simulation"): the tuner measures a simulated 2 x 2 (the rig preset, Open MPI's selector), then the
same simulation runs the library, every candidate forced and the tuned table. A simulation repeats itself exactly,
so on the layout it measured, the table must be within 10% of the best forced option at every size, and the check
needs a size where an ARShim option beats the library by more than that (else a table that changed nothing would
pass). The candidates must run their own paths (no "declined" notice).

  tune_simulate_check.py ARSHIM WORKDIR
"""
import csv
import os
import subprocess
import sys

SIZES = [8, 128, 2048, 16 << 10, 128 << 10, 1 << 20]


def run(*cmd):
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stderr


def main():
    arshim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    table, sweep = os.path.join(work, "tuned.toml"), os.path.join(work, "sweep.csv")
    for stale in (table, table + ".state.json", sweep):
        if os.path.exists(stale):
            os.unlink(stale)
    cluster = "--nodes 2 --ppn 2 --preset rig"
    err = run(arshim, "tune", "--simulate", cluster, "--mpi", "openmpi", "--max", "1M", "--out", table)
    print(err.strip().splitlines()[-1])
    with open(table) as f:
        header = f.read(4096)
    assert "arshim tune --simulate" in header, header
    err = run(arshim, "simulate", *cluster.split(), "--sizes", ",".join(map(str, SIZES)), "--configs",
              "native-ompi,candidates-ompi,arshim-tuned-ompi", "--policy", table, "--out", sweep)
    assert "declined" not in err, err
    times = {}
    with open(sweep) as f:
        for r in csv.DictReader(f):
            times.setdefault(int(r["bytes"]), {})[r["config"]] = float(r["sim_us"])
    assert sorted(times) == SIZES, times
    wins = 0
    for nbytes in SIZES:
        at = times[nbytes]
        forced = {c: t for c, t in at.items() if c != "arshim-tuned-ompi"}
        best = min(forced, key=forced.get)
        tuned, native = at["arshim-tuned-ompi"], at["native-ompi"]
        print(f"{nbytes:>8} B: native {native:.1f} us, best {best} {forced[best]:.1f} us, tuned {tuned:.1f} us")
        assert tuned <= 1.10 * forced[best], f"{nbytes} B: the tuned table {tuned} us, the best ({best}) {forced[best]} us"
        if forced[best] < native / 1.10:
            wins += 1
    assert wins > 0, "no size where an ARShim option beats the library by 10%: the check could not fail"
    print(f"PASS: the tuned table within 10% of the best forced option at {len(SIZES)} sizes ({wins} ARShim wins)")


if __name__ == "__main__":
    main()
