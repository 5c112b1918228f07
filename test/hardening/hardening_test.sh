#!/usr/bin/env bash
# Hostile and careless inputs, tried from outside (issue: hardening): each case runs an ordinary MPI program with
# ARShim preloaded and checks that results stay right, that the one-line message names the source, and that
# nothing outside the program's own output is touched.
#
#   hardening_test.sh FLAVOR SHIM_LIB CHECK_EDGE_CALLS MARK_LIB [UBSAN_SHIM_LIB]
set -uo pipefail
flavor=$1 shim=$2 prog=$3 mark_lib=$4 ubsan_shim=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
mpirun_sh=$here/../mpi/mpirun.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
yield_lib=${ARSHIM_TEST_YIELD_LIB:-}
fake_sharp=${ARSHIM_TEST_FAKE_SHARP:-}   # the SHARP test double (test/sharp), for case 12
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
fail=0

ok() { echo "ok: $1"; }
bad() { echo "FAIL $1"; [[ -n ${2:-} ]] && sed 's/^/    /' <<<"$2" | head -40; fail=1; }
# run [VAR=VALUE ...] -- ARGS: two ranks with ARShim; sets $out, $rc and $secs
run() {
  local start=$SECONDS
  out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib ARSHIM_TEST_TIMEOUT=120 "$mpirun_sh" "$flavor" 2 "$shim" "$@" 2>&1)
  rc=$? secs=$((SECONDS - start))
}
expect() {  # expect NAME PATTERN: the last run succeeded, its program checks held, and a line matches PATTERN
  local name=$1 pattern=$2
  if [[ $rc -ne 0 ]] || ! grep -q ": ok (0 failures)" <<<"$out"; then bad "$name: exit $rc or wrong results" "$out"
  elif [[ -n $pattern ]] && ! grep -qE -- "$pattern" <<<"$out"; then bad "$name: no line matching '$pattern'" "$out"
  else ok "$name (${secs} s)"; fi
}

# ---- 1, 2. the statistics log never replaces or writes through anything but its own regular file -------------
if [[ $(id -u) -eq 0 ]]; then
  mknod "$work/null" c 1 3 && chmod 666 "$work/null"
  run ARSHIM_STATS="$work/null" -- "$prog" sum
  expect "ARSHIM_STATS names a character device: refused" 'ARSHIM_STATS=.*/null: is a character device'
  [[ -c $work/null ]] || bad "the device node at ARSHIM_STATS was replaced"
fi
echo precious >"$work/victim"
ln -s "$work/victim" "$work/link.json"
run ARSHIM_STATS="$work/link.json" -- "$prog" sum
expect "ARSHIM_STATS names a symlink: refused" 'ARSHIM_STATS=.*link.json: is a symbolic link'
[[ $(cat "$work/victim") == precious && -L $work/link.json ]] || bad "the symlink's target was written"
# Followed, the link's target must still be absent, empty or an earlier log: 'precious' is left alone (issue 56 item 7).
run ARSHIM_STATS="$work/link.json" ARSHIM_STATS_FOLLOW_SYMLINKS=1 -- "$prog" sum
expect "ARSHIM_STATS_FOLLOW_SYMLINKS=1 leaves a data file alone" 'ARSHIM_STATS=.*link.json: is a file that is not an ARShim statistics log'
[[ $(cat "$work/victim") == precious ]] || bad "ARSHIM_STATS_FOLLOW_SYMLINKS=1: a data file behind the link was replaced"
: >"$work/victim"
run ARSHIM_STATS="$work/link.json" ARSHIM_STATS_FOLLOW_SYMLINKS=1 -- "$prog" sum
expect "ARSHIM_STATS_FOLLOW_SYMLINKS=1 writes through the link" ''
grep -q '"schema"' "$work/victim" || bad "ARSHIM_STATS_FOLLOW_SYMLINKS=1: the link's target does not hold the log"
ls -a "$work" | grep -q '^\.link\|^\.victim\|tmp' && bad "a temporary file was left behind: $(ls -a "$work")"

# ---- 3, 4, 5. policy input: bounded, non-blocking, regular files only ----------------------------------------
python3 -c 'print("version = 1\n[[rule]]\npath = \"native\"\n" + ".".join(["a"] * 40000) + " = 1")' >"$work/deep.toml"
run ARSHIM_POLICY="$work/deep.toml" -- "$prog" sum
expect "40 000-part dotted key: rejected before parsing" 'deep.toml:4: a key with more than 16 dotted parts'
python3 -c 'print("version = 1\na = " + "[" * 5000 + "]" * 5000)' >"$work/nested.toml"
run ARSHIM_POLICY="$work/nested.toml" -- "$prog" sum
expect "5 000 nested arrays: rejected before parsing" 'nested.toml:2: arrays or inline tables nested more than'
mkfifo "$work/fifo.toml"
run ARSHIM_POLICY="$work/fifo.toml" -- "$prog" sum
expect "a FIFO as the policy file: no hang" 'ARSHIM_POLICY=.*fifo.toml: is a FIFO, not a regular file'
run ARSHIM_POLICY=/dev/zero -- "$prog" sum
expect "/dev/zero as the policy file" 'ARSHIM_POLICY=/dev/zero: is a character device'
head -c $((50 << 20)) /dev/zero | tr '\0' '#' >"$work/big.toml"
run ARSHIM_POLICY="$work/big.toml" -- "$prog" sum
expect "a 50 MB policy file" 'big.toml: is 52428800 bytes, more than the limit of 1048576 \(ARSHIM_POLICY_MAX_BYTES\)'
python3 -c '
print("version = 1")
for i in range(20000): print("[[rule]]\nbytes = \"%d..\"\npath = \"native\"" % (1 << (i % 40)))' >"$work/rules.toml"
run ARSHIM_POLICY="$work/rules.toml" -- "$prog" sum
expect "20 000 rules: rejected at once" 'rules.toml:.*more than 4096 \[\[rule\]\] tables'
[[ $secs -le 30 ]] || bad "20 000 rules took $secs s"
python3 -c '
print("version = 1")
for i in range(4000): print("[[rule]]\nbytes = \"%d..\"\nppn = %d\npath = \"native\"" % (1 << (i % 40), i % 50 + 1))' >"$work/rules4k.toml"
run ARSHIM_POLICY="$work/rules4k.toml" -- "$prog" sum
expect "4 000 rules: accepted, reachability check bounded" ''
[[ $secs -le 30 ]] || bad "4 000 rules took $secs s"

# ---- 6. NULL buffers go to the library on every path (MPICH reports MPI_ERR_BUFFER; Open MPI 4.1.4's own
# allreduce dereferences them, so there is no error to match there) -------------------------------------------
if [[ $flavor == mpich ]]; then
  for path in auto native pipelined multileader sharp reproducible; do
    run ARSHIM_PATH=$path -- "$prog" null-buffer
    expect "NULL buffer, ARSHIM_PATH=$path: the library's error, communicator usable" ''
  done
fi

# ---- 7. shared window layout: UBSan (alignment) clean under Open MPI ----------------------------------------
if [[ -n $ubsan_shim ]]; then
  start=$SECONDS
  out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib "$mpirun_sh" "$flavor" 2 "$ubsan_shim" ARSHIM_PATH=multileader -- "$prog" sum 2>&1)
  rc=$? secs=$((SECONDS - start))
  if grep -q "runtime error" <<<"$out"; then bad "UBSan: misaligned access in the node window" "$out"
  else expect "UBSan (alignment) clean on the multileader path" ''; fi
fi

# ---- 8. values echoed in messages are escaped and cut ---------------------------------------------------------
run "ARSHIM_PATH=bogus$(printf '\033')[31m" -- "$prog" sum
expect "an escape sequence in a value is printed escaped" 'ARSHIM_PATH="bogus\\x1b\[31m"'
run "ARSHIM_SEGMENT_BYTES=$(head -c 100000 /dev/zero | tr '\0' 'x')" -- "$prog" sum
expect "a 100 KB value: one short line" 'ARSHIM_SEGMENT_BYTES="x+\.\.\."'
longest=$(awk '{ if (length($0) > n) n = length($0) } END { print n }' <<<"$out")
[[ $longest -lt 1000 ]] || bad "a 100 KB value gave a $longest-character line"
if [[ $flavor == openmpi ]]; then  # Hydra cannot forward a newline in a value; Open MPI's mpirun can
  run $'ARSHIM_LOG=bogus\narshim[0] error: forged' -- "$prog" sum
  expect "a newline in a value is printed escaped" 'ARSHIM_LOG="bogus\\narshim\[0\] error: forged"'
  grep -q '^arshim\[0\] error: forged' <<<"$out" && bad "a newline in a value forged a line" "$out"
fi

# ---- 8b. every ARSHIM_* variable at once holding a newline that would forge a line and escape sequences (clear the
# screen, set the window title): no ESC, BEL or forged line anywhere in the output, at every log level (issue 41).
# The values are set inside each rank by a wrapper (neither launcher forwards a newline in a value reliably), and
# ARSHIM_STATS names a file whose name holds them too (a legal file name: the log is written there).
names=$(strings "$shim" | grep -xE 'ARSHIM_[A-Z_]+' | sort -u)
[[ $(wc -l <<<"$names") -ge 30 ]] || bad "the option names could not be read from $shim" "$names"
hostile=$'x\narshim[7] error: FORGED\e[2J\e]0;owned\a'
wrapper=$work/hostile_env.sh
{
  echo '#!/usr/bin/env bash'
  for name in $names; do printf 'export %s=%q\n' "$name" "$hostile"; done
  printf 'export ARSHIM_STATS=%q\n' "$work/s"$'\n'"arshim[7] error: FORGED"$'\e[2J.json'
  echo '[[ -n ${LEVEL:-} ]] && export ARSHIM_LOG=$LEVEL ARSHIM_STATS_SUMMARY=1'
  echo 'exec "$@"'
} >"$wrapper"
chmod +x "$wrapper"
for level in "" info debug; do
  run "LEVEL=$level" -- "$wrapper" "$prog" sum
  if [[ $rc -ne 0 ]] || ! grep -q ": ok (0 failures)" <<<"$out"; then
    bad "every ARSHIM_* variable hostile, ARSHIM_LOG=${level:-hostile}: exit $rc or wrong results" "$out"
  elif grep -q $'[\e\a]' <<<"$out" || grep -q '^arshim\[7\] error: FORGED' <<<"$out"; then
    bad "every ARSHIM_* variable hostile, ARSHIM_LOG=${level:-hostile}: an ESC, a BEL or a forged line reached the output" \
      "$(grep -n $'[\e\a]\|^arshim\[7\]' <<<"$out" | cat -v)"
  elif [[ -n $level ]] && ! grep -q 'FORGED' <<<"$out"; then
    bad "every ARSHIM_* variable hostile, ARSHIM_LOG=$level: the values were not echoed at all (the test tests nothing)" "$out"
  else
    ok "every ARSHIM_* variable hostile, ARSHIM_LOG=${level:-hostile}: $(grep -c . <<<"$out") lines, none forged or raw"
  fi
done

# ---- 9. ARShim preloaded on some ranks only: no hang, a warning naming the ranks, ARShim off everywhere ------
# The start-up check is a tree of fan-out 4 rooted at rank 0 (shim/core/handshake_tree.h): with 6 ranks, rank 1 is
# the parent of rank 5, so a missing rank 1 is an inner node (rank 5 gives up on it, ranks 2-4 hear "disabled" from
# rank 0) and a missing rank 5 is reported to rank 0 through rank 1.
unset ARSHIM_TEST_YIELD_LIB
mpmd() {  # mpmd PRELOAD...: "shim" or "none" for each rank, one rank per word (test/support/per_rank.sh gives each
  # rank its own preload, as an MPMD line would: Debian 13's mpirun.openmpi crashes on MPMD lines, ompi#13303).
  # Every rank asks for the statistics log and its trace in $work/mpmd (the data the cases are decided on).
  local cmd=() settings=() start=$SECONDS
  case $flavor in
    openmpi) cmd=(mpirun.openmpi --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --bind-to none) ;;
    mpich) cmd=(mpirun.mpich) ;;
  esac
  rm -rf "$work/mpmd" && mkdir "$work/mpmd"
  for p in "$@"; do
    local e="ARSHIM_INIT_TIMEOUT=2,ARSHIM_STATS=$work/mpmd/stats.json,ARSHIM_TRACE=$work/mpmd/trace-%r.jsonl"
    if [[ $p == shim ]]; then e+=",LD_PRELOAD=$shim${yield_lib:+:$yield_lib}"
    elif [[ -n $yield_lib ]]; then e+=",LD_PRELOAD=$yield_lib"; fi
    settings+=("$e")
  done
  out=$(timeout -k 10 180 "${cmd[@]}" -n $# "$here/../support/per_rank.sh" "${settings[@]}" -- "$prog" sum 2>&1)
  rc=$? secs=$((SECONDS - start))
}
# startup_data NAME EXPECTED_JSON: what the start-up check recorded (rank 0's statistics log, every rank's trace)
# is what the case expects: which ranks lacked ARShim, counts, parents (test/support/startup_facts.py).
startup_data() {
  local problems
  if problems=$(python3 "$here/../support/startup_facts.py" "$work/mpmd" \
                "$here/../../tools/report/arshim-stats-1.schema.json" "$2" 2>&1); then ok "$1: the log and the traces say so"
  else bad "$1: the start-up check's data" "$problems"; fi
}
# The warnings the user reads: one line each, by the ranks that know (which ranks lacked ARShim is decided on the
# data above, not on their wording). warned NAME RANK... : the ranks that printed a warning line, once each.
warned() {
  local name=$1 r total
  shift
  total=$(grep -c "^arshim\[[0-9]*\] warning: " <<<"$out")
  for r in "$@"; do
    if [[ $(grep -c "^arshim\[$r\] warning: " <<<"$out") -ne 1 ]]; then
      bad "$name: rank $r printed no warning line, or more than one" "$out"
      return
    fi
  done
  if (( total == $# )); then ok "$name: ${*:+one warning line each from ranks }${*:-no warning line}"
  else bad "$name: $total warning lines, want $# (from ranks $*)" "$out"; fi
}
# The job finished with right sums: had ARShim stayed on at some ranks, their calls would take ARShim's node paths
# while the others call the library, and the job would hang (timeout) or sum wrongly.
mpmd shim none
expect "ARShim on rank 0 only: finishes" ''
warned "ARShim on rank 0 only" 0
startup_data "ARShim on rank 0 only: rank 0 names rank 1" '{"log": {"np": 2, "calls": 0, "checked": true,
  "all_loaded": false, "ranks_without_arshim": [1], "ranks_without_arshim_count": 1, "ranks_other_build": [],
  "ranks_other_build_count": 0}, "traces": {"0": {"all_loaded": false, "ranks_without_arshim": [1],
  "ranks_without_arshim_count": 1}}}'
# MPICH 4.2 (Debian 13) cannot cancel a sent message and aborts MPI_Finalize when MPI_COMM_WORLD holds one nobody
# received: a rank with ARShim whose parent lacks it leaves its report there (README "Settings"). ARShim was off
# everywhere and its warnings were printed; only that abort, named by MPICH, is let through. The abort may end the job
# before rank 0 prints its sums or writes the statistics log and traces (MPI_Finalize, a race): the sums are checked
# where they were printed, the start-up check's data is not checked after such an abort (said in a note).
library_kept_the_report() {
  kept_report=0 sums_printed=1
  if [[ $flavor == mpich && $rc -ne 0 ]] && grep -qE "has [0-9]+ unmatched message" <<<"$out"; then
    kept_report=1
    echo "note: $1: MPICH aborted MPI_Finalize over the start-up check's unreceived report (README \"Settings\");" \
         "the start-up check's data is not checked"
    if grep -q ": ok (0 failures)" <<<"$out"; then rc=0
    else sums_printed=0; echo "note: $1: the abort came before the sums were printed"; fi
  fi
}
mpmd none shim
library_kept_the_report "ARShim on rank 1 only"
warned "ARShim on rank 1 only" 1
(( sums_printed )) && expect "ARShim on rank 1 only: finishes" ''
if (( ! kept_report )); then
startup_data "ARShim on rank 1 only: rank 1's parent, rank 0, did not answer" '{"log": null,
  "traces": {"1": {"checked": true, "all_loaded": false, "parent": 0, "parent_answered": false}}}'
fi
mpmd shim none shim shim shim shim
library_kept_the_report "6 ranks, not on rank 1"
warned "6 ranks, not on rank 1" 0 5
(( sums_printed )) && expect "6 ranks, not on rank 1 (an inner node of the check's tree): finishes" ''
if (( ! kept_report )); then
startup_data "6 ranks, not on rank 1: rank 0 names it, its child rank 5 gave up on it" '{"log": {"np": 6,
  "all_loaded": false, "ranks_without_arshim": [1], "ranks_without_arshim_count": 1, "ranks_other_build_count": 0},
  "traces": {"0": {"all_loaded": false, "ranks_without_arshim": [1]},
             "2": {"all_loaded": false, "parent": 0, "parent_answered": true},
             "3": {"all_loaded": false, "parent": 0, "parent_answered": true},
             "4": {"all_loaded": false, "parent": 0, "parent_answered": true},
             "5": {"all_loaded": false, "parent": 1, "parent_answered": false}}}'
fi
mpmd shim shim shim shim none none
expect "6 ranks, not on ranks 4 and 5 (a leaf under rank 0 and one under rank 1): finishes" ''
warned "6 ranks, not on 4 and 5" 0
startup_data "6 ranks, not on ranks 4 and 5: rank 0 names both" '{"log": {"np": 6, "all_loaded": false,
  "ranks_without_arshim": [4, 5], "ranks_without_arshim_count": 2, "ranks_other_build_count": 0},
  "traces": {"0": {"all_loaded": false, "ranks_without_arshim": [4, 5], "ranks_without_arshim_count": 2},
             "1": {"all_loaded": false, "parent": 0, "parent_answered": true},
             "2": {"all_loaded": false, "parent": 0, "parent_answered": true},
             "3": {"all_loaded": false, "parent": 0, "parent_answered": true}}}'
# The control: every rank with ARShim, the same data says so (and ARShim counted the calls).
mpmd shim shim
expect "ARShim on both ranks (control): finishes" ''
startup_data "ARShim on both ranks (control)" '{"log": {"np": 2, "all_loaded": true, "ranks_without_arshim": [],
  "ranks_without_arshim_count": 0, "ranks_other_build_count": 0},
  "traces": {"0": {"all_loaded": true, "ranks_without_arshim_count": 0},
             "1": {"all_loaded": true, "parent": 0, "parent_answered": true}}}'
warned "ARShim on both ranks (control)"

# ---- 10. ARSHIM_SHARP=auto loads the library only when a call can be routed to SHARP ------------------------
export ARSHIM_TEST_YIELD_LIB=$yield_lib
rm -f "$work/mark"
run ARSHIM_SHARP_LIB="$mark_lib" MARK_ON_LOAD_FILE="$work/mark" -- "$prog" sum
expect "ARSHIM_SHARP=auto without sharp rules" ''
[[ -e $work/mark ]] && bad "ARSHIM_SHARP=auto loaded the SHARP library although no call can be routed to it"
run ARSHIM_SHARP_LIB="$mark_lib" MARK_ON_LOAD_FILE="$work/mark" ARSHIM_PATH=sharp -- "$prog" sum
expect "ARSHIM_SHARP=auto with ARSHIM_PATH=sharp (control)" ''
[[ $(wc -l <"$work/mark" 2>/dev/null || echo 0) -eq 2 ]] || bad "ARSHIM_PATH=sharp: the SHARP library was not loaded on both ranks"

# ---- 11. communicator churn: contexts are built only for communicators that make enough calls ---------------
cat >"$work/ml.toml" <<'TOML'
version = 1

[[rule]]
path = "multileader"
TOML
# (ARSHIM_TUNE=off: the program counts native calls exactly; online tuning would try the library on warm ones)
run ARSHIM_POLICY="$work/ml.toml" ARSHIM_TUNE=off -- "$prog" cold 8 65536
expect "a new communicator's first 7 calls go native, the rest take the policy's path" ''
run ARSHIM_POLICY="$work/ml.toml" ARSHIM_TUNE=off ARSHIM_CONTEXT_AFTER=1 -- "$prog" cold 1 65536
expect "ARSHIM_CONTEXT_AFTER=1: a path from the first call" ''
run -- "$prog" churn 300
expect "300 dup/allreduce/free cycles, default policy" ''
run ARSHIM_PATH=multileader -- "$prog" churn 100
expect "100 dup/allreduce/free cycles, multileader forced" ''

# ---- 12. ARShim's private communicators never run the user's attribute callbacks -------------------------------
# (an MPI_Comm_dup of the user's communicator would call their copy callback, and its free their delete callback)
# One rank on each of 3 virtual nodes: the multi-leader path runs the whole call round its ring on a private
# communicator, and the SHARP path's direct level makes its own.
run3() {
  local start=$SECONDS
  out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib ARSHIM_TEST_TIMEOUT=120 "$mpirun_sh" "$flavor" 3 "$shim" "$@" 2>&1)
  rc=$? secs=$((SECONDS - start))
}
run3 ARSHIM_PATH=multileader ARSHIM_VIRTUAL_PPN=1 -- "$prog" attributes multileader
expect "user attribute callbacks: the ring over one rank per node" ''
if [[ -n $fake_sharp ]]; then
  run3 ARSHIM_PATH=sharp ARSHIM_SHARP=on ARSHIM_SHARP_LIB="$fake_sharp" ARSHIM_VIRTUAL_PPN=1 -- "$prog" attributes sharp
  expect "user attribute callbacks: SHARP's direct level" ''
  grep -q MISUSE <<<"$out" && bad "the SHARP test double reported a misuse of the API" "$out"
fi
exit $fail
