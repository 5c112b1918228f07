#!/usr/bin/env python3
"""Computation is charged alike on both sides (docs/scale.md "Computation"; shim/base/sim_charge.h): with
smpi/simulate-computation:no, ARSHIM_SMPI_REDUCE_BYTES_PER_S=R must add exactly (bytes reduced on a rank) / R to a
call, whether the library reduces (the native probe's charging op) or ARShim does, and ARSHIM_SMPI_COPY_BYTES_PER_S=C
(bytes copied) / C to ARShim's node copies. One simulated host of 2 cores, 2 ranks, 4 MiB of doubles, the probe of
`arshim simulate`:
  - native (SMPI's mpich selector: Rabenseifner on 2 ranks, each reduces half the vector): + (n/2) / R;
  - ARShim's pipelined path, one segment (its non-blocking schedule, Rabenseifner on 2 ranks, reducing through
    ARShim's op, which charges): + (n/2) / R, the native call's charge for the same bytes;
  - ARShim's multi-leader path with 2 leaders (each reduces its half over both ranks' inputs): + (n/2) / R; with the
    copy rate alone, + 2n / C (each rank copies its input in and the result out);
  - the charging op keeps the library's algorithm: with a negligible rate the native call's time under either
    selector is MPI_SUM's (a non-commutative op would take another algorithm and another time).

  charge_check.py SMPIRUN PROBE_NATIVE PROBE_ARSHIM WORKDIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "tools"))
from arshim import simulate  # noqa: E402

BYTES = 4 << 20
RATE = 1e9   # bytes reduced per second: n/2 takes 2.1 ms, ten times the call's communication here
COPY = 2e9   # bytes copied per second


def main():
    smpirun, native, arshim, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), \
        sys.argv[4]
    os.makedirs(work, exist_ok=True)
    platform, hostfile = os.path.join(work, "one.xml"), os.path.join(work, "hosts.txt")
    with open(platform, "w") as f:
        f.write(simulate.platform_xml(1, 2, link_gbit=100, latency_us=1, topology="flat"))
    with open(hostfile, "w") as f:
        f.write(simulate.hostfile_text(1, 2))

    def run(probe, selector="mpich", **settings):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARSHIM_")}
        env.update({k: str(v) for k, v in settings.items()}, GLIBC_TUNABLES=simulate.tunables(16), TMPDIR=work)
        done = subprocess.run([smpirun, "-np", "2", "-platform", platform, "-hostfile", hostfile,
                               "--cfg=smpi/simulate-computation:no", f"--cfg=smpi/coll-selector:{selector}",
                               "--log=root.thres:critical", probe, "--iterations", "3", str(BYTES)],
                              env=env, cwd=work, capture_output=True, text=True, timeout=120)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-3000:]
        found = re.search(rf"^probe {BYTES} ([0-9.]+) ", out, re.M)
        assert found, out[-3000:]
        return float(found.group(1)) * 1e-6

    half = BYTES / 2
    failures = []

    def check(what, got, expected, tolerance=0.02):
        ok = abs(got - expected) <= tolerance * expected
        print(f"{what}: charged {got * 1e6:.1f} us, expected {expected * 1e6:.1f} us {'ok' if ok else 'WRONG'}")
        if not ok:
            failures.append(what)

    rates = {"ARSHIM_SMPI_REDUCE_BYTES_PER_S": int(RATE)}
    base = run(native)
    charged_native = run(native, **rates) - base
    check("native, reductions", charged_native, half / RATE)
    for selector in ("mpich", "ompi"):
        plain = base if selector == "mpich" else run(native, selector)
        tiny = run(native, selector, ARSHIM_SMPI_REDUCE_BYTES_PER_S=10 ** 15)
        same = abs(tiny - plain) <= 1e-3 * plain
        print(f"native {selector}: {plain * 1e6:.1f} us with MPI_SUM, {tiny * 1e6:.1f} us with the charging op "
              f"at 1e15 B/s {'ok' if same else 'WRONG (another algorithm?)'}")
        if not same:
            failures.append(f"native {selector} algorithm")

    pipelined = {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENTS": 1}
    charged_pipelined = run(arshim, **pipelined, **rates) - run(arshim, **pipelined)
    check("ARShim pipelined, reductions", charged_pipelined, half / RATE)
    check("ARShim pipelined against native, the same bytes reduced", charged_pipelined, charged_native, 0.01)

    multileader = {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": 2}
    plain = run(arshim, **multileader)
    check("ARShim multileader, reductions", run(arshim, **multileader, **rates) - plain, half / RATE)
    check("ARShim multileader, copies", run(arshim, **multileader, ARSHIM_SMPI_COPY_BYTES_PER_S=int(COPY)) - plain,
          2 * BYTES / COPY)
    if failures:
        print("FAIL: " + "; ".join(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
