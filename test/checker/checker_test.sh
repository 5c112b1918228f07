#!/usr/bin/env bash
# checker_test.sh FLAVOR SHIM CHECKER: see meson.build beside this file.
set -uo pipefail
flavor=$1 shim=$2 checker=$3
mpirun_sh=$(cd "$(dirname "$0")" && pwd)/../mpi/mpirun.sh
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0
for np in 2 3 4; do
  for comm in world split dup; do
    out=$("$mpirun_sh" "$flavor" "$np" "$shim" -- "$checker" --comm "$comm" --show 10 2>&1)
    if [[ $? -ne 0 ]] || ! grep -q "checker: [0-9]* cases, 0 wrong results" <<<"$out"; then
      echo "FAIL np $np, $comm communicator, default settings:"; sed 's/^/    /' <<<"$out" | head -30; fail=1
    else
      echo "ok: np $np, $comm communicator: $(grep 'checker:' <<<"$out")"
    fi
  done
done
out=$("$mpirun_sh" "$flavor" 2 none -- "$checker" --show 0 2>&1)
if grep -qE "checker: [0-9]* cases, [1-9][0-9]* wrong results" <<<"$out"; then
  echo "ok: without ARShim the library's own results are wrong: $(grep 'checker:' <<<"$out")"
else
  echo "FAIL: without ARShim the checker expected the library's known wrong results"; sed 's/^/    /' <<<"$out" | head; fail=1
fi
exit $fail
