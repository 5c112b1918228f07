#!/usr/bin/env bash
# `meson install --destdir` of this build, then the installed arshim (not the build tree's) runs the examples under
# both MPIs, finds its libraries and data relative to itself (also after the tree is moved), and its report tool
# validates a log against the installed schema. docs/install.md.
#   install_test.sh BUILD_DIR SOURCE_DIR [YIELD_LIB]
set -uo pipefail
build=$(realpath "$1") source=$(realpath "$2") yield_lib=${3:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d /tmp/arshim-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect NAME PATTERN OUTPUT
  if grep -qE -- "$2" <<<"$3"; then echo "ok: $1"; else echo "FAIL: $1: no '$2' in:"; echo "$3" | tail -20; fail=1; fi
}
# Every ARSHIM_* of the caller's environment stays out (a developer's settings would change what is checked).
for name in $(env | sed -n 's/^\(ARSHIM_[^=]*\)=.*/\1/p'); do unset "$name"; done

out=$(meson install -C "$build" --destdir "$tmp/dest" --no-rebuild --quiet 2>&1) || { echo "FAIL: meson install: $out"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  "import json, sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == 'prefix'))")
root=$tmp/dest$prefix
arshim=$root/bin/arshim
[[ -x $arshim ]] || { echo "FAIL: no $arshim"; exit 1; }

out=$("$arshim" --version 2>&1)
expect "--version: both libraries from the installation" "mpich +$root/lib[^ ]*/libarshim-mpich.so" "$out"
expect "--version: Open MPI library" "openmpi +$root/lib[^ ]*/libarshim-openmpi.so" "$out"
for f in share/arshim/default.toml share/arshim/arshim-stats-1.schema.json share/arshim/tools/report/arshim_report.py \
         share/arshim/tools/arshim/__init__.py share/arshim/tools/arshim/statslog.py \
         share/arshim/tools/tune/arshim_tune.py share/arshim/tools/bench/bench_kernels_report.py \
         share/man/man1/arshim.1 share/doc/arshim/README.md share/doc/arshim/docs/stats.md bin/arshim-policy \
         bin/arshim-stats-summary share/arshim/tools/arshim/path_limits.json; do
  [[ -f $root/$f ]] && echo "ok: installed $f" || { echo "FAIL: $f not installed"; fail=1; }
done
cmp -s "$root/share/arshim/default.toml" "$source/policy/default.toml" && echo "ok: default.toml as compiled in" ||
  { echo "FAIL: installed default.toml differs from policy/default.toml"; fail=1; }
ls "$root"/share/arshim/modulefiles/arshim/*.lua >/dev/null 2>&1 && echo "ok: Lmod module file installed" ||
  { echo "FAIL: no share/arshim/modulefiles/arshim/<version>.lua"; fail=1; }
ls "$root"/share/arshim/examples/*.toml >/dev/null 2>&1 && echo "ok: example tables installed" ||
  { echo "FAIL: no share/arshim/examples/*.toml"; fail=1; }
out=$("$arshim" policy check "$root"/share/arshim/examples/*.toml 2>&1)
expect "installed arshim policy checks the installed examples" "OK, [0-9]+ rules?" "$out"

# ARShim ran in both ranks: the statistics log (valid against the installed schema) says so (run.startup_check).
ranks_loaded() {  # ranks_loaded NAME DIR: DIR/stats.json
  local problems
  if problems=$(python3 "$source/test/support/startup_facts.py" "$2" "$root/share/arshim/arshim-stats-1.schema.json" \
      '{"log": {"np": 2, "checked": true, "all_loaded": true, "ranks_without_arshim_count": 0}}' 2>&1); then
    echo "ok: $1"
  else echo "FAIL: $1: $problems"; fail=1; fi
}
# The examples, under both MPIs, through the installed launcher; the summary is shown, the log says ARShim ran in
# the ranks.
for flavor in mpich openmpi; do
  preload=()
  [[ $flavor == mpich && -n $yield_lib ]] && preload=(env "LD_PRELOAD=$yield_lib")  # test-only: ranks yield
  mkdir "$tmp/$flavor"
  out=$(ARSHIM_STATS_SUMMARY=1 ARSHIM_STATS=$tmp/$flavor/stats.json "${preload[@]}" timeout 240 "$arshim" run -v -- \
        "mpirun.$flavor" -n 2 "$build/examples/allreduce_sweep-$flavor" --max 64K 2>&1)
  expect "$flavor: installed library preloaded" "$root/lib[^ ]*/libarshim-$flavor.so" "$out"
  expect "$flavor: example correct" "all results correct" "$out"
  expect "$flavor: ARShim's summary shown" "^arshim\[0\] summary: " "$out"
  ranks_loaded "$flavor: ARShim in both ranks" "$tmp/$flavor"
done
if [[ -x $build/examples/fortran_allreduce-openmpi ]]; then
  mkdir "$tmp/fortran"
  out=$(ARSHIM_STATS=$tmp/fortran/stats.json timeout 240 "$arshim" run -- mpirun.openmpi -n 2 \
        "$build/examples/fortran_allreduce-openmpi" 2>&1)
  ranks_loaded "Fortran example under the installed arshim" "$tmp/fortran"
fi
if /usr/bin/python3 -c "import mpi4py, numpy" 2>/dev/null; then
  log=$tmp/py.json
  out=$(ARSHIM_STATS=$log timeout 240 "$arshim" run -- mpirun.openmpi -n 2 /usr/bin/python3 \
        "$source/examples/mpi4py_allreduce.py" --steps 2 2>&1)
  expect "mpi4py example under the installed arshim" "all results correct" "$out"
  out=$("$arshim" report "$log" --section callsites 2>&1)
  expect "installed report: Python call sites" "main \(mpi4py_allreduce.py:[0-9]+\)" "$out"
  if /usr/bin/python3 -c "import jsonschema" 2>/dev/null; then
    out=$(/usr/bin/python3 "$root/share/arshim/tools/report/arshim_report.py" --validate "$log" 2>&1)
    expect "installed schema validates the log" ": valid \(" "$out"
  fi
fi

# Moved elsewhere, the tree still works: paths are relative to bin/, the tools' Python package is found from bin/
# (arshim) and from the scripts beside it (bin/arshim-bench-kernels-report links to one).
mkdir -p "$tmp/moved"
mv "$root" "$tmp/moved/arshim"
out=$("$tmp/moved/arshim/bin/arshim" lib --mpi openmpi 2>&1)
expect "moved installation finds its library" "^$tmp/moved/arshim/lib[^ ]*/libarshim-openmpi.so$" "$out"
out=$("$tmp/moved/arshim/bin/arshim" report "$source/test/stats/data/sweep-native.json" 2>&1)
expect "moved installation: arshim report (the installed package and schema)" "^ARShim statistics: .*sweep-native" "$out"
out=$("$tmp/moved/arshim/bin/arshim" report "$tmp/moved" 2>&1)
expect "moved installation: arshim report refuses a directory in one line" \
  "^arshim report: $tmp/moved: a directory, not a regular file$" "$out"
out=$("$tmp/moved/arshim/bin/arshim-bench-kernels-report" --help 2>&1)
expect "moved installation: arshim-bench-kernels-report runs" "^usage: " "$out"
exit $fail
