#!/usr/bin/env bash
# Runs a program with ARShim preloaded and checks, from the shim's statistics log (its totals), that exactly EXPECTED
# MPI_Allreduce calls were intercepted over all ranks (proves interception, and that no call was counted twice),
# and that the program itself reported success.
#
#   expect_calls.sh FLAVOR NP SHIM EXPECTED [VAR=VALUE ...] -- PROGRAM [ARGS...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
flavor=$1 np=$2 shim=$3 expected=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/output stats=$work/stats.json
"$here/mpirun.sh" "$flavor" "$np" "$shim" ARSHIM_STATS="$stats" ARSHIM_STATS_SUMMARY=1 "$@" >"$log" 2>&1
rc=$?
cat "$log"
if [[ $rc -ne 0 ]]; then
  echo "expect_calls: program failed (exit $rc)"
  exit 1
fi
got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["calls"])' "$stats" 2>/dev/null)
if [[ -z $got ]]; then
  echo "expect_calls: no ARShim statistics log: the shim did not intercept MPI_Init/MPI_Finalize"
  exit 1
fi
if [[ $got -ne $expected ]]; then
  echo "expect_calls: ARShim intercepted $got MPI_Allreduce calls, expected $expected"
  exit 1
fi
echo "expect_calls: ARShim intercepted $got calls as expected"
