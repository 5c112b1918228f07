#!/usr/bin/env bash
# Runs one SHARP-path test program under test/mpi/mpirun.sh and checks its output: the program must succeed, the
# test double must not have reported a misuse of the API, and each --lines REGEX N must match exactly N lines of
# the combined output (e.g. the one warning ARSHIM_SHARP=on gives for a missing library, or none at all).
#
# With --stats the run also writes the statistics log, which must be valid against the schema and agree with the
# program's own account of its calls (check_sharp_stats.py; check_sharp only).
#
#   run_sharp.sh FLAVOR NP SHIM [--stats] [--lines REGEX N ...] [VAR=VALUE ...] -- PROGRAM [ARGS...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
flavor=$1 np=$2 shim=$3
shift 3
stats=0
patterns=() counts=()
while [[ ${1:-} == --stats || ${1:-} == --lines ]]; do
  if [[ $1 == --stats ]]; then stats=1; shift; continue; fi
  patterns+=("$2") counts+=("$3")
  shift 3
done
log=$(mktemp)
json=$(mktemp --suffix=.json)
trap 'rm -f "$log" "$json"' EXIT
extra=()
[[ $stats -eq 1 ]] && extra=(ARSHIM_STATS="$json" ARSHIM_STATS_CALLSITES=0)
"$here/../mpi/mpirun.sh" "$flavor" "$np" "$shim" "${extra[@]}" "$@" >"$log" 2>&1
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
if [[ $stats -eq 1 && $rc -eq 0 ]]; then
  /usr/bin/python3 "$here/../../tools/report/arshim_report.py" --validate "$json" || status=1
  /usr/bin/python3 "$here/check_sharp_stats.py" "$log" "$json" || status=1
  # The report tool prints the SHARP section and the rows' SHARP kinds.
  report=$(/usr/bin/python3 "$here/../../tools/report/arshim_report.py" "$json" --section sharp --section rows) || status=1
  if ! grep -q '^SHARP path' <<<"$report"; then
    echo "run_sharp: the report tool printed no SHARP section"
    status=1
  fi
fi
exit $status
