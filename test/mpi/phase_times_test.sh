#!/usr/bin/env bash
# ARSHIM_PHASE_TIMES=1 (docs/cluster.md "Where the time goes at the link bound"): every rank that ran the node
# protocol prints one line of phase sums at MPI_Finalize, with the calls and chunks it counted; without the setting,
# no line. 4 ranks as 2 virtual nodes x 2, multi-leader forced: the program's one 8-byte allreduce on
# MPI_COMM_WORLD is one call of one chunk on every rank (its second, on a communicator of one rank per node,
# declines to the library). The counts are decided on every rank's trace (its "phases" event); the line, for people,
# is checked for being printed once per rank, whole.
#
#   phase_times_test.sh FLAVOR SHIM_LIB PROGRAM
set -uo pipefail
flavor=$1 shim=$2 prog=$3
here=$(cd "$(dirname "$0")" && pwd)
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { ARSHIM_TEST_TIMEOUT=120 "$here/mpirun.sh" "$flavor" 4 "$shim" ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2 "$@" \
          -- "$prog" 2>&1; }

out=$(run ARSHIM_PHASE_TIMES=1 ARSHIM_TRACE="$work/trace-%r.jsonl")
grep -q "startup_traffic: ok" <<<"$out" || { echo "FAIL: the program failed with ARSHIM_PHASE_TIMES=1"; echo "$out"; fail=1; }
counts=$(python3 - "$work" <<'PY'
import glob, json, os, sys
for rank in range(4):
    path = os.path.join(sys.argv[1], f"trace-{rank}.jsonl")
    events = [json.loads(l) for l in open(path)][1:] if os.path.exists(path) else []
    phases = [e for e in events if e.get("event") == "phases"]
    print(rank, len(phases), *[(phases[0][k] if phases else "-") for k in ("calls", "chunks")])
PY
)
if [[ $counts == $'0 1 1 1\n1 1 1 1\n2 1 1 1\n3 1 1 1' ]]; then echo "ok: every rank's trace: one phases event, 1 call, 1 chunk"
else echo "FAIL: the traces' phases events (rank, events, calls, chunks): $(tr '\n' ';' <<<"$counts")"; fail=1; fi
for r in 0 1 2 3; do
  lines=$(grep -c "^arshim\[$r\] phases (node protocol, " <<<"$out")
  line=$(grep "^arshim\[$r\] phases (node protocol, " <<<"$out")
  if [[ $lines -ne 1 ]] || ! grep -qE "copy in [0-9.]+ ms, wait for inputs [0-9.]+ ms, reduce [0-9.]+ ms, inter-node [0-9.]+ ms, wait for results [0-9.]+ ms, copy out [0-9.]+ ms" <<<"$line"; then
    echo "FAIL: rank $r printed $lines phase lines, want one whole line"; echo "$out" | grep -i phases; fail=1
  fi
done
[[ $fail -eq 0 ]] && echo "ok: every rank printed its phase line once"
out=$(run)
if grep -q "phases (node protocol" <<<"$out"; then echo "FAIL: phase lines without ARSHIM_PHASE_TIMES"; fail=1
else echo "ok: no phase line without the setting"; fi
exit $fail
