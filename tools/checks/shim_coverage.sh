#!/usr/bin/env bash
# Branch coverage of the shim's logic by the tests that run without mpirun (issue 42: the router, the tuning
# schedule, the cache file, the statistics keys and fields, the shared-memory arithmetic): a coverage build of the
# shim-core unit tests, run once, measured with gcovr (Debian: gcovr).
#
#   tools/checks/shim_coverage.sh [BUILD_DIR]     default: build-coverage (created when missing)
# Prints gcovr's per-file table for shim/; the last line is the total. Branches that only an exception can take are
# not counted (--exclude-throw-branches): C++ gives every call that may throw such a branch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-coverage}
command -v gcovr >/dev/null || { echo "shim_coverage: gcovr not found (Debian: apt-get install gcovr)" >&2; exit 2; }
[[ -d $build ]] || meson setup "$build" "$root" -Db_coverage=true --buildtype=debug -Dfuzz=disabled >/dev/null
ninja -C "$build" test/shim/test-shim-core >/dev/null
find "$build" -name '*.gcda' -delete
"$build/test/shim/test-shim-core" >/dev/null
gcovr -r "$root" --object-directory "$build" "$build" --filter 'shim/' --branches --exclude-throw-branches \
    --exclude-unreachable-branches
