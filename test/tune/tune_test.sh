#!/usr/bin/env bash
# tune_test.sh FLAVOR SHIM TEST_LIB CHECK_TUNE ARSHIM_POLICY_TOOL: see meson.build beside this file.
set -uo pipefail
flavor=$1 shim=$2 test_lib=$3 prog=$4 policy_tool=$5
mpirun_sh=$(cd "$(dirname "$0")" && pwd)/../mpi/mpirun.sh
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say_fail() { echo "FAIL $1"; sed 's/^/    /' <<<"$2" | head -40; fail=1; }
run() { ARSHIM_TEST_TIMEOUT=${TIMEOUT:-180} "$mpirun_sh" "$flavor" "$@" 2>&1; }

# A policy file of one rule that matches every call: one_rule_policy FILE NAME 'key = value'...
one_rule_policy() {
  local file=$1 name=$2
  shift 2
  printf 'version = 1\n[[rule]]\nname = "%s"\n' "$name" >"$file"
  printf '%s\n' "$@" >>"$file"
}

# A deliberately bad policy: every call on the pipelined path in 1 KiB segments, one at a time (the slowest path
# measured here by far at 64 KiB and more).
one_rule_policy "$tmp/bad.toml" "deliberately bad: 1 KiB segments, one in flight" 'path = "pipelined"' \
  'segment_bytes = "1K"' 'window = 1'

# 1. online: the bad choice is replaced wherever another candidate separated from it; every result right. 45 calls
# per size: online decides within 42 (docs/tuning.md), also when a loaded machine makes it take every round.
out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/bad.toml" ARSHIM_TUNE=online ARSHIM_LOG=info ARSHIM_STATS_SUMMARY=1 \
      -- "$prog" --calls 45 --max 4194304)
changed=$(sed -n 's/.*tuning (online): \([0-9]*\) keys decided (summed over ranks), \([0-9]*\) of them.*/\2/p' <<<"$out")
bad_kept=$(grep -E "tuned MPI_FLOAT MPI_SUM, (1048576|4194304) B on a communicator of 2 ranks \([^)]*\): pipelined segment_bytes=1K " <<<"$out" | grep -c .)
decided_big=$(grep -cE "tuned MPI_FLOAT MPI_SUM, (1048576|4194304) B on a communicator" <<<"$out")
if ! grep -q "check_tune: 0 wrong results" <<<"$out"; then say_fail "online, bad policy: wrong results" "$out"
elif [[ -z $changed || $changed -lt 4 ]]; then say_fail "online, bad policy: expected the bad choice replaced in >= 2 keys x 2 ranks" "$out"
elif [[ $decided_big -ne 2 || $bad_kept -ne 0 ]]; then say_fail "online, bad policy: the bad choice kept at 1 MiB or 4 MiB" "$out"
else echo "ok: online corrects a bad policy: $(grep -o 'tuning (online): .*' <<<"$out")"
  grep "tuned MPI_FLOAT MPI_SUM, 4194304 B" <<<"$out" | cut -c1-160 | sed 's/^/    /'
fi

# 2. guard: the bad path against the library's allreduce: the library's kept where it is faster (reason tuned).
out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/bad.toml" ARSHIM_TUNE=guard ARSHIM_STATS_SUMMARY=1 -- "$prog" --calls 30 --max 4194304 \
      --type int)
if ! grep -q "check_tune: 0 wrong results" <<<"$out" || ! grep -qE "native because:.* tuned=[0-9]+" <<<"$out"; then
  say_fail "guard, bad policy: expected right results and calls sent to the library as 'tuned'" "$out"
else echo "ok: guard keeps the library where the policy's path is slower: $(grep -o 'tuning (guard): .*' <<<"$out")"
fi

# 2b. guard across nodes also tries half the policy's leader count (2 x 2 virtual nodes, a policy of two leaders).
# The test library makes every rank see two leaders 100 ms slower than they ran: guard must then leave them, for one
# leader or the library, in every key it decides; without that skew the candidates still list one leader. On one
# node the same policy gets no leader candidate (guard is the policy against the library there).
one_rule_policy "$tmp/two-leaders.toml" "every call: multi-leader, two leaders" 'path = "multileader"' 'leaders = 2'
out=$(TIMEOUT=150 run 4 "$test_lib" ARSHIMTEST_KERNEL_FAULT=none ARSHIMTEST_TUNE_SLOW_LEADERS=2 ARSHIM_VIRTUAL_PPN=2 \
      ARSHIM_POLICY="$tmp/two-leaders.toml" ARSHIM_TUNE=guard ARSHIM_LOG=info -- "$prog" --calls 40 --max 1048576 --type int)
rc=$?
decided=$(grep -c "tuned MPI_INT MPI_SUM, [0-9]* B on a communicator of 4 ranks (2 node(s) x 2): " <<<"$out")
kept_two=$(grep "tuned MPI_INT MPI_SUM, [0-9]* B on a communicator of 4 ranks (2 node(s) x 2): multileader leaders=2 " \
           <<<"$out" | grep -c .)
listed_one=$(grep "tuned MPI_INT MPI_SUM, [0-9]* B on a communicator of 4 ranks" <<<"$out" | grep -c "multileader leaders=1 [^:]*: [0-9.]* us")
if [[ $rc -ne 0 ]] || ! grep -q "check_tune: 0 wrong results" <<<"$out" || [[ $decided -lt 4 || $kept_two -ne 0 || $listed_one -ne $decided ]]; then
  say_fail "guard across 2 virtual nodes, two leaders made slow: expected one leader tried in every decided key and two leaders never kept (decided $decided, kept two $kept_two, one leader timed in $listed_one; exit $rc)" "$out"
else echo "ok: guard across nodes tries half the leaders: $decided keys decided, none kept two slow leaders"
  grep "tuned MPI_INT MPI_SUM, 1048576 B" <<<"$out" | cut -c1-200 | sed 's/^/    /'
fi
out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/two-leaders.toml" ARSHIM_TUNE=guard ARSHIM_LOG=info -- "$prog" --calls 20 --max 262144 \
      --type int)
one_node=$(grep -c "tuned MPI_INT MPI_SUM, [0-9]* B on a communicator of 2 ranks (1 node(s) x 2)" <<<"$out")
if ! grep -q "check_tune: 0 wrong results" <<<"$out" || [[ $one_node -lt 2 ]] || grep "tuned MPI_INT" <<<"$out" | grep -q "leaders=1"; then
  say_fail "guard on one node, two leaders: expected decisions between the policy and the library only" "$out"
else echo "ok: guard on one node: the policy against the library only ($one_node keys)"
fi

# 2c. guard across nodes also tries small segments from 1 MiB, 256 KiB in flight (MPICH 32 KiB x 8, Open MPI 64 KiB x
# 4; shim/modes/online.cpp), on 2 x 2 virtual nodes with a policy of 1 MiB segments. The test library makes every rank
# see the policy's 1 MiB segments 100 ms slower than they ran: guard must time the small segments in every decided
# key from 1 MiB and keep the policy's segments in none of them; below 1 MiB the small segments are no candidate.
if [[ $flavor == openmpi ]]; then small_segments="segment_bytes=64K window=4"; else small_segments="segment_bytes=32K window=8"; fi
one_rule_policy "$tmp/large-segments.toml" "every call: pipelined, 1 MiB segments" 'path = "pipelined"' \
  'segment_bytes = "1M"' 'window = 8'
out=$(TIMEOUT=150 run 4 "$test_lib" ARSHIMTEST_KERNEL_FAULT=none ARSHIMTEST_TUNE_SLOW_SEGMENTS=1048576 ARSHIM_VIRTUAL_PPN=2 \
      ARSHIM_POLICY="$tmp/large-segments.toml" ARSHIM_TUNE=guard ARSHIM_LOG=info -- "$prog" --calls 40 --max 4194304 \
      --type int)
rc=$?
big='tuned MPI_INT MPI_SUM, (1048576|4194304) B on a communicator of 4 ranks \(2 node\(s\) x 2\): '
decided_big=$(grep -cE "$big" <<<"$out")
kept_large=$(grep -E "${big}pipelined segment_bytes=1M " <<<"$out" | grep -c .)
timed_small=$(grep -E "$big" <<<"$out" | grep -cE "pipelined $small_segments[^:]*: [0-9.]+ us")
small_below=$(grep -E "tuned MPI_INT MPI_SUM, [0-9]+ B on a communicator of 4 ranks" <<<"$out" | grep -vE "$big" |
              grep -c "$small_segments")
if [[ $rc -ne 0 ]] || ! grep -q "check_tune: 0 wrong results" <<<"$out" || [[ $decided_big -ne 2 || $kept_large -ne 0 ||
      $timed_small -ne 2 || $small_below -ne 0 ]]; then
  say_fail "guard across 2 virtual nodes, 1 MiB segments made slow: expected small segments ($small_segments) timed in both keys from 1 MiB, the policy's segments kept in neither, no small-segment candidate below 1 MiB (decided $decided_big, kept 1M $kept_large, small timed $timed_small, small below 1 MiB $small_below; exit $rc)" "$out"
else echo "ok: guard across nodes tries small segments ($small_segments) from 1 MiB: both keys timed them, none kept the slow policy"
  grep "tuned MPI_INT MPI_SUM, 4194304 B" <<<"$out" | cut -c1-220 | sed 's/^/    /'
fi

# 3. Ranks that see different timings (one rank sees the library 100x faster) still decide alike: no hang, right.
out=$(TIMEOUT=120 run 3 "$test_lib" ARSHIMTEST_KERNEL_FAULT=none ARSHIMTEST_TUNE_SKEW_RANK=1 ARSHIM_TUNE=online \
      ARSHIM_POLICY="$tmp/bad.toml" -- "$prog" --calls 20 --max 1048576)
rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "check_tune: 0 wrong results" <<<"$out"; then
  say_fail "skewed timings on rank 1: expected agreed decisions (exit $rc)" "$out"
else echo "ok: skewed timings on one rank: every rank decided alike (finished, right results)"
fi

# 4. The tuning cache: written at finalize, a valid policy file, read back and applied (no exploration).
cache=$tmp/cache.toml
out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/bad.toml" ARSHIM_TUNE=online ARSHIM_TUNE_CACHE="$cache" -- "$prog" --calls 30 \
      --max 4194304)
check=$(env -u ARSHIM_TEST_YIELD_LIB "$policy_tool" check "$cache" 2>&1)
check_rc=$?
# The cache's rules, read as TOML: "<bytes range> <evidence>" per rule.
cache_rules() { python3 -c 'import sys, tomllib; [print(r["bytes"], r.get("evidence")) for r in tomllib.load(open(sys.argv[1], "rb")).get("rule", [])]' "$1" 2>&1; }
measured_rules() { cache_rules "$1" | grep -c ' measured$'; }
if [[ ! -s $cache || $check_rc -ne 0 ]] || [[ $(measured_rules "$cache") -eq 0 ]] || ! grep -q ": OK, " <<<"$check"; then
  say_fail "tuning cache: not written, or not a clean policy file" "$out$check$(cat "$cache" 2>/dev/null | head -30)"
else
  json=$tmp/second.json
  cp "$cache" "$tmp/first-run.toml"  # the second run rewrites the cache with what it learns itself
  out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/bad.toml" ARSHIM_TUNE=online ARSHIM_TUNE_CACHE="$cache" ARSHIM_STATS="$json" \
        ARSHIM_STATS_SUMMARY=0 -- "$prog" --calls 30 --max 4194304)
  if ! grep -q "check_tune: 0 wrong results" <<<"$out" || ! python3 - "$json" "$tmp/first-run.toml" "$cache" <<'PY'
import json, sys, tomllib
doc = json.load(open(sys.argv[1]))
assert doc["run"]["policy_source"].startswith("tuning cache"), doc["run"]["policy_source"]
def lower_bound(text):  # "16K..32K" -> 16384
    lo = text.split("..")[0]
    return int(lo[:-1]) << {"K": 10, "M": 20, "G": 30}[lo[-1]] if lo and lo[-1] in "KMG" else int(lo or 0)
first = tomllib.load(open(sys.argv[2], "rb"))
rewritten = tomllib.load(open(sys.argv[3], "rb"))
# the keys the first run decided (the cache's rules) are not explored again; keys it left undecided may be
cached = {lower_bound(r["bytes"]) for r in first["rule"]}
again = {r["bytes_min"] for r in doc["tuning"]["decided"] if r["datatype"] == "float"}
assert cached and not (cached & again), (cached, again)
# the rewritten cache keeps the first run's rules (merged: none lost)
assert cached <= {lower_bound(r["bytes"]) for r in rewritten["rule"]}, (cached, rewritten["rule"])
PY
  then say_fail "tuning cache: the second run did not apply it (or explored the cached keys again, or lost rules)" "$out"
  else echo "ok: tuning cache written ($(cache_rules "$cache" | grep -c .) rules), read back and applied without exploring"
  fi
fi

# 5. ARSHIM_TUNE_CACHE naming a file that is not this run's cache (issue 41): a data file, a hand-written policy, a
# file that is not TOML and a binary are left byte for byte as they were, with one line, and nothing is written beside
# them; another MPI's cache is kept as it was and this run's cache goes beside it. Results stay right.
other=$([[ $flavor == mpich ]] && echo openmpi || echo mpich)
seq 1 100000 >"$tmp/data.txt"
cp "$tmp/bad.toml" "$tmp/policy.toml"
printf 'this is not toml [[[\n' >"$tmp/corrupt.toml"
head -c 4096 /dev/urandom >"$tmp/binary.bin"
sed "s/^flavor = .*/flavor = '$other'/" "$cache" >"$tmp/foreign.toml"
if ! grep -q "^flavor = '$other'" "$tmp/foreign.toml"; then say_fail "test set-up: no foreign cache made" "$(cat "$tmp/foreign.toml")"; fi
for c in data.txt policy.toml corrupt.toml binary.bin foreign.toml; do
  cp "$tmp/$c" "$tmp/$c.before"
  out=$(run 2 "$shim" ARSHIM_POLICY="$tmp/bad.toml" ARSHIM_TUNE=online ARSHIM_TUNE_CACHE="$tmp/$c" -- "$prog" --calls 30 \
        --max 65536)
  aside=$(ls "$tmp/$c".*-arshim-* 2>/dev/null)
  beside=$(ls "$tmp/$c".* 2>/dev/null | grep -v '\.before$')
  if ! grep -q "check_tune: 0 wrong results" <<<"$out" || ! cmp -s "$tmp/$c" "$tmp/$c.before"; then
    say_fail "$c as ARSHIM_TUNE_CACHE: changed, or wrong results" "$out"
  elif [[ $c == foreign.toml ]] && { [[ -z $aside ]] || [[ $(measured_rules "$aside") -eq 0 ]] ||
                                     ! grep -q "^flavor = '$flavor'" "$aside"; }; then
    say_fail "$c as ARSHIM_TUNE_CACHE: this run's cache was not kept beside the other MPI's" "$out$(ls "$tmp")"
  elif [[ $c != foreign.toml && ( -n $beside || $(grep -c "ARSHIM_TUNE_CACHE=" <<<"$out") -ne 1 ) ]]; then
    say_fail "$c as ARSHIM_TUNE_CACHE: expected one line and nothing written beside it" "$out$(ls "$tmp")"
  else echo "ok: $c as ARSHIM_TUNE_CACHE left as it was${aside:+; this run kept its cache beside it}"
  fi
done

# 6. Candidates whose shared-memory window fails to build decline (agreed); every result stays right.
out=$(run 2 "$test_lib" ARSHIMTEST_KERNEL_FAULT=none ARSHIMTEST_FAIL_SHM=1 ARSHIM_TUNE=online ARSHIM_STATS_SUMMARY=1 \
      -- "$prog" --calls 20 --max 1048576)
if [[ $? -ne 0 ]] || ! grep -q "check_tune: 0 wrong results" <<<"$out"; then
  say_fail "online with failing shared memory: expected right results" "$out"
else echo "ok: online with every shared-memory window failing: right results"
fi
exit $fail
