#!/usr/bin/env bash
# Online-tuning benchmarks (docs/tuning.md), native and ARShim in the same runs, interleaved rounds, medians:
#   recovery   a deliberately bad policy (tools/allreduce_bench/bad_policy.toml), alone and with ARSHIM_TUNE=online,
#              against native and every ARShim path: the corrected table's time over the best of them, per size;
#   guard      the default (ARSHIM_TUNE=guard) against native, a native control and ARSHIM_TUNE=off, per size;
#   stability  examples/dp_training_replay (ResNet110, --steps of gradient allreduces) with guard and with off,
#              alternating runs: guard's cost in allreduce time, and whether every run decided alike.
#
#   bash tools/bench/bench_tuning.sh [OUTDIR]
#
# Environment: MPIS ("mpich openmpi"), NPS ("2 4"), ROUNDS (5), MAX (4M), BUDGET (bytes per size and run, 512M), STEPS (1000), RUNS (10), PARTS
# ("recovery guard stability"), WRAP (a launcher prefix for bench_allreduce --wrap, e.g. the emulated cluster's
# "bash tools/cluster/arshim-cluster --name tunebench wrap --ppn 2 --"; then NODES and LINK_GBIT for the bound column),
# ARSHIM_BUILD_DIR (default <source>/build). Tables go to OUTDIR/*.txt.
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
SRC=$(realpath "$HERE/../..")
BUILD=${ARSHIM_BUILD_DIR:-$SRC/build}
OUT=${1:-bench-tuning-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
BENCH=$SRC/tools/allreduce_bench/bench_allreduce.py
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
note() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/log.txt" >&2; }
wrap=()
[[ -n ${WRAP:-} ]] && wrap=(--wrap "$WRAP" --no-local-flags --nodes "${NODES:-2}" --link-gbit "${LINK_GBIT:-0}")
# More ranks than cores: ranks yield instead of spinning (Open MPI's mpi_yield_when_idle, a yield helper under MPICH).
oversubscribe() { (( $1 > $(nproc) )) && [[ -z ${WRAP:-} ]] && echo "--oversubscribe --yield-helper"; true; }

for np in ${NPS:-2 4}; do
  for flavor in ${MPIS:-mpich openmpi}; do
    if [[ " ${PARTS:-recovery guard stability} " == *" recovery "* ]]; then
      note "recovery $flavor np $np"
      "$PY" "$BENCH" --build-dir "$BUILD" --mpi "$flavor" --np "$np" --min 1K --max "${MAX:-4M}" --factor 4 \
        --rounds "${ROUNDS:-5}" --budget "${BUDGET:-512M}" "${wrap[@]}" $(oversubscribe "$np") \
        --configs native,multileader-l1,multileader-l2,pipelined-256K,pipelined-1M,bad-policy,bad-policy-online \
        --csv "$OUT/recovery-$flavor-np$np.csv" >"$OUT/recovery-$flavor-np$np.txt" 2>>"$OUT/log.txt"
      cat "$OUT/recovery-$flavor-np$np.txt"
    fi
    if [[ " ${PARTS:-recovery guard stability} " == *" guard "* ]]; then
      note "guard $flavor np $np"
      "$PY" "$BENCH" --build-dir "$BUILD" --mpi "$flavor" --np "$np" --min 8 --max "${MAX:-4M}" --factor 4 \
        --rounds "${ROUNDS:-5}" --budget "${BUDGET:-512M}" "${wrap[@]}" $(oversubscribe "$np") \
        --configs native,native-control,arshim-default,arshim-tune-off \
        --csv "$OUT/guard-$flavor-np$np.csv" >"$OUT/guard-$flavor-np$np.txt" 2>>"$OUT/log.txt"
      cat "$OUT/guard-$flavor-np$np.txt"
    fi
  done
done

if [[ " ${PARTS:-recovery guard stability} " == *" stability "* ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ARSHIM_TEST_YIELD_LIB=$BUILD/test/libarshim-test-yield.so
  for flavor in ${MPIS:-mpich openmpi}; do
    note "stability $flavor: dp_training_replay resnet110, ${STEPS:-1000} steps, ${RUNS:-10} runs each"
    {
      printf '%-8s %-6s %4s %12s %10s\n' mpi tune run comm_ms decisions
      for run in $(seq 1 "${RUNS:-10}"); do
        for mode in guard off; do
          json=$OUT/stability-$flavor-$mode-$run.json
          line=$(bash "$SRC/test/mpi/mpirun.sh" "$flavor" 2 "$BUILD/shim/libarshim-$flavor.so" ARSHIM_TUNE=$mode \
                 ARSHIM_STATS="$json" ARSHIM_STATS_SUMMARY=0 -- "$BUILD/examples/dp_training_replay-$flavor" \
                 --model resnet110 --steps "${STEPS:-1000}" --csv 2>/dev/null | grep -i '^resnet110,')
          comm=$(cut -d, -f9 <<<"$line")
          decisions=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))["tuning"]["decided"]
print("|".join(sorted("%s %s %s:%s" % (x["bytes_min"], x["datatype"], x["op"], x["chosen"]) for x in d)) or "-")' \
                      "$json" | md5sum | cut -c1-8)
          printf '%-8s %-6s %4d %12s %10s\n' "$flavor" "$mode" "$run" "$comm" "$decisions"
        done
      done
    } | tee "$OUT/stability-$flavor.txt"
  done
fi
note "done: $OUT"
