#!/usr/bin/env bash
# Many live communicators (ARSHIM_MAX_COMMS, docs/paths.md "Communicators ARShim makes"): check_many_comms keeps 1500
# communicators at once, which both libraries allow natively (MPICH: 2048 context ids per process), and must run
# under ARShim with every result right; with a small ARSHIM_MAX_COMMS under each forced path that makes windows or
# communicators, calls beyond the limit go native (comm_limit) and the room comes back when communicators are freed.
#
#   many_comms_test.sh FLAVOR SHIM_LIB PROGRAM [SHARP_DOUBLE]
set -uo pipefail
flavor=$1 shim=$2 prog=$3 sharp_double=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
socket_policy=$(mktemp --suffix=.toml)
trap 'rm -f "$out" "$socket_policy"' EXIT
printf 'version = 1\n[[rule]]\nname = "sharp, socket leaders"\npath = "sharp"\nsharp_leaders = "socket"\n' >"$socket_policy"
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

# run NAME NP LIB [VAR=VALUE ...] -- ARGS
run() {
  local name=$1 np=$2 lib=$3; shift 3
  local vars=()
  while [[ $# -gt 0 && $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  if ARSHIM_TEST_TIMEOUT=300 "$here/../mpi/mpirun.sh" "$flavor" "$np" "$lib" "${vars[@]}" -- "$prog" "$@" >"$out" 2>&1 &&
      grep -q "check_many_comms: ok" "$out"; then
    echo "ok: $name ($(grep -o "check_many_comms: ok.*" "$out"))"
  else
    echo "FAIL $name:"; grep -v "^\s*$" "$out" | head -20 | sed 's/^/    /'; fail=1
  fi
}

run "native, 1500 live communicators" 2 none -- 1500 10
run "ARShim's default, 1500 live communicators" 2 "$shim" -- 1500 10
run "multileader forced, 1500 live communicators" 2 "$shim" ARSHIM_PATH=multileader -- 1500 10
run "multileader forced, ARSHIM_MAX_COMMS=3, 2 x 2 virtual nodes" 4 "$shim" ARSHIM_PATH=multileader \
  ARSHIM_VIRTUAL_PPN=2 ARSHIM_MAX_COMMS=3 -- 40 4 --limit
run "multileader forced, ARSHIM_MAX_COMMS=5, no window reuse, np 3" 3 "$shim" ARSHIM_PATH=multileader \
  ARSHIM_SHM_REUSE=off ARSHIM_MAX_COMMS=5 -- 30 3 --limit
run "ARShim's ring at one rank per node, ARSHIM_MAX_COMMS=2, np 3" 3 "$shim" ARSHIM_PATH=multileader \
  ARSHIM_VIRTUAL_PPN=1 ARSHIM_INTERNODE=ring ARSHIM_MAX_COMMS=2 -- 30 3 --limit
# Beyond the limit the reproducible path folds without a window (collectives over the communicator): still served.
run "reproducible forced, ARSHIM_MAX_COMMS=2, np 3" 3 "$shim" ARSHIM_PATH=reproducible ARSHIM_MAX_COMMS=2 -- 30 3
if [[ -n $sharp_double ]]; then
  run "SHARP forced (test double), ARSHIM_MAX_COMMS=3, 2 x 2 virtual nodes" 4 "$shim" ARSHIM_PATH=sharp \
    ARSHIM_SHARP=on ARSHIM_SHARP_LIB="$sharp_double" ARSHIM_VIRTUAL_PPN=2 ARSHIM_MAX_COMMS=3 -- 30 3 --limit
fi
# At MPICH's limit: the program holds every context id but FREE, so ARShim's own communicators and windows cannot be
# made; it must decline (agreed on every rank) and never abort, whatever the path. Open MPI has no such limit.
if [[ $flavor == mpich ]]; then
  for free in 0 1 2 3 4; do
    run "every context id taken but $free, the policy, np 2" 2 "$shim" -- --exhaust "$free" 12
    run "every context id taken but $free, multileader, 2 x 2 virtual nodes, two leaders" 4 "$shim" \
      ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2 ARSHIM_LEADERS=2 -- --exhaust "$free" 4
    run "every context id taken but $free, ARShim's ring, np 3" 3 "$shim" ARSHIM_PATH=multileader \
      ARSHIM_VIRTUAL_PPN=1 ARSHIM_INTERNODE=ring -- --exhaust "$free" 4
    run "every context id taken but $free, reproducible, 2 x 2 virtual nodes" 4 "$shim" ARSHIM_PATH=reproducible \
      ARSHIM_VIRTUAL_PPN=2 -- --exhaust "$free" 4
    if [[ -n $sharp_double ]]; then
      run "every context id taken but $free, SHARP (test double), 2 x 2 virtual nodes" 4 "$shim" ARSHIM_PATH=sharp \
        ARSHIM_SHARP=on ARSHIM_SHARP_LIB="$sharp_double" ARSHIM_VIRTUAL_PPN=2 -- --exhaust "$free" 4
      run "every context id taken but $free, SHARP socket leaders, 2 x 2 virtual nodes" 4 "$shim" \
        ARSHIM_SHARP=on ARSHIM_SHARP_LIB="$sharp_double" ARSHIM_VIRTUAL_PPN=2 ARSHIM_POLICY="$socket_policy" \
        -- --exhaust "$free" 4
    fi
  done
fi
exit $fail
