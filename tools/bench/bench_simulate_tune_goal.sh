#!/usr/bin/env bash
# The tuner's goal in simulation (docs/scale.md "The tuner's goal in simulation"): `arshim tune --simulate` on a
# simulated 2 x 2 for each SMPI selector, then on every layout the library's allreduce, ARShim's built-in table, the
# tuned table and every forced option (the forced paths and arshim tune's candidates of the layout), and the score
# (tools/bench/simulate_tune_goal.py) in OUTDIR/score.md. Deterministic: one run per point.
#
#   bash tools/bench/bench_simulate_tune_goal.sh [OUTDIR]
#
# Environment: LAYOUTS ("16x1 16x4 64x1 64x4 16x16"), SIZES (8,512,8K,64K,1M,8M), LINK (Gbit/s, 100), TOPOLOGY
# (fat-tree), NETWORK (smpi; ideal, edr or a calibration file: arshim simulate --network), TUNE_ON ("--nodes 2 --ppn
# 2": the tuner's cluster, on the same links and network). Needs the SMPI build (-Dsmpi).
# 64 x 4 takes about 13 minutes on 2 cores, the five layouts about 30; memory stays below 4 GB up to 256 ranks.
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
SRC=$(realpath "$HERE/../..")
BUILD=${ARSHIM_BUILD_DIR:-$SRC/build}
OUT=$(realpath -m "${1:-bench-simulate-tune-goal-$(date +%Y%m%d-%H%M%S)}")
mkdir -p "$OUT"
LINK=${LINK:-100}
TOPOLOGY=${TOPOLOGY:-fat-tree}
NETWORK=${NETWORK:-smpi}
platform=(--topology "$TOPOLOGY" --link-gbit "$LINK" --network "$NETWORK")
note() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/log.txt" >&2; }
for flavor in mpich openmpi; do
  note "tune $flavor on a simulated ${TUNE_ON:---nodes 2 --ppn 2}"
  "$BUILD/tools/arshim" tune --simulate "${TUNE_ON:---nodes 2 --ppn 2} ${platform[*]}" --mpi "$flavor" \
    --out "$OUT/tuned-$flavor.toml" >>"$OUT/log.txt" 2>&1
done
for layout in ${LAYOUTS:-16x1 16x4 64x1 64x4 16x16}; do
  nodes=${layout%x*} ppn=${layout#*x}
  for sel in mpich ompi; do
    flavor=$([ "$sel" = ompi ] && echo openmpi || echo mpich)
    csv=$OUT/sweep-$layout.csv
    resume=$([ -f "$csv" ] && echo --resume || true)
    note "$layout, $sel"
    "$BUILD/tools/arshim" simulate --nodes "$nodes" --ppn "$ppn" "${platform[@]}" --sizes "${SIZES:-8,512,8K,64K,1M,8M}" \
      --policy "$OUT/tuned-$flavor.toml" --out "$csv" $resume \
      --configs "native-$sel,arshim-default-$sel,arshim-tuned-$sel,arshim-pipelined-$sel,arshim-multileader-$sel,arshim-latency-$sel,candidates-$sel" \
      >>"$OUT/log.txt" 2>&1
  done
done
python3 "$SRC/tools/bench/simulate_tune_goal.py" "$OUT"/sweep-*.csv --misses | tee "$OUT/score.md"
note "done: $OUT/score.md"
