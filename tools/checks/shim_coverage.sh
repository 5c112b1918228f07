#!/usr/bin/env bash
# Branch coverage of the whole shim by the tests that run without mpirun (issue 55 item 4): every file of shim/ that
# the MPICH flavor compiles (libarshim-mpich.so: the entry points, the core, the MPI-free logic) is in the
# denominator, the files no test links too (they count with 0 taken branches: gcovr reads their .gcno without a
# .gcda). The tests: the shim-core unit tests, and the shim-fake-mpi suite when it is there (the shim's core linked to
# test/fake_mpi, a fake MPI whose ranks are forked processes). A coverage build (debug, MPICH only: Open MPI, the
# standard ABI and SMPI compile the same files again, for other libraries), measured with gcovr (Debian: gcovr).
#
#   tools/checks/shim_coverage.sh [BUILD_DIR]     default: build-coverage (created when missing)
# Prints gcovr's per-file table for shim/ (its last line is the total), then the total and each room's share as
# "covered/total branches (percent)". Every branch gcc made counts, those only an exception takes too: gcov marks a
# branch as an exception's only on lines that ran, so leaving them out (gcovr --exclude-throw-branches) would shrink
# the denominator as the tests reach more code. Branches on lines without code (a closing brace's destructors) are
# left out (--exclude-unreachable-branches), decided from the source alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-coverage}
command -v gcovr >/dev/null || { echo "shim_coverage: gcovr not found (Debian: apt-get install gcovr)" >&2; exit 2; }
[[ -d $build ]] || meson setup "$build" "$root" -Db_coverage=true --buildtype=debug -Dfuzz=disabled -Dsmpi=disabled \
    -Dopenmpi=disabled -Dabi=disabled >/dev/null
[[ -f $build/shim/libarshim-mpich.so || -n $(ninja -C "$build" -t targets all | grep -F 'shim/libarshim-mpich.so:') ]] || {
    echo "shim_coverage: $build builds no libarshim-mpich.so (MPICH not found): the whole shim is measured on it" >&2
    exit 2
}
# The shim-fake-mpi tests' programs (meson test would build everything first).
fake_programs=$(meson introspect --tests "$build" | /usr/bin/python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
print(" ".join(sorted({os.path.relpath(t["cmd"][0], build) for t in json.load(sys.stdin) if any(s.split(":")[-1] == "shim-fake-mpi" for s in t["suite"])})))
' "$build")
# shellcheck disable=SC2086  # a list of ninja targets
ninja -C "$build" shim/libarshim-mpich.so test/shim/test-shim-core $fake_programs \
    $( [[ -n $fake_programs ]] && echo test/sharp/libsharp_coll.so ) >/dev/null
find "$build" -name '*.gcda' -delete
"$build/test/shim/test-shim-core" >/dev/null
if [[ -n $fake_programs ]]; then
    meson test -C "$build" --no-rebuild --suite shim-fake-mpi >/dev/null || {
        echo "shim_coverage: the shim-fake-mpi tests failed (meson test -C $build --suite shim-fake-mpi)" >&2
        exit 1
    }
fi
table=$(gcovr -r "$root" --object-directory "$build" "$build" --filter 'shim/' --branches --exclude-unreachable-branches)
echo "$table"
# The table's rows: file, branches, taken, cover, missing.
echo "$table" | awk '
    $1 ~ /^shim\// { split($1, p, "/"); room = p[2]; total[room] += $2; taken[room] += $3; all += $2; hit += $3 }
    END {
        printf "whole shim (MPICH flavor), without mpirun: %d/%d branches (%.1f%%)\n", hit, all, all ? 100 * hit / all : 0
        n = split("entry core modes paths sharp stats base", rooms, " ")
        for (i = 1; i <= n; ++i) {
            r = rooms[i]
            printf "  %-6s %5d/%-5d branches (%.1f%%)\n", r, taken[r], total[r], total[r] ? 100 * taken[r] / total[r] : 0
        }
    }'
