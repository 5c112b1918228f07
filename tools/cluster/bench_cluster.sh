#!/usr/bin/env bash
# The emulated-cluster benchmarks (docs/cluster.md): `arshim bench allreduce` and examples/dp_training_replay on
# 2x1 and 2x2 virtual hosts at 10 and 1 Gbit/s, under both MPIs, native vs ARShim's paths vs the libraries' peers.
#
#   bash tools/cluster/bench_cluster.sh [OUTDIR]      (root; default OUTDIR: bench-cluster-<date>)
#
# Environment: TOPOLOGIES (default "2x1 2x2"), LINKS ("10gbit 1gbit"), MPIS ("mpich openmpi"), ROUNDS (3),
# MIN (64), MAX (64M), BUDGET (256M bytes per size and run), PARTS ("allreduce ksweep replay"), CONFIGS (the
# bench_allreduce configurations; default: native, ARShim default, pipelined 64K..4M, multi-leader l1/l2/l2-k4
# where hosts have several ranks, the peers),
# REPLAY_STEPS (3), REPLAY_COMPUTE_US (0), ARSHIM_BUILD_DIR (default <source>/build).
# Every table goes to OUTDIR/*.txt (and CSV); the rig (its own name, arshim-bench) is taken down at the end.
set -euo pipefail
HERE=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
SRC=$(realpath "$HERE/../..")
BUILD=${ARSHIM_BUILD_DIR:-$SRC/build}
OUT=${1:-bench-cluster-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
export ARSHIM_CLUSTER_NAME=arshim-bench
CLUSTER=(bash "$HERE/arshim-cluster" --name "$ARSHIM_CLUSTER_NAME")
BENCH=$SRC/tools/allreduce_bench/bench_allreduce.py
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

"${CLUSTER[@]}" check || exit $?
trap '"${CLUSTER[@]}" down >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

note() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/log.txt" >&2; }
{
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
  echo "started: $(date -Is); load: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

for topo in ${TOPOLOGIES:-2x1 2x2}; do
  hosts=${topo%x*} ppn=${topo#*x} np=$((${topo%x*} * ${topo#*x}))
  for link in ${LINKS:-10gbit 1gbit}; do
    gbit=${link%gbit}
    "${CLUSTER[@]}" up --hosts "$hosts" --link "$link" --watch $$
    "${CLUSTER[@]}" verify --mpi both --ppn "$ppn" --bytes 8M --reps 2 >"$OUT/verify-$topo-$link.txt" 2>&1 ||
      { note "verify failed on $topo $link (see verify-$topo-$link.txt)"; exit 1; }
    flavors=$(echo ${MPIS:-mpich openmpi} | tr ' ' ',')
    if [[ " ${PARTS:-allreduce ksweep replay} " == *" allreduce "* ]]; then
      note "allreduce $topo $link"
      # The driver scrubs ARSHIM_* from the environment: the rig's name goes on the wrap command line.
      # One rank per host: multi-leader declines to native, so its columns would only measure noise.
      configs=native,arshim-default,pipelined-64K,pipelined-256K,pipelined-1M,pipelined-4M
      ((ppn > 1)) && configs+=,multileader-l1,multileader-l2,multileader-l2-k4
      configs+=,peer-ompi-han,peer-mpich-smp,peer-mpich-rsag
      "$PY" "$BENCH" --build-dir "$BUILD" --mpi "$flavors" --np "$np" --nodes "$hosts" --link-gbit "$gbit" \
        --configs "${CONFIGS:-$configs}" \
        --min "${MIN:-64}" --max "${MAX:-64M}" --factor 4 --rounds "${ROUNDS:-3}" --budget "${BUDGET:-256M}" \
        --no-local-flags --wrap "bash $HERE/arshim-cluster --name $ARSHIM_CLUSTER_NAME wrap --ppn $ppn --" \
        --csv "$OUT/allreduce-$topo-$link.csv" >"$OUT/allreduce-$topo-$link.txt" 2>"$OUT/allreduce-$topo-$link.err" ||
        note "bench_allreduce failed on $topo $link"
      cat "$OUT/allreduce-$topo-$link.txt"
    fi
    if [[ " ${PARTS:-allreduce ksweep replay} " == *" ksweep "* ]] && ((ppn > 1)); then
      # multi-leader: leaders x inter-node pipeline pieces, at 1/4/16 MiB (bench_allreduce program, same timing)
      note "multileader l x k sweep $topo $link"
      {
        printf '%-8s %-22s %10s %10s %10s\n' mpi config 1M_us 4M_us 16M_us
        for flavor in ${MPIS:-mpich openmpi}; do
          for cfg in native l1-k1 l1-k4 l2-k1 l2-k2 l2-k4 l2-k8; do
            vars=()
            if [[ $cfg != native ]]; then
              l=${cfg#l}; l=${l%%-*}; k=${cfg#*-k}
              vars=(-x ARSHIM_PATH=multileader -x "ARSHIM_LEADERS=$l" -x "ARSHIM_PIPELINE_K=$k")
            fi
            out=$("${CLUSTER[@]}" run --mpi "$flavor" --ppn "$ppn" $([[ $cfg == native ]] && echo --native) \
                    "${vars[@]}" -- "$BUILD/tools/allreduce_bench/bench_allreduce-$flavor" --min 1M --max 16M \
                    --factor 4 --budget "${BUDGET:-256M}" --reps 40 2>/dev/null) || out=""
            printf '%-8s %-22s %10s %10s %10s\n' "$flavor" "$cfg" \
              $(for b in 1048576 4194304 16777216; do awk -F, -v b=$b '$1==b {print $3}' <<<"$out" | grep . || echo -; done)
          done
        done
      } >"$OUT/ksweep-$topo-$link.txt"
      cat "$OUT/ksweep-$topo-$link.txt"
    fi
    if [[ " ${PARTS:-allreduce ksweep replay} " == *" replay "* ]]; then
      note "dp_training_replay $topo $link"
      {
        for flavor in ${MPIS:-mpich openmpi}; do
          for cfg in native arshim-default pipelined-4M multileader-l${ppn}; do
            case $cfg in
              native) opts=(--native); vars=() ;;
              arshim-default) opts=(); vars=() ;;
              pipelined-4M) opts=(); vars=(-x ARSHIM_PATH=pipelined -x ARSHIM_SEGMENT_BYTES=4M -x ARSHIM_WINDOW=4) ;;
              multileader-*) opts=(); vars=(-x ARSHIM_PATH=multileader -x "ARSHIM_LEADERS=$ppn") ;;
            esac
            [[ $cfg == multileader-l1 ]] && continue   # one rank per host: multi-leader declines to native
            echo "## $flavor $topo $link $cfg"
            "${CLUSTER[@]}" run --mpi "$flavor" --ppn "$ppn" "${opts[@]}" "${vars[@]}" -- \
              "$BUILD/examples/dp_training_replay-$flavor" --steps "${REPLAY_STEPS:-3}" --warmup 1 \
              --compute-us "${REPLAY_COMPUTE_US:-0}" --csv 2>/dev/null || echo "(failed)"
          done
        done
      } >"$OUT/replay-$topo-$link.txt"
      cat "$OUT/replay-$topo-$link.txt"
    fi
  done
done
echo "finished: $(date -Is); load: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
note "done: $OUT"
