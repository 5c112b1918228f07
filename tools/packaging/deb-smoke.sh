#!/usr/bin/env bash
# Smoke test of the installed Debian package, from the installed paths only (/usr/bin/arshim, /usr/lib/<triplet>/,
# /usr/share/arshim, the man page): both libraries found, the policy tool reads the installed table, and the
# example program, compiled here with each MPI's wrapper, runs under `arshim run` with ARShim's summary printed and
# its statistics log saying both ranks ran ARShim. mpi4py too when python3-mpi4py is installed.
#   deb-smoke.sh EXAMPLES_DIR      (the source tree's examples/: allreduce_sweep.c, mpi4py_allreduce.py)
set -uo pipefail
examples=$(realpath "$1")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
for name in $(env | sed -n 's/^\(ARSHIM_[^=]*\)=.*/\1/p'); do unset "$name"; done
tmp=$(mktemp -d /tmp/arshim-deb-smoke-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect NAME PATTERN OUTPUT
  if grep -qE -- "$2" <<<"$3"; then echo "ok: $1"; else echo "FAIL: $1: no '$2' in:"; echo "$3" | tail -15; fail=1; fi
}
arshim=/usr/bin/arshim
libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

out=$("$arshim" --version 2>&1)
expect "arshim --version: MPICH library" "mpich +$libdir/libarshim-mpich.so" "$out"
expect "arshim --version: Open MPI library" "openmpi +$libdir/libarshim-openmpi.so" "$out"
out=$("$arshim" policy check /usr/share/arshim/default.toml /usr/share/arshim/examples/*.toml 2>&1)
expect "installed policy tables are valid" "default.toml: OK" "$out"
[[ -f /usr/share/arshim/arshim-stats-1.schema.json ]] && echo "ok: schema installed" || { echo "FAIL: no schema"; fail=1; }
man -w arshim >/dev/null 2>&1 || [[ -f /usr/share/man/man1/arshim.1.gz ]] && echo "ok: man page installed" ||
  { echo "FAIL: no man page"; fail=1; }

for flavor in mpich openmpi; do
  if ! command -v "mpicc.$flavor" >/dev/null; then echo "($flavor: no mpicc.$flavor, not run)"; continue; fi
  "mpicc.$flavor" -O2 -I "$examples/support" -o "$tmp/sweep-$flavor" "$examples/allreduce_sweep.c" ||
    { echo "FAIL: cannot compile the example with mpicc.$flavor"; fail=1; continue; }
  out=$(ARSHIM_STATS_SUMMARY=1 ARSHIM_STATS="$tmp/$flavor.json" timeout 180 "$arshim" run -v -- "mpirun.$flavor" -n 2 \
        "$tmp/sweep-$flavor" --max 16K 2>&1)
  expect "$flavor: the installed library is preloaded" "$libdir/libarshim-$flavor.so" "$out"
  expect "$flavor: example correct" "all results correct" "$out"
  expect "$flavor: ARShim's summary shown" "^arshim\[0\] summary: " "$out"
  # Both ranks ran ARShim: the statistics log says so (run.startup_check), not the summary's wording.
  if python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); c = d["run"].get("startup_check", {})
sys.exit(not (d["run"]["np"] == 2 and c.get("checked") and c.get("all_loaded") and c.get("ranks_without_arshim_count") == 0))' \
     "$tmp/$flavor.json" 2>/dev/null; then echo "ok: $flavor: the log says both ranks ran ARShim"
  else echo "FAIL: $flavor: the statistics log $tmp/$flavor.json is missing or does not say both ranks ran ARShim"; fail=1; fi
done
if /usr/bin/python3 -c "import mpi4py, numpy" 2>/dev/null; then
  out=$(ARSHIM_STATS="$tmp/py.json" timeout 180 "$arshim" run -- mpirun.openmpi -n 2 /usr/bin/python3 \
        "$examples/mpi4py_allreduce.py" --steps 1 2>&1)
  expect "mpi4py example" "all results correct" "$out"
  out=$("$arshim" report "$tmp/py.json" --section callsites 2>&1)
  expect "Python call sites in the report" "main \(mpi4py_allreduce.py:[0-9]+\)" "$out"
fi
echo "deb-smoke: $([[ $fail == 0 ]] && echo passed || echo FAILED)"
exit $fail
