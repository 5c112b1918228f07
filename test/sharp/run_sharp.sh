#!/usr/bin/env bash
# Runs one SHARP-path test program under test/mpi/mpirun.sh and checks its output: the program must succeed, the
# test double must not have reported a misuse of the API, and each --lines REGEX N must match exactly N lines of
# the combined output (e.g. the one warning ARSHIM_SHARP=on gives for a missing library, or none at all).
#
#   run_sharp.sh FLAVOR NP SHIM [--lines REGEX N ...] [VAR=VALUE ...] -- PROGRAM [ARGS...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
flavor=$1 np=$2 shim=$3
shift 3
patterns=() counts=()
while [[ ${1:-} == --lines ]]; do
  patterns+=("$2") counts+=("$3")
  shift 3
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$here/../mpi/mpirun.sh" "$flavor" "$np" "$shim" "$@" >"$log" 2>&1
rc=$?
cat "$log"
status=0
if [[ $rc -ne 0 ]]; then
  echo "run_sharp: program failed (exit $rc)"
  status=1
fi
if grep -q 'MISUSE' "$log"; then
  echo "run_sharp: the SHARP test double reported a misuse of the API"
  status=1
fi
for i in "${!patterns[@]}"; do
  got=$(grep -cE -- "${patterns[$i]}" "$log")
  if [[ $got -ne ${counts[$i]} ]]; then
    echo "run_sharp: $got lines match '${patterns[$i]}', expected ${counts[$i]}"
    status=1
  fi
done
exit $status
