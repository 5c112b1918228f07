#!/usr/bin/env bash
# reproducible_test.sh MPICH_SHIM MPICH_PROG OPENMPI_SHIM OPENMPI_PROG FAKE_SHARP: see meson.build beside this file.
#   layout: every floating-point type, SUM and PROD, is the rank-order fold the program computes itself, and the
#           same bits (digests) under every path forced, every node layout (ARSHIM_VIRTUAL_PPN 1, 2, 4 at np 4),
#           every algorithm, every ISA this CPU has, and both MPIs; without reproducible mode the check fails (it can);
#   any-np: float and double SUM exact before one rounding: the same bits for np 1, 2, 3, 4, 7 and for permuted rank
#           orders, never less accurate than the rank-order sum.
set -uo pipefail
mpich_shim=$1 mpich_prog=$2 ompi_shim=$3 ompi_prog=$4 fake_sharp=$5
here=$(cd "$(dirname "$0")" && pwd)
mpirun_sh=$here/../mpi/mpirun.sh
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say_fail() { echo "FAIL $1"; sed 's/^/    /' <<<"$2" | head -30; fail=1; }
shim_of() { [[ $1 == mpich ]] && echo "$mpich_shim" || echo "$ompi_shim"; }
prog_of() { [[ $1 == mpich ]] && echo "$mpich_prog" || echo "$ompi_prog"; }
for algorithm in gather exchange node; do
  printf 'version = 1\n[[rule]]\nreproducible = true\npath = "reproducible"\nalgorithm = "%s"\n' "$algorithm" \
    >"$tmp/$algorithm.toml"
done

isas=(scalar avx2)
grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && isas+=(avx512)

# name | settings
layout=(
  "default policy|"
  "ARSHIM_PATH=native|ARSHIM_PATH=native"
  "ARSHIM_PATH=pipelined|ARSHIM_PATH=pipelined ARSHIM_SEGMENT_BYTES=4K"
  "ARSHIM_PATH=multileader, 2x2 nodes|ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2"
  "ARSHIM_PATH=sharp, 2x2 nodes|ARSHIM_PATH=sharp ARSHIM_SHARP=on ARSHIM_SHARP_LIB=$fake_sharp ARSHIM_VIRTUAL_PPN=2"
  "one node of 4|ARSHIM_VIRTUAL_PPN=4"
  "2 nodes x 2, chain, 2 leaders|ARSHIM_VIRTUAL_PPN=2 ARSHIM_LEADERS=2 ARSHIM_POLICY=$tmp/node.toml ARSHIM_POLICY_MODE=prepend"
  "4 nodes x 1|ARSHIM_VIRTUAL_PPN=1"
  "gather|ARSHIM_POLICY=$tmp/gather.toml ARSHIM_POLICY_MODE=prepend"
  "exchange|ARSHIM_POLICY=$tmp/exchange.toml ARSHIM_POLICY_MODE=prepend"
  "small shared memory (chunks)|ARSHIM_VIRTUAL_PPN=2 ARSHIM_SHM_MAX=64K"
)
for isa in "${isas[@]}"; do layout+=("ARSHIM_KERNEL=$isa, 2x2 nodes|ARSHIM_KERNEL=$isa ARSHIM_VIRTUAL_PPN=2"); done

reference=""
for flavor in mpich openmpi; do
  for s in "${layout[@]}"; do
    IFS='|' read -r name settings <<<"$s"
    out=$("$mpirun_sh" "$flavor" 4 "$(shim_of $flavor)" ARSHIM_REPRODUCIBLE=layout $settings -- "$(prog_of $flavor)" \
          --mode layout 2>&1)
    rc=$?
    digests=$(grep '^digest' <<<"$out")
    if [[ $rc -ne 0 ]] || ! grep -q "all results as expected" <<<"$out"; then
      say_fail "layout, $flavor, $name: not the rank-order fold (exit $rc)" "$out"
    elif [[ -z $digests ]]; then
      say_fail "layout, $flavor, $name: no digests" "$out"
    elif [[ -n $reference && $digests != "$reference" ]]; then
      say_fail "layout, $flavor, $name: other bits than the first run" "$(diff <(echo "$reference") <(echo "$digests"))"
    else
      [[ -z $reference ]] && reference=$digests
      echo "ok: layout, $flavor, $name: rank-order fold, $(wc -l <<<"$digests") digests as in the first run"
    fi
  done
  # The control: without reproducible mode the library and the paths sum in other orders (the check can fail).
  out=$("$mpirun_sh" "$flavor" 4 "$(shim_of $flavor)" ARSHIM_VIRTUAL_PPN=2 -- "$(prog_of $flavor)" --mode layout 2>&1)
  if grep -q "differ from the rank-order fold" <<<"$out"; then
    echo "ok: layout, $flavor, reproducible mode off: results differ from the rank-order fold, as expected"
  else
    say_fail "layout, $flavor, reproducible mode off: expected results outside the rank-order fold" "$out"
  fi
done

# The statistics: mixed calls in one program: its 24 floating-point calls per rank (6 types x SUM, PROD x in place or
# not) on the reproducible path, its 24 int MAX calls and its last check (a long SUM) elsewhere, and one user op that
# the library serves, counted as not reproducible.
out=$("$mpirun_sh" mpich 2 "$mpich_shim" ARSHIM_REPRODUCIBLE=layout ARSHIM_STATS_SUMMARY=1 -- "$mpich_prog" \
      --mode layout --counts 1000 2>&1)
if grep -qE "arshim\[0\] summary: 100 MPI_Allreduce calls" <<<"$out" && grep -qE "arshim\[0\] reproducible +48 " <<<"$out" &&
   grep -q "not_reproducible=2" <<<"$out"; then
  echo "ok: mixed calls: the floating-point sums on the reproducible path, the exact ops elsewhere"
else
  say_fail "mixed calls: expected 48 of 100 calls on the reproducible path, 2 counted not reproducible" "$out"
fi

# any-np: exact global sums, the same bits for every np and rank order, both MPIs.
reference=""
for flavor in mpich openmpi; do
  for np in 1 2 3 4 7; do
    for order in 0 3; do
      [[ $np -eq 1 && $order -ne 0 ]] && continue
      out=$("$mpirun_sh" "$flavor" "$np" "$(shim_of $flavor)" ARSHIM_REPRODUCIBLE=any-np ARSHIM_VIRTUAL_PPN=2 \
            -- "$(prog_of $flavor)" --mode exact --order "$order" 2>&1)
      rc=$?
      digests=$(grep '^digest' <<<"$out")
      if [[ $rc -ne 0 ]] || [[ -z $digests ]]; then
        say_fail "any-np, $flavor, np $np, order $order: not the exact global sum (exit $rc)" "$out"
      elif [[ -n $reference && $digests != "$reference" ]]; then
        say_fail "any-np, $flavor, np $np, order $order: other bits" "$(diff <(echo "$reference") <(echo "$digests"))"
      else
        [[ -z $reference ]] && reference=$digests
        echo "ok: any-np, $flavor, np $np, rank order $order: exact, same bits as np 1"
      fi
    done
  done
done
# any-np: contributions with a wide exponent range: correctly rounded, never worse than rank order, the same bits in
# any rank order and on any path.
reference=""
for flavor in mpich openmpi; do
  for run in "0|" "5|" "0|ARSHIM_PATH=native ARSHIM_VIRTUAL_PPN=1" "7|ARSHIM_VIRTUAL_PPN=2" "0|ARSHIM_POLICY=$tmp/exchange.toml"; do
    IFS='|' read -r order settings <<<"$run"
    out=$("$mpirun_sh" "$flavor" 4 "$(shim_of $flavor)" ARSHIM_REPRODUCIBLE=any-np $settings -- "$(prog_of $flavor)" \
          --mode accuracy --order "$order" 2>&1)
    rc=$?
    digest=$(grep '^digest' <<<"$out")
    if [[ $rc -ne 0 ]] || [[ -z $digest ]]; then
      say_fail "any-np accuracy, $flavor, order $order, $settings (exit $rc)" "$out"
    elif [[ -n $reference && $digest != "$reference" ]]; then
      say_fail "any-np accuracy, $flavor, order $order, $settings: other bits" "$out"
    else
      [[ -z $reference ]] && reference=$digest
      echo "ok: any-np accuracy, $flavor, order $order${settings:+, $settings}: $(grep '^accuracy' <<<"$out")"
    fi
  done
done
exit $fail
