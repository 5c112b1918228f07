#!/usr/bin/env bash
# Sleeping waits of the node protocol across nodes (ARSHIM_SLEEP_AFTER_US, shim/paths/node_shm.h wait_sleeping):
# a rank that has waited that long sleeps on a futex until the rank it waits for publishes. Here every wait sleeps
# at once (1 us), and the test library makes the safety-net timeout 100 s instead of 2 ms, so a publisher that does
# not wake its sleepers stalls the run past its time limit instead of costing 2 ms. The checker's results are
# verified on every rank; ARSHIM_PHASE_TIMES counts the waits that slept, so the test cannot pass without sleeping.
#
#   sleeping_waits_test.sh FLAVOR TEST_LIB CHECK_ALLREDUCE
set -uo pipefail
flavor=$1 test_lib=$2 check=$3
here=$(cd "$(dirname "$0")" && pwd)
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

# name, ranks, settings: 2 x 2 and 3 x 2 virtual nodes with a 64 KiB window (many chunks, an inter-node step each),
# one and two leaders; the reproducible chain on 2 x 2 (its stores wake as well).
run_case() {
  local name=$1 np=$2
  shift 2
  local out rc sleeps
  out=$(ARSHIM_TEST_TIMEOUT=90 "$here/mpirun.sh" "$flavor" "$np" "$test_lib" ARSHIMTEST_KERNEL_FAULT=none \
        ARSHIMTEST_SLEEP_TIMEOUT_MS=100000 ARSHIM_SLEEP_AFTER_US=1 ARSHIM_PHASE_TIMES=1 ARSHIM_VIRTUAL_PPN=2 \
        CHECK_FLAVOR="$flavor" CHECK_EXPECT_SHIM=1 "$@" -- "$check" --quick --large 20011 2>&1)
  rc=$?
  sleeps=$(sed -n 's/^arshim\[[0-9]*\] phases .*; sleeps \([0-9]*\)$/\1/p' <<<"$out" | awk '{s += $1} END {print s + 0}')
  if [[ $rc -ne 0 ]]; then
    echo "FAIL $name: exit $rc (124: the run stalled, a sleeping rank never woken; 1: a wrong result)"; grep -v '^ *$' <<<"$out" | tail -15
    fail=1
  elif [[ $sleeps -eq 0 ]]; then
    echo "FAIL $name: no wait slept (ARSHIM_SLEEP_AFTER_US=1 had no effect)"; grep phases <<<"$out"; fail=1
  else
    echo "ok: $name: right results on every rank, $sleeps waits slept and were woken"
  fi
}
run_case "multileader 2 x 2, two leaders" 4 ARSHIM_PATH=multileader ARSHIM_LEADERS=2 ARSHIM_SHM_MAX=64K \
  CHECK_EXPECT_PATH=multileader
run_case "multileader 3 x 2, one leader" 6 ARSHIM_PATH=multileader ARSHIM_LEADERS=1 ARSHIM_SHM_MAX=64K \
  CHECK_EXPECT_PATH=multileader
run_case "reproducible chain 2 x 2, then the multi-leader path on its window" 4 ARSHIM_REPRODUCIBLE=layout \
  ARSHIM_PATH=multileader ARSHIM_LEADERS=2 ARSHIM_SHM_MAX=64K
exit $fail
