#!/usr/bin/env bash
# The walk of MPI_Allreduce through ARShim's sources (issue 55: "files, stays, returns, engine.cpp visits"), by gdb
# stepping in a debug build: rank 0 of a 2-rank MPICH job (mpirun.mpich) under gdb, rank 1 plain. A program of 12
# calls of 4 doubles (MPI_SUM on MPI_COMM_WORLD) is built here; the first call (the communicator's context, its route
# looked up, the path's state made) and the twelfth (settled) are followed.
#
#   tools/checks/call_walk.sh LIBARSHIM_MPICH_SO [ARSHIM_* settings...]     e.g. ARSHIM_TUNE=off
# LIBARSHIM_MPICH_SO from a debug build (meson setup B -Dbuildtype=debug; tools/checks/shim_coverage.sh's build-coverage
# is one). Prints, per call and per granularity (every source file, then the .cpp files alone: a header's inline helper
# is its caller's at -O2), steps, stays, files, stays that return to a file already visited, and engine.cpp's stays;
# then the .cpp walk of each call.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=$(realpath "${1:?usage: call_walk.sh LIBARSHIM_MPICH_SO [ARSHIM_*=VALUE ...]}")
shift
command -v gdb >/dev/null || { echo "call_walk: gdb not found (Debian: apt-get install gdb)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/walk.c" <<'PROGRAM'
#include <mpi.h>
int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    double in[4] = {1, 2, 3, 4}, out[4];
    for (int i = 0; i < 12; ++i) {
        MPI_Allreduce(in, out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return out[3] == 8 ? 0 : 1;
}
PROGRAM
mpicc.mpich -g -O0 "$work/walk.c" -o "$work/walk"
settings=()
for s in "$@"; do settings+=(-genv "${s%%=*}" "${s#*=}"); done
CALL_WALK_LINE=walk.c:6 CALL_WALK_CALLS=1,12 CALL_WALK_TOTAL=12 mpirun.mpich -np 2 "${settings[@]}" \
    -genv LD_PRELOAD "$lib" sh -c 'if [ "$PMI_RANK" = 0 ]; then exec gdb -batch -x "$0" --args "$1"; else exec "$1"; fi' \
    "$here/call_walk.py" "$work/walk" >"$work/out.txt" 2>&1 || { tail -n 20 "$work/out.txt" >&2; exit 1; }
grep '^WALK ' "$work/out.txt" | cut -c6- | python3 -c '
import json, sys
walks = json.load(sys.stdin)
def measure(stays):
    returns = sum(1 for i, s in enumerate(stays) if s in stays[:i])
    engine = sum(1 for s in stays if s.endswith("core/engine.cpp"))
    return f"{len(stays)} stays in {len(set(stays))} files, {returns} returns, engine.cpp {engine}"
for call, w in walks.items():
    own = [f for f in w["walk"] if f.endswith(".cpp") and f.startswith(("shim/", "policy/", "kernels/"))]
    cpp = [f for i, f in enumerate(own) if i == 0 or own[i - 1] != f]
    steps, every = w["steps"], measure(w["walk"])
    print(f"call {call}: {steps} steps; every file: {every}; .cpp files: {measure(cpp)}")
    print("  " + " -> ".join(f.split("/")[-1] for f in cpp))
'
