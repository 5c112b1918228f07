#!/usr/bin/env bash
# Node windows taken over from freed communicators (shim/paths/window_pool.h, ARSHIM_SHM_REUSE): check_reused_windows
# makes and frees communicators of several shapes and checks every result on every rank; this script runs it under
# the settings that change what is kept, and checks from ARShim's debug log that windows were (or were not) taken
# over.
#
# check_random_comms then makes, uses and frees communicators of drawn shapes in a drawn order (seeded alike on every
# rank) under forced paths and virtual nodes.
#
#   reused_windows_test.sh FLAVOR SHIM_LIB PROGRAM RANDOM_PROGRAM
set -uo pipefail
flavor=$1 shim=$2 prog=$3 random_prog=$4
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

# run NAME NP EXPECT(taken|none) [VAR=VALUE ...] [-- ARGS]
run() {
  local name=$1 np=$2 expect=$3; shift 3
  local vars=() args=()
  while [[ $# -gt 0 && $1 != -- ]]; do vars+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift && args=("$@")
  if ! ARSHIM_TEST_TIMEOUT=180 "$here/mpirun.sh" "$flavor" "$np" "$shim" ARSHIM_LOG=debug "${vars[@]}" -- \
      "$prog" "${args[@]}" >"$out" 2>&1 || ! grep -q "check_reused_windows: ok" "$out"; then
    echo "FAIL $name:"; grep -v "arshim.*debug\|decision:\|context:" "$out" | head -20 | sed 's/^/    /'; fail=1; return
  fi
  local taken; taken=$(grep -c "taken over from a freed one" "$out")
  if [[ $expect == taken && $taken -eq 0 ]]; then
    echo "FAIL $name: no window was taken over"; fail=1
  elif [[ $expect == none && $taken -ne 0 ]]; then
    echo "FAIL $name: $taken windows taken over, expected none"; fail=1
  else
    echo "ok: $name ($(grep -o "check_reused_windows: ok.*" "$out"), $taken windows taken over)"
  fi
}

run "default np 2" 2 taken
run "served from the first call, np 2" 2 taken ARSHIM_CONTEXT_AFTER=1
run "multileader forced, 2 x 2 virtual nodes, two leaders" 4 taken ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2 \
  ARSHIM_LEADERS=2
run "uneven nodes (2 + 1), from the first call" 3 taken ARSHIM_VIRTUAL_PPN=2 ARSHIM_CONTEXT_AFTER=1
run "multileader forced, a 64 KiB window cap, np 3" 3 taken ARSHIM_PATH=multileader ARSHIM_SHM_MAX=64K
run "ARSHIM_SHM_REUSE=off" 2 none ARSHIM_SHM_REUSE=off ARSHIM_CONTEXT_AFTER=1
run "MPI_THREAD_MULTIPLE" 2 taken ARSHIM_CONTEXT_AFTER=1 -- --multiple
run "3 threads churning communicators of the same members at once, np 2" 2 taken ARSHIM_CONTEXT_AFTER=1 -- --threads 3
run "3 threads, np 3, multileader forced" 3 taken ARSHIM_PATH=multileader -- --threads 3 --cycles 25
# random NAME NP SEED [VAR=VALUE ...]
random() {
  local name=$1 np=$2 seed=$3; shift 3
  if ARSHIM_TEST_TIMEOUT=180 "$here/mpirun.sh" "$flavor" "$np" "$shim" "$@" -- "$random_prog" "$seed" 300 >"$out" 2>&1 &&
      grep -q "check_random_comms: ok" "$out"; then
    echo "ok: random communicators, $name ($(grep -o "check_random_comms: ok.*" "$out"))"
  else
    echo "FAIL random communicators, $name:"; head -20 "$out" | sed 's/^/    /'; fail=1
  fi
}
random "seed 1, np 4, 2 x 2 virtual nodes" 4 1 ARSHIM_VIRTUAL_PPN=2 ARSHIM_CONTEXT_AFTER=2
random "seed 2, np 5, multileader forced" 5 2 ARSHIM_PATH=multileader
random "seed 3, np 3, reproducible forced" 3 3 ARSHIM_PATH=reproducible
random "seed 4, np 4, online tuning" 4 4 ARSHIM_TUNE=online ARSHIM_CONTEXT_AFTER=1
exit $fail
