#!/usr/bin/env python3
"""`arshim simulate --network` and the native configurations' algorithms under SimGrid's SMPI, end to end
(docs/scale.md "The network", "Which algorithm each native row ran"). On 2 hosts x 1 at 1 MiB both libraries run
Rabenseifner (MPICH 4.0.2: reduce_scatter_allgather, forced as rab_rdb; Open MPI 4.1: rule 6, the ompi selector's
rab_rdb): two exchanges of 512 KiB. So the simulated time is known in closed form on each network, and the cost
model's, which reads the network's table at the size of each message, must say the same:
- ideal (factors 1, no cross traffic, 1 us links, 100 Gbit/s): 2 x (2 us + 512 KiB / 12.5 GB/s) = 87.886 us;
- edr (tools/simulate/networks/edr.toml: 0.5 us links, above 256 KiB 5.7 x the route's latency and 0.975 of the
  link, 0.153 us of smpi/os and of smpi/or per message): 2 x (5.7 us + 0.306 us + 512 KiB / 12.1875 GB/s);
- smpi (SimGrid 3.32's defaults): 2 x (11.6436 x 2 us + 512 KiB / (12.5 GB/s x 0.940694 / 1.05)).
And on 4 hosts x 2, native-mpich must run what MPICH 4.0.2 runs there (smp_rdb at 8 B, smp_rsag_rab at 64 KiB:
the algorithm column), not SMPI's mpich selector (its two-level recursive doubling); on 2 hosts x 3 its stand-ins
where SimGrid's smp_* algorithms deadlock (mvapich2_two_level, rab_rdb) run.

  network_check.py ARSHIM WORKDIR
"""
import csv
import os
import subprocess
import sys

HALF = 512 * 1024
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "tools"))
from arshim.simulate import DEFAULT_REDUCE_BYTES_PER_S  # noqa: E402


def reduced_us(nbytes):
    """The computation the simulation charges on 2 x 1, and the model with it (docs/scale.md "Computation",
    "model_us"), beside the closed forms of the network: Rabenseifner on 2 ranks reduces half the vector on each,
    at arshim simulate's default rate (no network here gives one)."""
    return nbytes / 2 / DEFAULT_REDUCE_BYTES_PER_S * 1e6


EXPECTED = {
    "ideal": 2 * (2e-6 + HALF / 12.5e9) * 1e6,
    "edr": 2 * (5.7e-6 + 3.06e-7 + HALF / (12.5e9 * 0.975)) * 1e6,
    "smpi": 2 * (11.6436 * 2e-6 + HALF / (12.5e9 * 0.940694 / 1.05)) * 1e6,
}


def simulate(arshim, work, name, *options):
    out = os.path.join(work, name + ".csv")
    if os.path.exists(out):
        os.unlink(out)
    done = subprocess.run([arshim, "simulate", *options, "--out", out], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"FAIL: arshim simulate {' '.join(options)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    with open(out) as f:
        return {(int(r["bytes"]), r["config"]): r for r in csv.DictReader(f)}


def main():
    arshim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    for network, expected in EXPECTED.items():
        rows = simulate(arshim, work, network, "--nodes", "2", "--ppn", "1", "--sizes", "1M", "--network", network,
                        "--configs", "native-mpich,native-ompi", "--iterations", "2")
        for config in ("native-mpich", "native-ompi"):
            row = rows[(1 << 20, config)]
            sim, model = float(row["sim_us"]), float(row["model_us"])
            print(f"{network} {config}: simulated {sim:.2f} us, model {model:.2f} us, closed form {expected:.2f} us "
                  f"+ {reduced_us(2 * HALF):.2f} us of reduction ({row['algorithm']})")
            if row["network"] != network or "rab_rdb" not in row["algorithm"]:
                failures.append(f"{network} {config}: network {row['network']!r}, algorithm {row['algorithm']!r}")
            if abs((sim - reduced_us(2 * HALF)) / expected - 1) > 0.02:
                failures.append(f"{network} {config}: simulated {sim:.2f} us, expected {expected:.2f} us")
            # The model charges the reduction as the simulation does (gamma = the ranks' reduce rate): without it
            # the model would be 32-48% under (41.6 us of reduction on 88-140 us of network).
            if abs(model / (expected + reduced_us(2 * HALF)) - 1) > 0.01:
                failures.append(f"{network} {config}: model {model:.2f} us, expected {expected:.2f} us + "
                                f"{reduced_us(2 * HALF):.2f} us of reduction")
    # SMPI applies a factor's section to a message whose size + 16 bytes is above its bound (network.py
    # SMPI_EXTRA_BYTES): with smpi's bound at 65 472, messages of 65 464 bytes pay 11.6436 x the latency and 0.940694
    # of the bandwidth, 65 456 bytes 3.48845 x and 0.697866 (Rabenseifner's halves of 130 928 and 130 912 bytes, whole
    # doubles, on 2 x 1), in the simulation and in the model alike.
    rows = simulate(arshim, work, "bound", "--nodes", "2", "--ppn", "1", "--sizes", "130912,130928", "--configs",
                    "native-mpich", "--iterations", "2")
    for nbytes, lat, bw in ((130912, 3.48845, 0.697866), (130928, 11.6436, 0.940694)):
        row = rows[(nbytes, "native-mpich")]
        expected = 2 * (lat * 2e-6 + nbytes // 2 / (12.5e9 * bw / 1.05)) * 1e6
        print(f"smpi at the 65472 bound, {nbytes // 2}-byte messages: simulated {row['sim_us']} us, model "
              f"{row['model_us']} us, closed form {expected:.2f} us")
        if abs((float(row["sim_us"]) - reduced_us(nbytes)) / expected - 1) > 0.02 or \
                abs((float(row["model_us"]) - reduced_us(nbytes)) / expected - 1) > 0.01:
            failures.append(f"at a factor's bound ({nbytes} bytes): simulated {row['sim_us']}, model "
                            f"{row['model_us']}, expected {expected:.2f}")
    rows = simulate(arshim, work, "mpich4x2", "--nodes", "4", "--ppn", "2", "--sizes", "8,64K", "--network", "ideal",
                    "--configs", "native-mpich", "--iterations", "2")
    small, large = rows[(8, "native-mpich")], rows[(65536, "native-mpich")]
    print(f"4 x 2 native-mpich: 8 B {small['sim_us']} us ({small['algorithm']}); 64 KiB {large['sim_us']} us "
          f"({large['algorithm']})")
    if not small["algorithm"].startswith("smp_rdb:") or not large["algorithm"].startswith("smp_rsag_rab:"):
        failures.append(f"4 x 2: algorithms {small['algorithm']!r}, {large['algorithm']!r}")
    # 3 ranks per host: SimGrid's smp_* algorithms deadlock there (a binomial tree past the host's last rank); the
    # stand-ins must run.
    rows = simulate(arshim, work, "mpich2x3", "--nodes", "2", "--ppn", "3", "--sizes", "8,64K", "--network", "ideal",
                    "--configs", "native-mpich", "--iterations", "2")
    small, large = rows[(8, "native-mpich")], rows[(65536, "native-mpich")]
    print(f"2 x 3 native-mpich: 8 B {small['sim_us']} us ({small['algorithm']}); 64 KiB {large['sim_us']} us "
          f"({large['algorithm']})")
    if not small["algorithm"].startswith("mvapich2_two_level:") or not large["algorithm"].startswith("rab_rdb:"):
        failures.append(f"2 x 3: algorithms {small['algorithm']!r}, {large['algorithm']!r}")
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
