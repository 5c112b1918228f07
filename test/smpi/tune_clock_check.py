#!/usr/bin/env python3
"""Online tuning times its candidates in simulated time under SMPI (shim/modes/online.cpp candidate_clock): on a
simulated 2 x 2 with 1 Mbit/s links, where one 64 KiB allreduce takes about 0.8 simulated seconds and the whole run
a fraction of a second of host time, ARSHIM_TUNE=online's exploration calls must add up to their simulated time
(the summary's "N exploration calls (S s)": S within 15% of N x the probe's simulated time per call). Timed with the
host's clock they came to about 4 x the host's wall time (each rank's interval covers the other ranks' turns): 17 s
where 50.5 s was simulated.

  tune_clock_check.py SMPIRUN PROBE WORKDIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "tools"))
from arshim import simulate  # noqa: E402


def main():
    smpirun, probe, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.makedirs(work, exist_ok=True)
    platform, hostfile = os.path.join(work, "slow.xml"), os.path.join(work, "hosts.txt")
    with open(platform, "w") as f:
        f.write(simulate.platform_xml(2, 2, link_gbit=0.001, latency_us=1, topology="flat"))
    with open(hostfile, "w") as f:
        f.write(simulate.hostfile_text(2, 2))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARSHIM_")}
    env.update(ARSHIM_TUNE="online", ARSHIM_STATS_SUMMARY="1", GLIBC_TUNABLES=simulate.tunables(16), TMPDIR=work)
    done = subprocess.run([smpirun, "-np", "4", "-platform", platform, "-hostfile", hostfile,
                           "--cfg=smpi/coll-selector:ompi", "--log=root.thres:critical", probe, "--iterations", "30",
                           "65536"], env=env, cwd=work, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    per_call = re.search(r"^probe 65536 ([0-9.]+) ", out, re.M)
    explored = re.search(r"tuning \(online\):.*; (\d+) exploration calls \(([0-9.]+) s\)", out)
    assert per_call and explored, out[-3000:]
    per_call_s = float(per_call.group(1)) * 1e-6
    calls, seconds = int(explored.group(1)), float(explored.group(2))
    expected = calls * per_call_s
    print(f"{calls} exploration calls: {seconds:.3f} s timed, {expected:.3f} s simulated "
          f"({per_call_s:.3f} s per call)")
    assert calls > 0, "no exploration: the check could not fail"
    assert per_call_s > 0.5, f"a call took {per_call_s} simulated s: the slow platform is not in use"
    assert abs(seconds - expected) <= 0.15 * expected, "the candidates were not timed in simulated time"
    print("PASS")


if __name__ == "__main__":
    main()
