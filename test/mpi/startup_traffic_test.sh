#!/usr/bin/env bash
# ARShim's own traffic leaves every pair of ranks with an even count of messages each way (shim/base/mpi_util.h:
# under Open MPI 4.1.4 the parity moves the latency of an 8-byte allreduce at np 2 by ~30%). Counted with Open
# MPI's message monitoring (pml monitoring, per peer, point-to-point and collective messages) over a program whose
# own traffic is balanced: the difference of the two directions must be even for every pair, under the settings
# that change what ARShim sends at start. The control run adds one broadcast and must be caught.
#
#   startup_traffic_test.sh SHIM_LIB PROGRAM POLICY_FILE
set -uo pipefail
shim=$1 prog=$2 policy=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

# counts NP SHIM [VAR=VALUE ...] -- ARGS: runs the program, prints "a-b: n_ab vs n_ba" per pair that exchanged messages
counts() {
  local np=$1 lib=$2; shift 2
  rm -f "$work"/mon.*
  # osc=^monitoring: Open MPI 4.1.4's one-sided monitoring wrapper breaks shared windows (MPI_Win_shared_query fails
  # with MPI_ERR_RMA_FLAVOR), so ARShim's node window would be refused; the point-to-point counts stay.
  if ! ARSHIM_TEST_TIMEOUT=120 "$here/mpirun.sh" openmpi "$np" "$lib" OMPI_MCA_pml_monitoring_enable=1 \
      OMPI_MCA_pml_monitoring_enable_output=3 "OMPI_MCA_pml_monitoring_filename=$work/mon" "OMPI_MCA_osc=^monitoring" \
      "$@" >"$work/out" 2>&1 ||
      ! grep -q "startup_traffic: ok" "$work/out"; then
    echo "run failed:"; sed 's/^/    /' "$work/out" | head -20; return 1
  fi
  cat "$work"/mon.*.prof 2>/dev/null | awk -F'\t' '$1 == "E" { split($5, m, " "); sent[$2 " " $3] = m[1] }
    END { for (k in sent) { split(k, p, " "); if (p[1] < p[2]) { back = sent[p[2] " " p[1]] + 0;
            printf "%s-%s: %d vs %d\n", p[1], p[2], sent[k], back } }
          for (k in sent) { split(k, p, " "); if (p[1] > p[2] && !((p[2] " " p[1]) in sent))
            printf "%s-%s: 0 vs %d\n", p[2], p[1], sent[k] } }' | sort
}
# odd_pairs BASE COUNTS: the pairs whose difference of directions has another parity in COUNTS than in BASE
odd_pairs() {
  awk 'NR == FNR { base[$1] = $2 - $4; next } { if (($2 - $4 - base[$1]) % 2) print $1 }' <(echo "$1") <(echo "$2") |
    tr '\n' ' '
}

declare -A native
check() {  # check NAME NP [VAR=VALUE ...]: ARShim preloaded, every pair's parity as without ARShim
  local name=$1 np=$2; shift 2
  if [[ -z ${native[$np]:-} ]]; then
    native[$np]=$(counts "$np" none -- "$prog") || { echo "FAIL native np $np: ${native[$np]}"; fail=1; return; }
  fi
  local c; c=$(counts "$np" "$shim" "$@" -- "$prog") || { echo "FAIL $name: $c"; fail=1; return; }
  [[ -n $c ]] || { echo "FAIL $name: no monitoring output (pml monitoring missing?)"; fail=1; return; }
  local odd; odd=$(odd_pairs "${native[$np]}" "$c")
  if [[ -n $odd ]]; then
    echo "FAIL $name: another parity of messages than without ARShim between ranks $odd"
    paste <(echo "$c") <(echo "${native[$np]}") | sed 's/^/    with ARShim: /; s/\t/   without: /'; fail=1
  else echo "ok: $name ($(tr '\n' ',' <<<"$c" | sed 's/,$//'); without ARShim $(tr '\n' ',' <<<"${native[$np]}" | sed 's/,$//'))"; fi
}

# The control: the checker must see one extra broadcast.
native[2]=$(counts 2 none -- "$prog")
c=$(counts 2 none -- "$prog" --odd) && [[ -n $(odd_pairs "${native[2]}" "$c") ]] &&
  echo "ok: control (one broadcast more is seen: $c, without it ${native[2]})" ||
  { echo "FAIL control: an odd broadcast was not detected"; sed 's/^/    /' <<<"$c"; fail=1; }
check "np 2, no ARSHIM_* variable" 2
check "np 2, ARSHIM_LOG=warn (settings sent)" 2 ARSHIM_LOG=warn
check "np 2, ARSHIM_POLICY (policy text sent)" 2 "ARSHIM_POLICY=$policy"
check "np 3, ARSHIM_LOG=warn" 3 ARSHIM_LOG=warn
check "np 4" 4
check "np 4, ARSHIM_PATH=native" 4 ARSHIM_PATH=native
check "np 4, ARSHIM_VIRTUAL_PPN=2" 4 ARSHIM_VIRTUAL_PPN=2
check "np 4, ARSHIM_POLICY, ARSHIM_VIRTUAL_PPN=2" 4 "ARSHIM_POLICY=$policy" ARSHIM_VIRTUAL_PPN=2
check "np 4, two leaders (leader communicators)" 4 ARSHIM_PATH=multileader ARSHIM_LEADERS=2 ARSHIM_CONTEXT_AFTER=1

# Open MPI's one-sided monitoring wrapper (on with pml monitoring unless osc=^monitoring) hands out shared windows
# whose MPI_Win_shared_query fails: ARShim must say so once and run the calls native, not abort the job.
out=$(ARSHIM_TEST_TIMEOUT=120 "$here/mpirun.sh" openmpi 2 "$shim" OMPI_MCA_pml_monitoring_enable=1 \
        OMPI_MCA_pml_monitoring_enable_output=0 ARSHIM_STATS_SUMMARY=1 -- "$prog" 2>&1)
if grep -q "startup_traffic: ok" <<<"$out" &&
   [[ $(grep -c "window refused by the MPI library (MPI_ERR_RMA_FLAVOR" <<<"$out") -eq 1 ]] &&
   grep -q "^arshim\[0\] native  *4 " <<<"$out"; then
  echo "ok: a refused shared window: one warning, the calls native, the right sum"
else
  echo "FAIL a refused shared window:"; sed 's/^/    /' <<<"$out" | head -20; fail=1
fi
exit $fail
