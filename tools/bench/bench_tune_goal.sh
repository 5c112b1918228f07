#!/usr/bin/env bash
# The goal benchmark of `arshim tune` (docs/tuning.md): tune on the emulated cluster with 2 hosts x 2 ranks, then
# measure every path, native, the built-in table and the tuned table at 3 and 4 hosts x 1 and 2 ranks, 4 B (one
# float) to 64 MiB in steps of 8, interleaved rounds, medians; tables in OUTDIR and the score
# (tools/bench/tune_goal_score.py) in OUTDIR/score.md.
#
#   bash tools/bench/bench_tune_goal.sh [OUTDIR]
#
# Environment: MPIS ("mpich openmpi"), LINKS ("1gbit"), LAYOUTS ("3x1 3x2 4x1 4x2"), MIN (4), MAX (64M), ROUNDS
# (3), BUDGET (tune budget, 5m), RIG (rig name, tunegoal). Root only (network namespaces).
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
SRC=$(realpath "$HERE/../..")
BUILD=${ARSHIM_BUILD_DIR:-$SRC/build}
OUT=$(realpath -m "${1:-bench-tune-goal-$(date +%Y%m%d-%H%M%S)}")
mkdir -p "$OUT"
RIG=${RIG:-tunegoal}
CLUSTER="bash $SRC/tools/cluster/arshim-cluster --name $RIG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
note() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/log.txt" >&2; }
LINKS=${LINKS:-1gbit}
$CLUSTER up --hosts 4 --link "${LINKS%% *}" >>"$OUT/log.txt" 2>&1
trap '$CLUSTER down >/dev/null 2>&1 || true' EXIT
for link in ${LINKS:-1gbit}; do
  $CLUSTER shape --link "$link" >>"$OUT/log.txt" 2>&1
  for flavor in ${MPIS:-mpich openmpi}; do
    table=$OUT/tuned-$flavor-$link.toml
    note "tune $flavor $link on 2 hosts x 2"
    start=$(date +%s)
    "$BUILD/tools/arshim" tune --out "$table" --budget "${BUDGET:-5m}" --max "${MAX:-64M}" --mpi "$flavor" \
      --wrap "$CLUSTER wrap --ppn 2 --" -- "mpirun.$flavor" -n 4 2>>"$OUT/log.txt"
    note "tuned in $(( $(date +%s) - start )) s: $table"
    for layout in ${LAYOUTS:-3x1 3x2 4x1 4x2}; do
      hosts=${layout%x*} ppn=${layout#*x} np=$(( ${layout%x*} * ${layout#*x} ))
      # one rank per node: multileader-l1 is ARShim's ring over the ranks where the step takes it (3, 5, 6 or 7
      # nodes, from 64 KiB), the library's allreduce elsewhere (declined: one_rank_per_node)
      configs=native,multileader-l1,pipelined-64K,pipelined-256K,pipelined-1M,arshim-tune-off,arshim-tuned
      (( ppn > 1 )) && configs=native,multileader-l1,multileader-l2,multileader-l2-k4,pipelined-64K,pipelined-256K,pipelined-1M,arshim-tune-off,arshim-tuned
      note "measure $flavor $link $layout"
      ARSHIM_BENCH_TUNED_POLICY=$table /usr/bin/python3 "$SRC/tools/allreduce_bench/bench_allreduce.py" \
        --build-dir "$BUILD" --mpi "$flavor" --np "$np" --min "${MIN:-4}" --max "${MAX:-64M}" --factor 8 \
        --rounds "${ROUNDS:-3}" --budget 64M --wrap "$CLUSTER wrap --ppn $ppn --" --no-local-flags \
        --nodes "$hosts" --link-gbit "${link%gbit}" --configs "$configs" \
        --csv "$OUT/$flavor-$link-$layout.csv" >"$OUT/$flavor-$link-$layout.txt" 2>>"$OUT/log.txt"
      cat "$OUT/$flavor-$link-$layout.txt"
    done
  done
done
/usr/bin/python3 "$SRC/tools/bench/tune_goal_score.py" "$OUT" --arshim "$BUILD/tools/arshim" | tee "$OUT/score.md"
note "done: $OUT"
