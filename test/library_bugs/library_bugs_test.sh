#!/usr/bin/env bash
# library_bugs_test.sh FLAVOR SHIM_LIB CHECK_LIBRARY_BUGS: see meson.build beside this file.
set -uo pipefail
flavor=$1 shim=$2 prog=$3
mpirun_sh=$(cd "$(dirname "$0")" && pwd)/../mpi/mpirun.sh
yield_lib=${ARSHIM_TEST_YIELD_LIB:-}
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0
for np in 2 3; do
  for path in auto pipelined multileader; do
    out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib "$mpirun_sh" "$flavor" "$np" "$shim" ARSHIM_PATH=$path ARSHIM_STATS_SUMMARY=1 \
          -- "$prog" 2>&1)
    rc=$?
    if [[ $rc -ne 0 ]] || ! grep -q "library bugs: 0 wrong calls" <<<"$out"; then
      echo "FAIL np $np, ARSHIM_PATH=$path: wrong results with the known bugs routed around"; sed 's/^/    /' <<<"$out" | head -30
      fail=1
    elif ! grep -q "computed with ARShim's kernels (the library's own reduction is wrong): library_bug:" <<<"$out"; then
      echo "FAIL np $np, ARSHIM_PATH=$path: the summary does not list the library bugs"; sed 's/^/    /' <<<"$out" | head -30
      fail=1
    else
      echo "ok: np $np, ARSHIM_PATH=$path: $(grep 'library bugs:' <<<"$out")"
    fi
  done
  # The control: left to the library, the same program finds wrong results (so the check above can fail).
  out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib "$mpirun_sh" "$flavor" "$np" "$shim" ARSHIM_PATH=native \
        ARSHIM_LIBRARY_BUGS=ignore -- "$prog" 2>&1)
  if grep -qE "library bugs: [1-9][0-9]* wrong calls" <<<"$out"; then
    echo "ok: np $np, ARSHIM_LIBRARY_BUGS=ignore: the library's own results are wrong: $(grep 'library bugs:' <<<"$out")"
  else
    echo "FAIL np $np, ARSHIM_LIBRARY_BUGS=ignore: expected the library's wrong results"; sed 's/^/    /' <<<"$out" | head -20
    fail=1
  fi
done
exit $fail
