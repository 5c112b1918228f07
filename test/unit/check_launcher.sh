#!/usr/bin/env bash
# `arshim run`: detects the MPI of C, Fortran and Python programs, passes LD_PRELOAD and ARSHIM_* settings to the
# ranks with the right launcher syntax, and refuses a program linked to neither MPI with a one-line error.
# Also: --version, `arshim lib`, and the man page (every subcommand has a section, it renders without warnings).
#   check_launcher.sh ARSHIM BUILD_DIR MAN_PAGE
set -uo pipefail
arshim=$1 build=$2 manpage=$3
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0
logs=$(mktemp -d)
fake=$(mktemp -d)
trap 'rm -rf "$logs" "$fake"' EXIT
expect() {  # expect NAME PATTERN OUTPUT
  if grep -qE -- "$2" <<<"$3"; then echo "ok: $1"; else echo "FAIL: $1: no '$2' in:"; echo "$3"; fail=1; fi
}
# stats_dir NAME: a fresh directory for one run's statistics log ($logs/NAME/stats.json, ARSHIM_STATS).
stats_dir() { rm -rf "${logs:?}/$1" && mkdir "$logs/$1" && echo "$logs/$1"; }
# loaded NAME DIR EXPECTED: the run's statistics log says what EXPECTED (startup_check's keys, np, a setting's
# value) does: that the ranks had ARShim is decided on the log (test/support/startup_facts.py), not on a line.
loaded() {
  local problems
  if problems=$(python3 "$here/../support/startup_facts.py" "$2" "$here/../../tools/report/arshim-stats-1.schema.json" \
                "{\"log\": $3}" 2>&1); then echo "ok: $1"
  else echo "FAIL: $1: $problems"; fail=1; fi
}
EVERY_RANK='"checked": true, "all_loaded": true, "ranks_without_arshim_count": 0, "ranks_other_build_count": 0'
"$arshim" --help >/dev/null && "$arshim" run --help >/dev/null || { echo "FAIL: --help"; fail=1; }
# Every command's --help and -h prints its usage on stdout and exits 0 (policy, report and cluster pass them on).
for command in run lib policy report cluster tune "bench kernels" "bench allreduce" "bench cma" "bench line-floor"; do
  for flag in --help -h; do
    # shellcheck disable=SC2086  # "bench kernels" is two words
    out=$("$arshim" $command "$flag" 2>&1 >/dev/null); rc=$?
    lines=$("$arshim" $command "$flag" 2>/dev/null | wc -l)
    if [[ $rc -ne 0 || $lines -lt 1 ]]; then echo "FAIL: arshim $command $flag: exit $rc, $lines lines: $out"; fail=1; fi
  done
done

# The line floor runs (its sum check fails if an iteration of either process was lost) and refuses a bad option.
out=$("$arshim" bench line-floor --iterations 2000 2>&1)
expect "bench line-floor runs" "^[0-9.]+ ns per iteration \(2000 iterations" "$out"
if "$arshim" bench line-floor --iterations 5 >/dev/null 2>&1; then echo "FAIL: line-floor took 5 iterations"; fail=1; fi

dir=$(stats_dir mpich-np1)
out=$(ARSHIM_LOG=info ARSHIM_STATS=$dir/stats.json "$arshim" run -v -- mpirun.mpich -n 1 \
  "$build/examples/allreduce_sweep-mpich" --max 64 2>&1)
expect "mpich program gets -genv LD_PRELOAD" "-genv LD_PRELOAD [^ ]*libarshim-mpich.so" "$out"
expect "ARSHIM_* passed with -genv" "-genv ARSHIM_LOG info" "$out"
loaded "shim active in the ranks, with the settings passed" "$dir" "{\"np\": 1, $EVERY_RANK, \"ARSHIM_LOG\": \"info\"}"
expect "program ran" "all results correct" "$out"

dir=$(stats_dir openmpi-np1)
out=$(ARSHIM_LOG=info ARSHIM_STATS=$dir/stats.json "$arshim" run -v -- mpirun.openmpi -n 1 \
  "$build/examples/allreduce_sweep-openmpi" --max 64 2>&1)
expect "openmpi program gets -x LD_PRELOAD" "-x LD_PRELOAD=[^ ]*libarshim-openmpi.so" "$out"
expect "ARSHIM_* passed with -x" "-x ARSHIM_LOG" "$out"
loaded "shim active in the ranks, with the settings passed" "$dir" "{\"np\": 1, $EVERY_RANK, \"ARSHIM_LOG\": \"info\"}"

# mpiexec: Hydra's and Open MPI's take the same options as their mpirun.
out=$("$arshim" run -v -- mpiexec.mpich -n 1 "$build/examples/allreduce_sweep-mpich" --max 64 2>&1)
expect "mpiexec.mpich (Hydra) gets -genv LD_PRELOAD" "mpiexec.mpich -genv LD_PRELOAD [^ ]*libarshim-mpich.so" "$out"
expect "mpiexec.mpich ran the program" "all results correct" "$out"
out=$("$arshim" run -v -- mpiexec.openmpi -n 1 "$build/examples/allreduce_sweep-openmpi" --max 64 2>&1)
expect "mpiexec.openmpi gets -x LD_PRELOAD" "mpiexec.openmpi -x LD_PRELOAD=[^ ]*libarshim-openmpi.so" "$out"
expect "mpiexec.openmpi ran the program" "all results correct" "$out"

# A preload of the user's own on the launcher line (libm: harmless, found by name) keeps ARShim's library, first and
# once, in every rank: Hydra keeps the last -genv LD_PRELOAD, Open MPI applies -x to its own MPMD section only. A
# rank without ARShim would be named in rank 0's statistics log (run.startup_check) after ARSHIM_INIT_TIMEOUT.
dir=$(stats_dir mpich-genv)
out=$(ARSHIM_LOG=info ARSHIM_INIT_TIMEOUT=5 ARSHIM_STATS=$dir/stats.json "$arshim" run -v -- mpirun.mpich -n 2 \
  -genv LD_PRELOAD libm.so.6 "$build/examples/allreduce_sweep-mpich" --max 64 2>&1)
expect "user's -genv LD_PRELOAD: ARShim's library first" " -n 2 -genv LD_PRELOAD /[^ :]*libarshim-mpich.so:libm.so.6 " "$out"
[[ $(head -1 <<<"$out" | grep -o LD_PRELOAD | wc -l) -eq 1 ]] || { echo "FAIL: two LD_PRELOAD: $(head -1 <<<"$out")"; fail=1; }
loaded "user's -genv LD_PRELOAD: both ranks load ARShim" "$dir" "{\"np\": 2, $EVERY_RANK}"
dir=$(stats_dir openmpi-mpmd)
out=$(ARSHIM_LOG=info ARSHIM_INIT_TIMEOUT=5 ARSHIM_STATS=$dir/stats.json "$arshim" run -v -- mpirun.openmpi -n 1 \
  "$build/examples/allreduce_sweep-openmpi" --max 64 : -n 1 -x LD_PRELOAD=libm.so.6 \
  "$build/examples/allreduce_sweep-openmpi" --max 64 2>&1)
expect "MPMD: ARShim's -x in the first section" "^arshim: mpirun.openmpi -x LD_PRELOAD=/[^ :]*libarshim-openmpi.so (-x ARSHIM_[A-Z_]+ )*-n 1 " "$out"
expect "MPMD: user's -x LD_PRELOAD in the second, ARShim's library first" " : (-x ARSHIM_[A-Z_]+ )*-n 1 -x LD_PRELOAD=/[^ :]*libarshim-openmpi.so:libm.so.6 " "$out"
# Debian 13's mpirun.openmpi (Open MPI 5.0.7, PRRTE 3.0.8, external PMIx) crashes on any MPMD command line, with or
# without ARShim (open-mpi/ompi#13303): there the command line above is checked, the run is not.
if timeout 60 mpirun.openmpi -n 1 /bin/true : -n 1 /bin/true >/dev/null 2>&1; then
  loaded "MPMD: both ranks load ARShim" "$dir" "{\"np\": 2, $EVERY_RANK}"
else
  echo "note: MPMD run not checked: mpirun.openmpi fails on MPMD command lines without ARShim (open-mpi/ompi#13303)"
fi

# srun without Slurm: a stand-in prints what it was given (test/slurm runs the real one).
printf '#!/bin/sh\nfor a in "$@"; do echo "arg $a"; done\n' >"$fake/srun" && chmod +x "$fake/srun"
out=$(PATH=$fake:$PATH ARSHIM_LOG=info "$arshim" run -- srun --ntasks 2 -l --export PATH "$build/examples/allreduce_sweep-mpich" 2>&1)
expect "srun: --export NAMES (two words) extended in place, settings by name" "^arg --export=PATH,LD_PRELOAD=/[^,]*libarshim-mpich.so,ARSHIM_LOG$" "$out"
expect "srun: the program after valueless and valued options" "^arg $build/examples/allreduce_sweep-mpich$" "$out"
out=$(PATH=$fake:$PATH SLURM_EXPORT_ENV=NONE "$arshim" run -- srun -n 2 "$build/examples/allreduce_sweep-openmpi" 2>&1); rc=$?
expect "srun: SLURM_EXPORT_ENV=NONE refused" "^arshim: srun --export=NONE: " "$out"
[[ $rc -eq 2 ]] || { echo "FAIL: SLURM_EXPORT_ENV=NONE: exit $rc"; fail=1; }
out=$(PATH=$fake:$PATH SLURM_EXPORT_ENV=ALL,FOO=1 "$arshim" run -- srun -n 2 "$build/examples/allreduce_sweep-openmpi" 2>&1)
expect "srun: SLURM_EXPORT_ENV kept and extended" "^arg --export=ALL,FOO=1,LD_PRELOAD=/[^ ]*libarshim-openmpi.so$" "$out"

if [[ -x $build/examples/fortran_allreduce-openmpi ]]; then
  out=$("$arshim" run -v -- mpirun.openmpi -n 1 "$build/examples/fortran_allreduce-openmpi" 2>&1)
  expect "fortran program detected as openmpi" "libarshim-openmpi.so" "$out"
fi
if /usr/bin/python3 -c "import mpi4py" 2>/dev/null; then
  out=$("$arshim" run -v -- mpirun.openmpi -n 1 /usr/bin/python3 -c "from mpi4py import MPI" 2>&1)
  expect "python (mpi4py) detected as openmpi" "libarshim-openmpi.so" "$out"
fi

out=$("$arshim" run -- mpirun.mpich -n 1 /bin/true 2>&1); rc=$?
expect "non-MPI program refused" "^arshim: /(usr/)?bin/true is linked to neither MPICH, Open MPI nor the MPI standard ABI" "$out"
[[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] || { echo "FAIL: want exit 2 and one line, got $rc"; fail=1; }

out=$("$arshim" run -- mpirun.openmpi -n 1 "$build/examples/allreduce_sweep-mpich" 2>&1); rc=$?
expect "launcher/program mismatch refused" "is the openmpi launcher but the program uses mpich" "$out"

out=$("$arshim" --version 2>&1); rc=$?
expect "--version names the version" "^arshim [0-9]+\.[0-9]+\.[0-9]+$" "$(head -1 <<<"$out")"
expect "--version lists the MPICH library" "mpich +/[^ ]*libarshim-mpich.so" "$out"
expect "--version lists the Open MPI library" "openmpi +/[^ ]*libarshim-openmpi.so" "$out"
out=$("$arshim" lib --mpi mpich 2>&1)
expect "lib --mpi mpich" "^/[^ ]*/libarshim-mpich.so$" "$out"
out=$("$arshim" lib "$build/examples/allreduce_sweep-openmpi" 2>&1)
expect "lib PROGRAM detects the flavor" "^/[^ ]*/libarshim-openmpi.so$" "$out"
out=$("$arshim" lib 2>&1); rc=$?
expect "lib without a flavor: one line" "^arshim: name the MPI: arshim lib --mpi mpich\|openmpi" "$out"
[[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] || { echo "FAIL: arshim lib: want exit 2 and one line, got $rc"; fail=1; }
# The launcher's own variables are not passed to the ranks (a rank would warn about an unknown setting).
out=$(ARSHIM_LIB_DIR=$build/shim ARSHIM_LOG=info "$arshim" run -v -- mpirun.openmpi -n 1 "$build/examples/allreduce_sweep-openmpi" --max 64 2>&1)
expect "ARSHIM_LIB_DIR is used" "-x LD_PRELOAD=$(realpath "$build/shim")/libarshim-openmpi.so" "$out"
if grep -q -- "-x ARSHIM_LIB_DIR\|unknown variable" <<<"$out"; then echo "FAIL: ARSHIM_LIB_DIR reached the ranks"; fail=1; fi

# The man page: a section for every command of `arshim --help`, and groff finds nothing to warn about.
commands=$("$arshim" --help | sed -n 's/^    \([a-z]\+\) .*/\1/p')
for command in $commands; do
  grep -q "^\.SS \"arshim $command" "$manpage" || { echo "FAIL: $manpage has no section for arshim $command"; fail=1; }
done
[[ $(wc -w <<<"$commands") -ge 6 ]] || { echo "FAIL: commands of arshim --help not found: $commands"; fail=1; }
if command -v man >/dev/null; then
  warnings=$(man --warnings -l "$manpage" 2>&1 >/dev/null)
  [[ -z $warnings ]] || { echo "FAIL: man --warnings: $warnings"; fail=1; }
fi

# `arshim bench kernels` finds the benchmark programs built beside the launcher (one tiny size, one repetition).
out=$("$arshim" bench kernels --min 1K --max 1K --reps 1 2>&1); rc=$?
expect "bench kernels runs both flavors" "double_sum +1K" "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: arshim bench kernels exited $rc"; fail=1; }
exit $fail
