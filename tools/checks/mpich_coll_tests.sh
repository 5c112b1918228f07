#!/usr/bin/env bash
# Builds MPICH's own MPI_Allreduce tests (test/mpi/coll of the MPICH source) against both installed MPI flavors and
# runs each one natively and with ARShim preloaded in several configurations. Run with --help for the details.
set -uo pipefail

prog=$(basename "$0")
script_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
mpirun_sh=$repo_root/test/mpi/mpirun.sh

# ---------------------------------------------------------------------------------------------------------------
# Settings
ALL_CONFIGS=(native default pipelined-1K multileader multileader-vppn2)
CHECK_VARS=(ARSHIM_VERIFY=1000 ARSHIM_CHECK_ARGS=1 ARSHIM_STATS_SUMMARY=1)  # added to every ARShim configuration
HARNESS_SOURCES=(mtest.c mtest_common.c dtypes.c mtest_single.c)           # from test/mpi/util
EXPECTED_VERSION=4.0.2

source_arg=
workdir=
keep=0
flavors=(mpich openmpi)
configs=("${ALL_CONFIGS[@]}")
tests_arg=
max_np=4
timeout_s=${ARSHIM_TEST_TIMEOUT:-240}
build_dir=$repo_root/build
extra_vars=()
verbose=0
list_only=0
backtraces=1

usage() {
  cat <<EOF
Usage: tools/checks/$prog [OPTIONS]

Runs MPICH's own MPI_Allreduce tests (MPICH $EXPECTED_VERSION, test/mpi/coll) under MPICH and Open MPI, natively
and with ARShim preloaded, and prints one line per (test, flavor, configuration) and a tally.

Source (MPICH's source package; only test/mpi is used, MPICH itself is not built):
  --source PATH       an extracted MPICH source tree (or its test/mpi directory), a directory holding the
                      Debian source package (mpich_*.orig.tar.*), a .dsc file, or a tarball (mpich_*.orig.tar.xz,
                      mpich-*.tar.gz). Without --source: 'apt-get source --download-only mpich' into the work
                      directory (needs a deb-src line in the apt sources and network access to the mirror).
  --workdir DIR       where the source is unpacked, the tests are built and the run logs are written; it is kept.
                      Default: a new temporary directory, removed at exit unless a run failed or --keep is given.
  --keep              keep the temporary work directory.

What runs:
  --flavors LIST      comma-separated MPI flavors (default: mpich,openmpi); built with mpicc.FLAVOR
  --configs LIST      comma-separated configurations (default: all):
                        native             no preload
                        default            ARShim with default settings
                        pipelined-1K       ARSHIM_PATH=pipelined ARSHIM_SEGMENT_BYTES=1K
                        multileader        ARSHIM_PATH=multileader
                        multileader-vppn2  ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2 (np even or >= 4 only)
                      every ARShim configuration also sets ${CHECK_VARS[*]}
  --tests LIST        comma-separated test programs of test/mpi/coll (default: every test there whose source
                      calls MPI_Allreduce( directly and that coll/testlist.in lists); the ranks and arguments
                      come from coll/testlist.in (one run per distinct entry)
  --max-np N          cap on the ranks of a run (default 4; the machine is oversubscribed)
  --timeout SECONDS   per-run time limit (default \$ARSHIM_TEST_TIMEOUT or 240; allredmany needs 20-60 s under
                      MPICH on 2 busy cores, the other tests a few seconds)
  --set VAR=VALUE     an extra setting for every ARShim run (repeatable), e.g. --set ARSHIM_LOG=info
  --build-dir DIR     ARShim's meson build directory (default: $repo_root/build); the libraries are
                      DIR/shim/libarshim-FLAVOR.so, the MPICH yield helper DIR/test/libarshim-test-yield.so
  --list              print the test runs that would be made and exit
  --no-backtraces     on a time-out, do not attach gdb to the hung ranks (default: their stacks go to the log
                      and a one-line summary per rank to the output, when gdb is installed)
  -v, --verbose       print the whole output of a failed run (default: an excerpt; the full log is kept)
  -h, --help          this text

A run passes when it exits 0 and prints MPICH's " No Errors" line; an ARShim run also needs ARShim's summary
("arshim[0] summary:"), 0 verify mismatches and 0 argument-check mismatches in it, and no "MISMATCH" and no
"arguments differ" line. Runs go one after another through test/mpi/mpirun.sh (oversubscription flags; under
MPICH the yield helper is preloaded so busy-polling ranks give up the CPU). ARSHIM_* variables of the calling
environment are ignored (use --set). The ARShim libraries are copied into the work directory first, so that a
rebuild during the runs does not change what is tested. With --workdir, a second run rebuilds only what changed.

A native run that fails only with MPICH's "Error for type T and op O" lines that a known bug of the MPI library
explains (docs/library-bugs.md: MPICH 4.0.x MIN/MAX on unsigned types; Open MPI 4.1.x op/avx 8/16-bit SUM,
MPI_UNSIGNED_LONG and MPI_OFFSET MIN/MAX) is reported as FAIL with "known library bug" and counted apart.

Exit status: 0 all runs passed; 1 a run failed (other than a known library bug in a native run) or a test did
not build; 3 the only failures are native runs explained by known library bugs; 2 usage or setup error.

Examples:
  tools/checks/$prog --source /tmp/src/mpich-4.0.2
  tools/checks/$prog --workdir /tmp/mct --flavors openmpi --configs native,default --tests allred,allred2
EOF
}

die() { echo "$prog: error: $*" >&2; exit 2; }
note() { echo "$prog: $*" >&2; }
say() { echo "==> $*"; }
since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }'; }

split_list() { local IFS=,; read -r -a _list <<<"$1"; }

# ---------------------------------------------------------------------------------------------------------------
# Options
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "option $1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
  opt=$1 val=
  if [[ $opt == --*=* ]]; then val=${opt#*=}; opt=${opt%%=*}; set -- "$opt" "$val" "${@:2}"; fi
  case $opt in
    -h|--help) usage; exit 0 ;;
    --source) need_arg "$@"; source_arg=$2; shift 2 ;;
    --workdir) need_arg "$@"; workdir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --flavors) need_arg "$@"; split_list "$2"; flavors=("${_list[@]}"); shift 2 ;;
    --configs) need_arg "$@"; split_list "$2"; configs=("${_list[@]}"); shift 2 ;;
    --tests) need_arg "$@"; tests_arg=$2; shift 2 ;;
    --max-np) need_arg "$@"; max_np=$2; shift 2 ;;
    --timeout) need_arg "$@"; timeout_s=$2; shift 2 ;;
    --set) need_arg "$@"; [[ $2 == [A-Za-z_]*=* ]] || die "--set wants VAR=VALUE, got '$2'"; extra_vars+=("$2"); shift 2 ;;
    --build-dir) need_arg "$@"; build_dir=$2; shift 2 ;;
    --list) list_only=1; shift ;;
    --no-backtraces) backtraces=0; shift ;;
    -v|--verbose) verbose=1; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ $max_np =~ ^[1-9][0-9]*$ ]] || die "--max-np wants a positive integer, got '$max_np'"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a positive number of seconds, got '$timeout_s'"
[[ ${#flavors[@]} -gt 0 ]] || die "--flavors: empty list"
[[ ${#configs[@]} -gt 0 ]] || die "--configs: empty list"
for f in "${flavors[@]}"; do [[ $f == mpich || $f == openmpi ]] || die "unknown flavor '$f' (allowed: mpich, openmpi)"; done
for c in "${configs[@]}"; do
  [[ " ${ALL_CONFIGS[*]} " == *" $c "* ]] || die "unknown configuration '$c' (allowed: ${ALL_CONFIGS[*]})"
done
[[ -x $mpirun_sh ]] || die "launcher helper not found or not executable: $mpirun_sh"

# Settings of the calling environment would leak into every rank (hydra forwards the whole environment).
stray=$(env | sed -n 's/^\(ARSHIM_[A-Za-z0-9_]*\)=.*/\1/p' | grep -v '^ARSHIM_TEST_' || true)
if [[ -n $stray ]]; then
  note "ignoring the environment's $(tr '\n' ' ' <<<"$stray")(use --set VAR=VALUE)"
  for v in $stray; do unset "$v"; done
fi

# ARShim's libraries (only needed when an ARShim configuration runs) and the MPICH yield helper.
declare -A shim_lib
needs_shim=0
for c in "${configs[@]}"; do [[ $c != native ]] && needs_shim=1; done
if (( needs_shim && ! list_only )); then
  for f in "${flavors[@]}"; do
    shim_lib[$f]=$build_dir/shim/libarshim-$f.so
    [[ -f ${shim_lib[$f]} ]] || die "ARShim library not found: ${shim_lib[$f]} (build it: meson compile -C $build_dir; or pass --build-dir)"
  done
fi
yield_lib=${ARSHIM_TEST_YIELD_LIB:-$build_dir/test/libarshim-test-yield.so}
if (( backtraces && ! list_only )) && ! command -v gdb >/dev/null; then
  note "gdb not found: the stacks of hung ranks will not be shown (apt-get install gdb)"
fi
if [[ " ${flavors[*]} " == *" mpich "* ]] && ! [[ -f $yield_lib ]] && (( ! list_only )); then
  note "warning: MPICH yield helper not found ($yield_lib): oversubscribed MPICH runs may be very slow"
  yield_lib=
fi

for f in "${flavors[@]}"; do
  (( list_only )) && break
  command -v "mpicc.$f" >/dev/null || die "mpicc.$f not found (install the $f development package or drop it with --flavors)"
  command -v "mpirun.$f" >/dev/null || die "mpirun.$f not found (needed by $mpirun_sh)"
done

# ---------------------------------------------------------------------------------------------------------------
# Work directory
made_workdir=0
if [[ -z $workdir ]]; then
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/mpich-coll-tests.XXXXXX") || die "cannot create a temporary directory"
  made_workdir=1
else
  mkdir -p "$workdir" || die "cannot create the work directory $workdir"
  workdir=$(cd "$workdir" && pwd)
fi
keep_workdir=$keep
cleanup() {
  if (( made_workdir && ! keep_workdir )); then rm -rf "$workdir"
  elif (( made_workdir )); then note "work directory kept: $workdir"; fi
}
run_pid='' wd_pid=''
on_signal() {
  echo
  [[ -n $wd_pid ]] && kill -TERM "$wd_pid" 2>/dev/null
  if [[ -n $run_pid ]]; then note "interrupted: stopping the current run"; kill -TERM "$run_pid" 2>/dev/null; wait "$run_pid"
  else note "interrupted"; fi
  keep_workdir=1
  exit 130
}
trap cleanup EXIT
trap on_signal INT TERM

t_start=$(date +%s)

# ---------------------------------------------------------------------------------------------------------------
# Source
extract_tests() {  # TARBALL: unpack test/mpi only into $workdir/src; sets tdir
  local tarball=$1
  say "unpacking test/mpi from $tarball"
  rm -rf "$workdir/src" && mkdir -p "$workdir/src"
  tar -xf "$tarball" -C "$workdir/src" --wildcards \
      '*/test/mpi/coll/*' '*/test/mpi/util/*' '*/test/mpi/include/*' '*/test/mpi/dtpools/include/*' \
      '*/test/mpi/version.m4' 2>"$workdir/src/tar.err" ||
    die "cannot unpack MPICH's test/mpi from $tarball: $(head -3 "$workdir/src/tar.err")"
  tdir=$(find "$workdir/src" -maxdepth 4 -type d -path '*/test/mpi' | head -1)
  [[ -n $tdir && -f $tdir/coll/allred.c ]] || die "$tarball holds no MPICH test suite (no */test/mpi/coll/allred.c)"
}
orig_tarball_in() {  # DIR: the newest mpich_*.orig.tar.* in DIR
  find "$1" -maxdepth 1 -type f \( -name 'mpich_*.orig.tar.*' -o -name 'mpich-*.tar.*' \) | sort -V | tail -1
}
find_source() {
  local src=$1 tb d
  if [[ -d $src ]]; then
    if [[ -f $src/test/mpi/coll/allred.c ]]; then tdir=$(cd "$src/test/mpi" && pwd); return; fi
    if [[ -f $src/coll/allred.c && -d $src/util ]]; then tdir=$(cd "$src" && pwd); return; fi
    for d in "$src"/mpich-*/test/mpi; do
      if [[ -f $d/coll/allred.c ]]; then tdir=$(cd "$d" && pwd); return; fi
    done
    tb=$(orig_tarball_in "$src")
    [[ -n $tb ]] || die "no MPICH source in $src: expected an extracted tree (test/mpi/coll/allred.c) or an mpich_*.orig.tar.* tarball"
    extract_tests "$tb"
  elif [[ -f $src ]]; then
    case $src in
      *.dsc)
        tb=$(orig_tarball_in "$(dirname "$src")")
        [[ -n $tb ]] || die "no mpich_*.orig.tar.* next to $src (download the source package completely)"
        extract_tests "$tb" ;;
      *.tar|*.tar.*|*.tgz) extract_tests "$src" ;;
      *) die "--source $src: not a directory, a .dsc or a tarball" ;;
    esac
  else
    die "--source $src: no such file or directory"
  fi
}

if [[ -n $source_arg ]]; then
  say "MPICH source: $source_arg"
  find_source "$source_arg"
else
  command -v apt-get >/dev/null || die "no --source given and apt-get is not available: pass --source PATH"
  mkdir -p "$workdir/download"
  if tb=$(orig_tarball_in "$workdir/download") && [[ -n $tb ]]; then
    say "MPICH source: reusing $tb"
  else
    say "MPICH source: apt-get source --download-only mpich (into $workdir/download)"
    if ! (cd "$workdir/download" && apt-get source --download-only mpich) >"$workdir/download/apt.log" 2>&1; then
      sed 's/^/    /' "$workdir/download/apt.log" | tail -8 >&2
      die "apt-get source failed (is a deb-src line configured and the mirror reachable? 'apt-get update' may help); or pass --source PATH"
    fi
    tb=$(orig_tarball_in "$workdir/download")
    [[ -n $tb ]] || die "apt-get source downloaded no mpich_*.orig.tar.* (see $workdir/download/apt.log)"
  fi
  extract_tests "$tb"
fi
version=$(sed -n 's/.*MPICH_VERSION_m4\],\[\([^]]*\)\].*/\1/p' "$tdir/version.m4" 2>/dev/null | head -1)
say "MPICH test suite: $tdir (MPICH ${version:-unknown version})"
[[ $version == "$EXPECTED_VERSION" ]] ||
  note "warning: this script was written for MPICH $EXPECTED_VERSION's tests, the source is ${version:-of an unknown version}"
for f in "${HARNESS_SOURCES[@]}"; do [[ -f $tdir/util/$f ]] || die "the test harness is incomplete: $tdir/util/$f missing"; done
[[ -f $tdir/coll/testlist.in ]] || die "$tdir/coll/testlist.in missing"

# ---------------------------------------------------------------------------------------------------------------
# ARShim's libraries: tested from a copy (a rebuild during the runs must not change them half-way)
snapshot() {  # SOURCE: copies it into $workdir/lib, sets snap to the copy's path
  local src=$1
  snap=$workdir/lib/$(basename "$src")
  mkdir -p "$workdir/lib"
  if ! { cp -f "$src" "$snap.tmp" && mv -f "$snap.tmp" "$snap"; }; then die "cannot copy $src into $workdir/lib"; fi
}
if (( needs_shim && ! list_only )); then
  for f in "${flavors[@]}"; do
    src=${shim_lib[$f]}
    snapshot "$src"
    shim_lib[$f]=$snap
    say "ARShim for $f: $src (built $(date -r "$src" '+%F %T'), sha256 $(sha256sum "$src" | cut -c1-12))"
  done
fi
if [[ -n $yield_lib ]] && (( ! list_only )); then snapshot "$yield_lib"; yield_lib=$snap; fi

# ---------------------------------------------------------------------------------------------------------------
# Tests: which programs, and the runs coll/testlist.in asks for
coll=$tdir/coll
in_testlist() { grep -qE "^[[:space:]]*$1([[:space:]]|$)" "$coll/testlist.in"; }
programs=()
if [[ -n $tests_arg ]]; then
  split_list "$tests_arg"
  for t in "${_list[@]}"; do
    t=${t%.c}
    [[ -f $coll/$t.c ]] || die "--tests: no test $t in $coll"
    in_testlist "$t" || die "--tests: $t is not in $coll/testlist.in (its ranks and arguments come from there)"
    programs+=("$t")
  done
else
  for f in "$coll"/*.c; do
    t=$(basename "$f" .c)
    grep -qE '(^|[^A-Za-z0-9_])MPI_Allreduce[[:space:]]*\(' "$f" || continue
    if ! in_testlist "$t"; then note "skipping $t: not in coll/testlist.in (GPU-only or not a standalone test)"; continue; fi
    programs+=("$t")
  done
  [[ ${#programs[@]} -gt 0 ]] || die "found no test in $coll that calls MPI_Allreduce"
fi

# Runs: "program|np|listed np|args|env" per distinct (program, np after the cap, args, env)
runs=()
declare -A seen_run
for t in "${programs[@]}"; do
  while read -r name np rest; do
    [[ $name == "$t" ]] || continue
    args=() envs=()
    for kv in $rest; do
      case $kv in
        arg=*) args+=("${kv#arg=}") ;;
        env=*) envs+=("${kv#env=}") ;;
      esac
    done
    listed=$np
    (( np > max_np )) && np=$max_np
    key="$name|$np|${args[*]:-}|${envs[*]:-}"
    [[ -n ${seen_run[$key]:-} ]] && continue
    seen_run[$key]=1
    runs+=("$name|$np|$listed|${args[*]:-}|${envs[*]:-}")
  done < <(sed 's/#.*//' "$coll/testlist.in")
done
run_label() {  # "program|np|listed|args|env" -> allred(-count=10) np=4
  local name np listed args envs
  IFS='|' read -r name np listed args envs <<<"$1"
  local l=$name
  [[ -n $args ]] && l+="($args)"
  echo "$l"
}
say "${#runs[@]} test runs from ${#programs[@]} programs (${programs[*]}); ranks capped at $max_np"
if (( list_only )); then
  for r in "${runs[@]}"; do
    IFS='|' read -r name np listed args envs <<<"$r"
    printf '  %-28s np=%s%s%s\n' "$(run_label "$r")" "$np" "$( ((listed != np)) && echo " (testlist: $listed)")" \
      "${envs:+ env: $envs}"
  done
  exit 0
fi

# ---------------------------------------------------------------------------------------------------------------
# Build: the harness once per flavor, then each program
conf_dir=$workdir/include
mkdir -p "$conf_dir"
# The subset of test/mpi/configure's mpitestconf.h that the harness and these tests read (Linux, gcc, x86-64).
conf_h=$conf_dir/mpitestconf.h
cat >"$conf_h.new" <<'EOF'
/* Written by tools/checks/mpich_coll_tests.sh in place of test/mpi/configure's output. */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_USLEEP 1
#define HAVE_STRDUP 1
#define STDC_HEADERS 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_DOUBLE 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_VOID_P 8
#define POINTERINT_t long
/* single-threaded tests only (util/mtest_single.c) */
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
#endif
EOF
if cmp -s "$conf_h.new" "$conf_h"; then rm -f "$conf_h.new"; else mv -f "$conf_h.new" "$conf_h"; fi
CFLAGS=(-O2 -g -I"$conf_dir" -I"$tdir/include" -I"$tdir/dtpools/include")

declare -A built  # flavor:program -> 1
for f in "${flavors[@]}"; do
  bdir=$workdir/build/$f
  mkdir -p "$bdir"
  blog=$bdir/build.log
  : >"$blog"
  t0=$(date +%s.%N)
  printf '==> building with mpicc.%s: harness' "$f"
  objs=() ncached=0
  for u in "${HARNESS_SOURCES[@]}"; do
    o=$bdir/${u%.c}.o
    objs+=("$o")
    if [[ -f $o && ! $tdir/util/$u -nt $o && ! $conf_h -nt $o ]]; then continue; fi
    echo "+ mpicc.$f ${CFLAGS[*]} -c $tdir/util/$u -o $o" >>"$blog"
    if ! "mpicc.$f" "${CFLAGS[@]}" -c "$tdir/util/$u" -o "$o" >>"$blog" 2>&1; then
      echo; tail -15 "$blog" | sed 's/^/    /' >&2
      die "the MTest harness ($u) does not build with mpicc.$f (log: $blog)"
    fi
  done
  nok=0
  for t in "${programs[@]}"; do
    printf ' %s' "$t"
    up_to_date=1
    for dep in "$coll/$t.c" "${objs[@]}"; do [[ -f $bdir/$t && ! $dep -nt $bdir/$t ]] || up_to_date=0; done
    if (( up_to_date )); then built[$f:$t]=1; nok=$((nok + 1)); ncached=$((ncached + 1)); continue; fi
    echo "+ mpicc.$f ${CFLAGS[*]} $coll/$t.c ${objs[*]} -lm -o $bdir/$t" >>"$blog"
    if "mpicc.$f" "${CFLAGS[@]}" "$coll/$t.c" "${objs[@]}" -lm -o "$bdir/$t" >>"$blog" 2>&1; then
      built[$f:$t]=1; nok=$((nok + 1))
    else
      printf ' (FAILED)'
    fi
  done
  printf ' -- %d of %d built%s in %s s\n' "$nok" "${#programs[@]}" "$( ((ncached)) && echo " ($ncached up to date)")" "$(since "$t0")"
  (( nok == ${#programs[@]} )) || note "build failures for $f: see $blog"
done

# ---------------------------------------------------------------------------------------------------------------
# Judging a run
# Known reduction bugs of the installed libraries (docs/library-bugs.md): "flavor@ops@types (regex)@description"
KNOWN_BUGS=(
  "mpich@MPI_MIN MPI_MAX@^MPI_(UNSIGNED(_CHAR|_SHORT|_LONG|_LONG_LONG)?|UINT(8|16|32|64)_T)\$@MPICH 4.0.x compares unsigned integers as signed in MIN/MAX (pmodels/mpich#6083)"
  "openmpi@MPI_SUM@^MPI_(U?INT(8|16)_T|SIGNED_CHAR|UNSIGNED_CHAR|SHORT|UNSIGNED_SHORT|INTEGER[12])\$@Open MPI 4.1.x op/avx saturates 8/16-bit integer SUM (ompi#8045)"
  "openmpi@MPI_MIN MPI_MAX@^MPI_UNSIGNED_LONG\$@Open MPI 4.1.2-4.1.4 compares MPI_UNSIGNED_LONG as signed in MIN/MAX (ompi#10525)"
  "openmpi@MPI_MIN MPI_MAX@^MPI_OFFSET\$@Open MPI 4.1.x op/avx compares MPI_OFFSET as unsigned in MIN/MAX"
)
known_bug_of() {  # FLAVOR LOG: prints the bug descriptions if every "Error for type T and op O" line is a known bug
  local f=$1 log=$2 pairs type op entry bf ops tre desc matched descs=()
  pairs=$(grep -oE 'Error for type [A-Za-z0-9_]+ and op [A-Z_]+' "$log" | awk '{print $4, $7}' | sort -u)
  [[ -n $pairs ]] || return 1
  while read -r type op; do
    matched=
    for entry in "${KNOWN_BUGS[@]}"; do
      IFS='@' read -r bf ops tre desc <<<"$entry"
      [[ $bf == "$f" && " $ops " == *" $op "* && $type =~ $tre ]] || continue
      matched=$desc
      break
    done
    [[ -n $matched ]] || return 1
    [[ " ${descs[*]} " == *"$matched"* ]] || descs+=("$matched")
  done <<<"$pairs"
  local list
  list=$(tr '\n' ',' <<<"$pairs" | sed 's/,$//; s/ /:/g; s/,/, /g')
  printf '%s [%s]' "$(IFS=';'; echo "${descs[*]}")" "$list"
}

judge() {  # FLAVOR CONFIG RC TIMED_OUT LOG -> prints the failure reasons ("" = pass)
  local f=$1 c=$2 rc=$3 timed_out=$4 log=$5 reasons=() n line
  if (( timed_out )); then reasons+=("no end after ${timeout_s} s: hang (stopped)")
  elif (( rc == 124 || rc == 137 )); then reasons+=("killed by the launcher's time limit, exit $rc")
  elif (( rc != 0 )); then reasons+=("exit status $rc"); fi
  if ! grep -q ' No Errors' "$log"; then
    line=$(grep -m1 -E 'Found [0-9]+ errors?' "$log" || true)
    reasons+=("no ' No Errors' line${line:+ ($(sed 's/^ *//' <<<"$line"))}")
  fi
  if [[ $c != native ]]; then
    if (( rc == 0 )) && ! grep -q '^arshim\[0\] summary:' "$log"; then
      reasons+=("no ARShim summary line (was ARShim preloaded?)")
    fi
    line=$(grep -m1 -E '^arshim\[0\] verify: .* [0-9]+ mismatches' "$log" || true)
    if [[ -n $line ]]; then
      n=$(sed -E 's/.* ([0-9]+) mismatches.*/\1/' <<<"$line")
      (( n == 0 )) || reasons+=("verify: $n mismatches")
    fi
    line=$(grep -m1 -E '^arshim\[0\] argument check: .* [0-9]+ with arguments that differ' "$log" || true)
    if [[ -n $line ]]; then
      n=$(sed -E 's/.* ([0-9]+) with arguments that differ.*/\1/' <<<"$line")
      (( n == 0 )) || reasons+=("argument check: $n calls with arguments that differ")
    fi
    n=$(grep -c 'MISMATCH' "$log")
    (( n == 0 )) || reasons+=("$n MISMATCH lines")
    n=$(grep -c 'arguments differ' "$log")
    (( n == 0 )) || reasons+=("$n 'arguments differ' lines")
  fi
  (IFS=';'; echo "${reasons[*]}" | sed 's/;/; /g')
}

excerpt() {  # LOG: the lines that tell what went wrong
  if (( verbose )); then sed 's/^/      | /' "$1"; return; fi
  { grep -vE '^(#|###|[0-9]+ )' "$1" |
      grep -E 'Error|error|MISMATCH|differ|Found [0-9]+ err|Abort|abort|signal|Segmentation|Killed|Terminated' |
      grep -v '^arshim\[0\] argument check:' | head -8
    grep -E '^arshim\[0\] (summary|verify|native because)' "$1"
    stack_summary "$1"; } | sed 's/^/      | /'
}

# The ranks of a run (descendants of ROOT_PID running NAME), their stacks to stdout (gdb).
dump_stacks() {  # ROOT_PID NAME
  local root=$1 comm=${2:0:15} p
  for p in $(ps -eo pid=,ppid=,comm= | awk -v root="$root" -v comm="$comm" '
               { parent[$1] = $2; name[$1] = $3 }
               END { for (p in parent) { q = p; n = 0
                       while (q != "" && q != root && q > 1 && n++ < 64) q = parent[q]
                       if (q == root && name[p] == comm) print p } }' | sort -n); do
    echo "### backtrace of rank process $p"
    timeout 30 gdb -p "$p" -batch -nx -ex 'bt 40' </dev/null 2>&1 | grep -E '^#[0-9]+ '
  done
}
# One line per rank from dump_stacks' output in LOG: "pid P: innermost < ... < outermost" (named frames only).
stack_summary() {  # LOG
  awk '/^### backtrace of rank process/ { if (line != "") print line; line = "stack of pid " $NF ":"; n = 0; next }
       /^#[0-9]+ / && line != "" {
         f = $0; sub(/^#[0-9]+ +/, "", f); sub(/^0x[0-9a-f]+ in /, "", f)
         gsub(/\(anonymous namespace\)/, "{anon}", f); sub(/ ?\(.*$/, "", f)
         if (f != "??" && n < 9) { line = line (n ? " < " : " ") f; n++ } }
       END { if (line != "") print line }' "$1"
}
# What ARShim did in a run: "paths: native=580 multileader=768; verify 768 calls"
arshim_digest() {  # LOG
  awk '/^arshim\[0\] path +calls/ { t = 1; next }
       t && /^arshim\[0\] [a-z_-]+ +[0-9]+ / { p = p (p ? " " : "") $2 "=" $3; next }
       t { t = 0 }
       /^arshim\[0\] verify: [0-9]+ calls compared/ { v = "; verified " $3 " calls" }
       END { if (p != "") printf "paths: %s%s", p, v }' "$1"
}

# ---------------------------------------------------------------------------------------------------------------
# Runs
config_vars() {  # CONFIG NP -> the ARShim settings of the configuration, one per line ("-" = not applicable)
  case $1 in
    native|default) ;;
    pipelined-1K) printf '%s\n' ARSHIM_PATH=pipelined ARSHIM_SEGMENT_BYTES=1K ;;
    multileader) echo ARSHIM_PATH=multileader ;;
    multileader-vppn2)
      if (( $2 >= 4 || $2 % 2 == 0 )); then printf '%s\n' ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=2; else echo -; fi ;;
  esac
}

declare -A cell   # "label|flavor|config" -> ok / FAIL / bug / n/a / build
declare -A run_np
n_ok=0 n_fail=0 n_bug=0 n_skip=0
failures=()
total_runs=0
for r in "${runs[@]}"; do
  for f in "${flavors[@]}"; do for c in "${configs[@]}"; do total_runs=$((total_runs + 1)); done; done
done
say "running $total_runs runs one at a time (time limit ${timeout_s} s each); logs in $workdir/logs"
timeout_flag=$workdir/logs/.timed-out
mkdir -p "$workdir/logs"
i=0
for r in "${runs[@]}"; do
  IFS='|' read -r name np listed args envs <<<"$r"
  label=$(run_label "$r")
  run_np[$label]=$np
  read -r -a argv <<<"$args"
  read -r -a envv <<<"$envs"
  for f in "${flavors[@]}"; do
    mkdir -p "$workdir/logs/$f"
    for c in "${configs[@]}"; do
      i=$((i + 1))
      tag=$(printf '[%3d/%d] %-22s np=%-2s %-7s %-17s' "$i" "$total_runs" "$label" "$np" "$f" "$c")
      what="$label np=$np $f $c"
      if [[ -z ${built[$f:$name]:-} ]]; then
        echo "FAIL $tag  not built (see $workdir/build/$f/build.log)"
        cell[$label|$f|$c]=build; n_fail=$((n_fail + 1)); failures+=("$what: not built"); continue
      fi
      mapfile -t cvars < <(config_vars "$c" "$np")
      if [[ ${cvars[0]:-} == - ]]; then
        echo "skip $tag  (needs np even or >= 4)"
        cell[$label|$f|$c]=n/a; n_skip=$((n_skip + 1)); continue
      fi
      vars=("${envv[@]}")
      lib=none
      if [[ $c != native ]]; then lib=${shim_lib[$f]}; vars+=("${cvars[@]}" "${CHECK_VARS[@]}" "${extra_vars[@]}"); fi
      log=$workdir/logs/$f/${label//[^A-Za-z0-9_.=-]/_}.$c.log
      cmd=("$mpirun_sh" "$f" "$np" "$lib" "${vars[@]}" -- "./$name" "${argv[@]}")
      echo "# $(printf '%q ' "${cmd[@]}")" >"$log"
      t0=$(date +%s.%N)
      rm -f "$timeout_flag"
      # mpirun.sh's own limit is the backstop; the watchdog stops a hung run first (after taking the ranks' stacks)
      (cd "$workdir/build/$f" &&
         ARSHIM_TEST_TIMEOUT=$((timeout_s + 60)) ARSHIM_TEST_YIELD_LIB=$yield_lib exec "${cmd[@]}") \
        </dev/null >>"$log" 2>&1 &
      run_pid=$!
      (
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        sleep "$timeout_s" & sp=$!
        wait "$sp"
        touch "$timeout_flag"
        echo "### $prog: no end after $timeout_s s; stopping the run" >>"$log"
        (( backtraces )) && command -v gdb >/dev/null && dump_stacks "$run_pid" "$name" >>"$log" 2>&1
        kill -TERM "$run_pid" 2>/dev/null
      ) &
      wd_pid=$!
      wait "$run_pid"
      rc=$?
      kill -TERM "$wd_pid" 2>/dev/null; wait "$wd_pid" 2>/dev/null
      run_pid='' wd_pid=''
      timed_out=0
      [[ -f $timeout_flag ]] && timed_out=1
      dt=$(printf '%.1f' "$(since "$t0")")
      why=$(judge "$f" "$c" "$rc" "$timed_out" "$log")
      if [[ -z $why ]]; then
        d=
        [[ $c != native ]] && d=$(arshim_digest "$log")
        n=$(grep -cE '^arshim\[[0-9]+\] (warning|error):' "$log")
        (( n > 0 )) && d+="; $n ARShim warning/error lines (see log)"
        echo "ok   $tag  ${dt}s${d:+  $d}"
        cell[$label|$f|$c]=ok; n_ok=$((n_ok + 1))
        continue
      fi
      if [[ $c == native ]] && (( ! timed_out )) && bug=$(known_bug_of "$f" "$log"); then
        echo "FAIL $tag  ${dt}s  known library bug, not ARShim: $bug"
        cell[$label|$f|$c]=bug; n_bug=$((n_bug + 1))
        failures+=("$what: known library bug: $bug (log: $log)")
      else
        echo "FAIL $tag  ${dt}s  $why"
        cell[$label|$f|$c]=FAIL; n_fail=$((n_fail + 1))
        failures+=("$what: $why (log: $log)")
      fi
      excerpt "$log"
      echo "      log: $log"
    done
  done
done

# ---------------------------------------------------------------------------------------------------------------
# Tally
elapsed=$(( $(date +%s) - t_start ))
echo
echo "Tally (ok = passed; FAIL = failed; bug = native failure explained by a known MPI library bug; n/a = not applicable)"
for f in "${flavors[@]}"; do
  echo
  printf '  %-24s %-3s' "$f" np
  for c in "${configs[@]}"; do printf ' %-17s' "$c"; done
  echo
  for r in "${runs[@]}"; do
    label=$(run_label "$r")
    printf '  %-24s %-3s' "$label" "${run_np[$label]}"
    for c in "${configs[@]}"; do printf ' %-17s' "${cell[$label|$f|$c]:-?}"; done
    echo
  done
done
echo
printf 'Total: %d runs: %d ok, %d FAIL, %d known library bug (native), %d not applicable; %d min %02d s\n' \
  "$total_runs" "$n_ok" "$n_fail" "$n_bug" "$n_skip" $((elapsed / 60)) $((elapsed % 60))
if (( n_fail + n_bug > 0 )); then
  echo "Failures:"
  printf '  %s\n' "${failures[@]}"
  keep_workdir=1
fi
if (( n_fail > 0 )); then exit 1; fi
if (( n_bug > 0 )); then exit 3; fi
exit 0
