#!/usr/bin/env bash
# The DPML paper's leader table in simulation (issue 54 item 5; docs/scale.md "The DPML paper's leader table"): seed
# 001 (Bayatpour et al., SC'17) swept l = 1, 2, 4, 8, 16 leaders per node on its cluster A, 16 nodes x 28 ranks
# (Xeon, InfiniBand EDR), 64 B to 512 KiB. This runs ARShim's multi-leader path forced to each l on the same shape
# under `arshim simulate --network edr` (computation charged at the tool's default rates: the EDR calibration gives
# none), with the library's allreduce beside it, and prints per size the time of each l, the best l and l=1 / l=16.
# Deterministic: one run per point. A benchmark, not a test.
#
#   bash tools/bench/bench_dpml_leaders.sh [OUTDIR]
#
# Environment: SELECTORS ("mpich ompi": the SMPI selector the leaders' library calls go through), SIZES (64 B to
# 512 KiB, powers of two), LEADERS ("1 2 4 8 16"), NODES (16), PPN (28), NETWORK (edr), NATIVE (1: also the
# library's own allreduce), NICE (19). Needs the SMPI build (-Dsmpi); ARSHIM_BUILD_DIR names it (default build).
# On 2 shared cores (other jobs running) each configuration took 17-71 s over the 14 sizes, 7 minutes for both
# selectors (docs/scale.md); the log says how long each run took.
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
SRC=$(realpath "$HERE/../..")
BUILD=${ARSHIM_BUILD_DIR:-$SRC/build}
OUT=$(realpath -m "${1:-bench-dpml-leaders-$(date +%Y%m%d-%H%M%S)}")
mkdir -p "$OUT"
NODES=${NODES:-16}
PPN=${PPN:-28}
NETWORK=${NETWORK:-edr}
SIZES=${SIZES:-64,128,256,512,1K,2K,4K,8K,16K,32K,64K,128K,256K,512K}
note() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/log.txt" >&2; }
csv=$OUT/leaders-${NODES}x${PPN}-$NETWORK.csv
for sel in ${SELECTORS:-mpich ompi}; do
  configs=()
  [ "${NATIVE:-1}" = 1 ] && configs+=("native-$sel")
  for l in ${LEADERS:-1 2 4 8 16}; do configs+=("arshim-multileader-l$l-$sel"); done
  for config in "${configs[@]}"; do
    resume=$([ -f "$csv" ] && echo --resume || true)
    note "$NODES x $PPN on $NETWORK: $config"
    start=$(date +%s)
    nice -n "${NICE:-19}" "$BUILD/tools/arshim" simulate --nodes "$NODES" --ppn "$PPN" --network "$NETWORK" \
      --sizes "$SIZES" --configs "$config" --out "$csv" $resume >>"$OUT/log.txt" 2>&1
    note "$config: $(( $(date +%s) - start )) s of wall time"
  done
done
python3 - "$csv" <<'EOF' | tee "$OUT/table.md"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["config"].rsplit("-", 1)[1], {}).setdefault(int(r["bytes"]), {})[r["config"]] = float(r["sim_us"])
for sel, sizes in sorted(by.items()):
    leaders = sorted({int(c.split("-l")[1].split("-")[0]) for s in sizes.values() for c in s if "-multileader-l" in c})
    print(f"\n{sel}: simulated us per call (the maximum over ranks)\n")
    print("| bytes | native | " + " | ".join(f"l={l}" for l in leaders) + " | best l | l=1 / l=16 |")
    print("|---" * (len(leaders) + 4) + "|")
    for size in sorted(sizes):
        t = sizes[size]
        ls = {l: t.get(f"arshim-multileader-l{l}-{sel}") for l in leaders}
        have = {l: v for l, v in ls.items() if v is not None}
        best = min(have, key=have.get) if have else None
        ratio = f"{ls[1] / ls[16]:.2f}" if ls.get(1) and ls.get(16) else ""
        native = t.get(f"native-{sel}")
        print(f"| {size} | {'' if native is None else f'{native:.1f}'} | "
              + " | ".join("" if ls[l] is None else f"{ls[l]:.1f}" for l in leaders) + f" | {best} | {ratio} |")
EOF
note "done: $OUT/table.md"
