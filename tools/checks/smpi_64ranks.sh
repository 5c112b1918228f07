#!/usr/bin/env bash
# The SMPI build's correctness check at 64 simulated ranks (issue 44's goal: every path at 16 and 64 ranks, both
# selectors): the CI's SMPI cases (test/smpi/meson.build: every forced path, the default, uneven hosts, virtual
# nodes, the window and piece variants, each under the mpich and ompi selectors; check_smpi.c checks every op x type
# at small counts, in place, sub-communicators, on every rank) rerun on 16 hosts with 64 ranks: 4 per host, or 1 to 8
# for the uneven cases (test/smpi/hosts_uneven64.txt). About 20 s per case, 10 minutes in all on 2 cores.
#
#   tools/checks/smpi_64ranks.sh [BUILD_DIR]     default: build
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[[ -d $build ]] || { echo "smpi_64ranks: no build directory $build (meson setup it first)" >&2; exit 2; }
ninja -C "$build" >/dev/null
SMPI_CHECK_RANKS=64 meson test -C "$build" --no-rebuild --suite smpi --timeout-multiplier 2 \
  $(meson test -C "$build" --no-rebuild --list 2>/dev/null | sed -n -E 's@^arshim:smpi / (smpi-(mpich|ompi)-.*)$@\1@p')
