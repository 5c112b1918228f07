#!/usr/bin/env bash
# ARSHIM_INTERNODE (docs/cluster.md "Three nodes"): the multi-leader path's inter-node step on ARShim's ring. Every
# run is check_allreduce (results checked against values the program computes itself, every type and op, in place,
# sub-communicators) on virtual nodes of 2 ranks, multi-leader forced, with ARSHIM_PHASE_TIMES=1 so that each
# leader's line says how many of its inter-node steps took the ring:
#   - auto on 3 nodes with a large case (partitions of >= 64 KiB): some steps on the ring;
#   - auto on 2 nodes: none (a power of two: the library's allreduce);
#   - ring forced on 2 nodes, and on uneven nodes (2 + 2 + 1 ranks: one leader each): steps on the ring, right
#     results; library forced on 3 nodes: none;
#   - one rank per node (PPN=1: no node window): auto on 3 nodes, the large calls round the ring over all ranks;
#     forced on 2 and 5 nodes, every call (counts 0, 1, below the rank count, primes) round it.
#
#   internode_ring_test.sh FLAVOR SHIM_LIB CHECK_PROGRAM
set -uo pipefail
flavor=$1 shim=$2 prog=$3
here=$(cd "$(dirname "$0")" && pwd)
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

# run NP EXPECT(ring|none) SETTINGS... -- PROGRAM ARGS...
check() {
  local np=$1 expect=$2 label=$3
  shift 3
  local out rings
  out=$(ARSHIM_TEST_TIMEOUT=300 "$here/mpirun.sh" "$flavor" "$np" "$shim" CHECK_FLAVOR="$flavor" CHECK_EXPECT_SHIM=1 \
          CHECK_NO_LIBRARY_BUGS=1 CHECK_EXPECT_PATH=multileader ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN="${PPN:-2}" \
          ARSHIM_PHASE_TIMES=1 "$@" 2>&1)
  local rc=$?
  if [[ $rc -ne 0 ]] || ! grep -qE "check_allreduce: $np ranks, [0-9]+ checks, 0 failures" <<<"$out"; then
    echo "FAIL: $label: wrong results or failed run (exit $rc)"; grep -E "FAIL|checks|error" <<<"$out" | head -20
    fail=1
    return
  fi
  # The ring steps of every rank's phase line, summed (only leaders make inter-node steps).
  rings=$(sed -n 's/.*inter-node steps [0-9]*, on ARShim.s ring \([0-9]*\)\(; sleeps [0-9]*\)\{0,1\}$/\1/p' <<<"$out" | awk '{s += $1} END {print s + 0}')
  local steps
  steps=$(sed -n 's/.*inter-node steps \([0-9]*\), on ARShim.s ring [0-9]*\(; sleeps [0-9]*\)\{0,1\}$/\1/p' <<<"$out" | awk '{s += $1} END {print s + 0}')
  if [[ $steps -eq 0 ]]; then
    echo "FAIL: $label: no inter-node step counted"; grep phases <<<"$out"; fail=1
  elif [[ $expect == ring && $rings -eq 0 ]]; then
    echo "FAIL: $label: no inter-node step took the ring ($steps steps)"; fail=1
  elif [[ $expect == none && $rings -ne 0 ]]; then
    echo "FAIL: $label: $rings of $steps inter-node steps took the ring"; fail=1
  else
    echo "ok: $label: right results, $rings of $steps inter-node steps on the ring"
  fi
}

check 6 ring "auto, 3 nodes x 2, large partitions" ARSHIM_LEADERS=2 -- "$prog" --quick --large 300007
check 4 none "auto, 2 nodes x 2" ARSHIM_LEADERS=2 -- "$prog" --quick --large 300007
check 6 none "library forced, 3 nodes x 2" ARSHIM_LEADERS=2 ARSHIM_INTERNODE=library -- "$prog" --quick --large 300007
# One leader: a leader's partition is the whole chunk (up to 4 MiB where the leaders take the ring), so each ring
# step moves half (2 nodes) or a third (3 nodes) of it.
check 6 ring "auto, 3 nodes x 2, one leader, blocks in pieces" ARSHIM_LEADERS=1 -- "$prog" --quick --large 300007
check 4 ring "ring forced, 2 nodes x 2, one leader, blocks in pieces" ARSHIM_LEADERS=1 ARSHIM_INTERNODE=ring \
  -- "$prog" --quick --large 300007
check 6 ring "ring forced, 3 nodes x 2, many chunks" ARSHIM_LEADERS=2 ARSHIM_INTERNODE=ring ARSHIM_SHM_MAX=64K \
  -- "$prog" --quick --subcomms --large 20011
check 4 ring "ring forced, 2 nodes x 2, pipeline_k 3" ARSHIM_LEADERS=2 ARSHIM_PIPELINE_K=3 ARSHIM_INTERNODE=ring \
  -- "$prog" --quick --large 20011
check 5 ring "ring forced, uneven nodes 2 + 2 + 1" ARSHIM_LEADERS=2 ARSHIM_INTERNODE=ring -- "$prog" --quick --subcomms \
  --large 20011
PPN=1 check 3 ring "auto, 3 nodes x 1, the whole call on the ring" -- "$prog" --quick --subcomms --large 300007
PPN=1 check 2 ring "ring forced, 2 nodes x 1, every count" ARSHIM_INTERNODE=ring -- "$prog" --quick --in-place-first \
  --large 20011
PPN=1 check 5 ring "ring forced, 5 nodes x 1, every count" ARSHIM_INTERNODE=ring -- "$prog" --quick --subcomms \
  --in-place-first --large 20011
exit $fail
