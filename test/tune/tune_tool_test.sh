#!/usr/bin/env bash
# tune_tool_test.sh FLAVOR ARSHIM CHECK_TUNE SHIM: `arshim tune` (docs/tuning.md) with a tiny budget on this machine:
# it writes a table that `arshim policy check` passes, with its [origin], [model] and measured rules; `arshim policy
# explain` prints the model's predictions for it; a job run with the table (prepended to the built-in one) gets
# right results; --resume measures nothing again; a launcher line without MPI is one clear line, exit 2.
set -uo pipefail
flavor=$1 arshim=$2 prog=$3 shim=$4
mpirun_sh=$(cd "$(dirname "$0")" && pwd)/../mpi/mpirun.sh
for v in $(env | sed -n 's/^\(ARSHIM_[A-Z_]*\)=.*/\1/p'); do [[ $v == ARSHIM_TEST_YIELD_LIB ]] || unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say_fail() { echo "FAIL $1"; sed 's/^/    /' <<<"$2" | tail -40; fail=1; }
launcher=(mpirun.$flavor -n 2)
[[ $flavor == mpich ]] && launcher+=(-bind-to none)

out=$(timeout 600 "$arshim" tune --out "$tmp/tuned.toml" --budget 30s --max 256K -- "${launcher[@]}" 2>&1)
rc=$?
check=$("$arshim" policy check "$tmp/tuned.toml" 2>&1)
if [[ $rc -ne 0 || ! -s $tmp/tuned.toml ]]; then say_fail "arshim tune: exit $rc, no table" "$out"
elif ! grep -q ": OK, " <<<"$check"; then say_fail "arshim tune: the table does not pass arshim policy check" "$check"
elif ! python3 - "$tmp/tuned.toml" "$flavor" <<'PY'
import re, sys, tomllib
table = tomllib.load(open(sys.argv[1], "rb"))
assert table["origin"]["flavor"] == sys.argv[2], table["origin"]
assert table["model"], "no [model]"
# a rule decided on measurements: its note gives the measured times (evidence is "measured" only when every point was)
assert any(re.match(r"measured [0-9]", r.get("note", "")) for r in table["rule"]), "no measured rule"
assert re.search(r"copy_bw=[0-9.e+]+ .*gamma=[0-9.e+]+ intra_latency=[0-9.e+-]+", table["origin"]["probed"]), \
    table["origin"].get("probed")
PY
then
  say_fail "arshim tune: expected [origin] (flavor $flavor, the machine parameters measured directly), [model] and measured rules" \
    "$(cat "$tmp/tuned.toml")"
elif ! grep -q "ETA" <<<"$out"; then say_fail "arshim tune: no progress output" "$out"
elif ! grep -q "arshim tune: machine: memcpy" <<<"$out"; then
  say_fail "arshim tune: expected the machine parameters measured directly (memcpy, reduction, latency on a node)" \
    "$out"$'\n'"$(cat "$tmp/tuned.toml")"
else echo "ok: arshim tune wrote a clean table: $(grep -c '^\[\[rule' "$tmp/tuned.toml") rules; $(grep -o 'model: .*' <<<"$out")"
fi

# Every win on a short call (the library's median below 1 ms) was measured again in a launch of its own (round 1),
# unless the tuner said the budget left it unconfirmed.
unconfirmed=$(python3 - "$tmp/tuned.toml.state.json" <<'PY'
import json, sys
ms = json.load(open(sys.argv[1]))["measurements"]
key = lambda m: tuple(sorted((k, v) for k, v in m.items() if k in ("path", "leaders", "pipeline_k", "segments",
                                                                    "segment_bytes", "window", "nodes", "ppn", "bytes")))
again = {key(m) for m in ms if m.get("round") == 1}
wins = [m for m in ms if m.get("round", 0) == 0 and m["p75"] < m["native_p25"] and m["native"] < 1000]
print(f"{len(wins)} {sum(1 for m in wins if key(m) not in again)}")
PY
)
if [[ $unconfirmed != *" 0" ]] && ! grep -q "unconfirmed" <<<"$out"; then
  say_fail "arshim tune: expected every win on a short call measured again in a confirming launch ($unconfirmed)" "$out"
else echo "ok: wins on short calls confirmed in launches of their own (wins, unconfirmed: $unconfirmed)"
fi

explained=$("$arshim" policy explain --policy "$tmp/tuned.toml" --bytes 100K --ppn 2 --nodes 1 --mpi "$flavor" 2>&1)
if ! grep -q "^evidence:" <<<"$explained" || ! grep -q "^predicted ($flavor" <<<"$explained" ||
   ! grep -qE "^  native +[0-9.]+ us" <<<"$explained"; then
  say_fail "arshim policy explain: expected the rule's evidence and the model's predictions" "$explained"
else echo "ok: explain shows evidence and predictions"
fi

# A complaint about the table would be a config_problem event in rank 0's trace (docs/stats.md "The trace").
run=$(ARSHIM_TEST_TIMEOUT=180 "$mpirun_sh" "$flavor" 2 "$shim" ARSHIM_POLICY="$tmp/tuned.toml" ARSHIM_POLICY_MODE=prepend \
      ARSHIM_TUNE=off ARSHIM_TRACE="$tmp/trace.jsonl" -- "$prog" --calls 6 --max 1048576 2>&1)
problems=$(python3 -c 'import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert events and events[0].get("trace") == "arshim-trace/1"
print(sum(1 for e in events[1:] if e.get("event") == "config_problem"))' "$tmp/trace.jsonl" 2>/dev/null)
if ! grep -q "check_tune: 0 wrong results" <<<"$run" || [[ $problems != 0 ]]; then
  say_fail "a job with the tuned table: expected right results and no complaint about the table" "$run"
else echo "ok: a job with the tuned table: right results"
fi

again=$(timeout 600 "$arshim" tune --resume --out "$tmp/tuned.toml" --budget 30s --max 256K -- "${launcher[@]}" 2>&1)
if [[ $? -ne 0 ]] || ! grep -q "resuming" <<<"$again" || grep -q "\[coarse\|\[confirm" <<<"$again"; then
  say_fail "arshim tune --resume: expected no coarse run again" "$again"
else echo "ok: --resume measures nothing again"
fi

bad=$("$arshim" tune --out "$tmp/x.toml" -- /bin/true -n 2 2>&1)
if [[ $? -ne 2 ]] || [[ $(grep -c . <<<"$bad") -ne 1 ]] || ! grep -q "pass --mpi" <<<"$bad"; then
  say_fail "arshim tune with a launcher that is no MPI: expected one line and exit 2" "$bad"
else echo "ok: a launcher that is no MPI: $bad"
fi
# Hostile names in a shared directory: a symlink planted at the table's name is replaced, never written through; a
# FIFO or a directory as the state file of --resume is one line and exit 2 (no hang).
echo untouched >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/planted.toml"
ln -s "$tmp/victim" "$tmp/planted.toml.state.json.tmp.0"
out=$(timeout 600 "$arshim" tune --out "$tmp/planted.toml" --budget 10s --max 4K -- "${launcher[@]}" 2>&1)
if [[ $? -ne 0 || $(cat "$tmp/victim") != untouched || -L $tmp/planted.toml ]] || ! grep -q '^\[model\]' "$tmp/planted.toml"; then
  say_fail "a symlink planted at --out: expected it replaced by the table, its target untouched" "$out"
else echo "ok: a symlink planted at --out is replaced, not followed"
fi
mkfifo "$tmp/fifo.toml.state.json"
mkdir "$tmp/dir.toml.state.json"
for name in fifo dir; do
  bad=$(timeout 20 "$arshim" tune --resume --out "$tmp/$name.toml" -- "${launcher[@]}" 2>&1)
  rc=$?
  if [[ $rc -ne 2 || $(grep -c . <<<"$bad") -ne 1 ]] || ! grep -q "not a regular file" <<<"$bad"; then
    say_fail "--resume with a $name as state file: expected one line and exit 2 (exit $rc)" "$bad"
  else echo "ok: --resume with a $name as state file: $bad"
  fi
done
exit $fail
