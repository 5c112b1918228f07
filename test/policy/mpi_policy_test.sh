#!/usr/bin/env bash
# The policy inside the library, under MPI: a policy file routes each size to the path it names (replace and
# prepend), ranks launched with different ARSHIM_* settings still decide alike (rank 0's settings win), bad files
# and values give one line naming the source and keep results right, ARSHIM_STRICT=1 aborts with that line.
#
#   mpi_policy_test.sh FLAVOR SHIM_LIB CHECK_POLICY_PATHS
set -uo pipefail
flavor=$1 shim=$2 prog=$3
here=$(cd "$(dirname "$0")" && pwd)
mpirun_sh=$here/../mpi/mpirun.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0
# Scrub the caller's ARSHIM_* settings: each case sets its own.
# The harness's ARSHIM_TEST_YIELD_LIB is kept for the launch lines only (a rank would warn about an unknown variable).
yield_lib=${ARSHIM_TEST_YIELD_LIB:-}
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done

check() {  # check NAME WANT_RC PATTERN OUTPUT RC: the run's exit code and one line of its output
  local name=$1 want_rc=$2 pattern=$3 out=$4 rc=$5
  if [[ $rc -ne $want_rc ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want_rc), no line matching '$pattern' in:"
    sed 's/^/    /' <<<"$out"
    fail=1
  else
    echo "ok: $name"
  fi
}
run() {  # run VAR=VALUE... -- ARGS: two ranks, same settings
  local out
  out=$(ARSHIM_TEST_YIELD_LIB=$yield_lib "$mpirun_sh" "$flavor" 2 "$shim" "$@" 2>&1)
  local rc=$?
  printf '%s\n%s' "$rc" "$out"
}

cat >"$work/paths.toml" <<'TOML'
version = 1

[[rule]]
name = "small: the library"
bytes = "..1K"
path = "native"

[[rule]]
name = "medium: segmented"
bytes = "1K..64K"
path = "pipelined"
segment_bytes = "1K"
window = 4

[[rule]]
name = "large: shared memory"
bytes = "64K.."
path = "multileader"
leaders = 2
TOML
result=$(run ARSHIM_POLICY="$work/paths.toml" -- "$prog" 512:native 8192:pipelined 65536:multileader 1048576:multileader)
check "policy file routes each size to its path" 0 "2 ranks, 4 calls, 0 failures" "${result#*$'\n'}" "${result%%$'\n'*}"

# What the built-in table does with 16 B at np 2 on one node: the node path under both MPIs (policy/default.toml).
small_builtin=latency

cat >"$work/prepend.toml" <<'TOML'
version = 1

[[rule]]
bytes = "8K..16K"
path = "pipelined"
TOML
result=$(run ARSHIM_POLICY="$work/prepend.toml" ARSHIM_POLICY_MODE=prepend -- "$prog" "16:$small_builtin" 8192:pipelined 8388608:multileader)
check "prepend: the file's rules first, then the built-in ones" 0 "2 ranks, 3 calls, 0 failures" "${result#*$'\n'}" "${result%%$'\n'*}"

cat >"$work/broken.toml" <<'TOML'
version = 1

[[rule]]
path = "pipelined"
segmnts = 4
TOML
result=$(run ARSHIM_POLICY="$work/broken.toml" -- "$prog" "16:$small_builtin" 8388608:multileader)
out=${result#*$'\n'} rc=${result%%$'\n'*}
check "broken file: built-in policy, correct results" 0 "2 ranks, 2 calls, 0 failures" "$out" "$rc"
check "broken file: one line naming file:line and what is allowed" 0 \
  "^arshim\[0\] warning: .*broken.toml:5: rule 1: unknown key 'segmnts' .*allowed: " "$out" "$rc"
[[ $(grep -c "broken.toml:5" <<<"$out") -eq 1 ]] || { echo "FAIL broken file: the problem is not printed exactly once"; fail=1; }

result=$(run ARSHIM_PATH=pipelined ARSHIM_SEGMENT_BYTES=12Q -- "$prog" 8192:pipelined)
out=${result#*$'\n'} rc=${result%%$'\n'*}
check "bad env value: one line naming the variable and the allowed values" 0 \
  '^arshim\[0\] warning: ARSHIM_SEGMENT_BYTES="12Q": .*using the default' "$out" "$rc"
check "bad env value: results still correct" 0 "0 failures" "$out" "$rc"

result=$(run ARSHIM_STRICT=1 ARSHIM_SEGMENT_BYTES=12Q -- "$prog" 512:native)
out=${result#*$'\n'} rc=${result%%$'\n'*}
[[ $rc -ne 0 ]] && rc=1
check "ARSHIM_STRICT=1: the same line, then the job aborts" 1 'ARSHIM_SEGMENT_BYTES="12Q".*ARSHIM_STRICT=1' "$out" "$rc"

# Ranks launched with different settings (as a careless job script would do, e.g. an MPMD launch): rank 1 asks for
# multileader and a missing policy file, rank 0 for pipelined. Rank 0's settings are broadcast at MPI_Init, so
# both ranks take the pipelined path, and nobody reads the missing file. Each rank gets its own environment from
# test/support/per_rank.sh, not an MPMD line (Debian 13's mpirun.openmpi crashes on those, open-mpi/ompi#13303).
unset ARSHIM_TEST_YIELD_LIB
per_rank=$here/../support/per_rank.sh
preload=LD_PRELOAD=$shim${yield_lib:+:$yield_lib}
rank_settings=("$preload,ARSHIM_PATH=pipelined"
               "$preload,ARSHIM_PATH=multileader,ARSHIM_POLICY=/nonexistent/policy.toml")
case $flavor in
  openmpi)
    out=$(timeout -k 10 120 mpirun.openmpi --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader \
            --bind-to none -n 2 "$per_rank" "${rank_settings[@]}" -- "$prog" 512:pipelined 1048576:pipelined 2>&1) ;;
  mpich)
    out=$(timeout -k 10 120 mpirun.mpich -n 2 "$per_rank" "${rank_settings[@]}" -- \
            "$prog" 512:pipelined 1048576:pipelined 2>&1) ;;
esac
rc=$?
check "ranks with different settings follow rank 0's" 0 "2 ranks, 2 calls, 0 failures" "$out" "$rc"
if grep -q "nonexistent" <<<"$out"; then echo "FAIL: a rank other than 0 read its own ARSHIM_POLICY"; fail=1; fi
exit $fail
