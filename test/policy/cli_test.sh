#!/bin/bash
# End-to-end checks of arshim-policy's subcommands, and the example tables installed with ARShim are clean.
# Usage: cli_test.sh ARSHIM_POLICY_EXE DEFAULT_TOML EXAMPLES_DIR
set -u
exe=$1
default_toml=$2
examples=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0

# Run without any ARSHIM_* from the caller's environment.
run() { env $(env | sed -n 's/^\(ARSHIM_[^=]*\)=.*/-u \1/p') "$@"; }

expect() {  # expect NAME WANT_RC WANT_GREP -- command...
    local name=$1 want_rc=$2 pattern=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [[ $rc -ne $want_rc ]] || ! grep -qE -- "$pattern" <<<"$out"; then
        echo "FAIL $name: rc $rc (want $want_rc), output:"
        echo "$out" | sed 's/^/    /'
        echo "    (wanted a line matching: $pattern)"
        failures=$((failures + 1))
    else
        passes=$((passes + 1))
    fi
}

cat >"$work/good.toml" <<'TOML'
version = 1

[[rule]]
mpi = "openmpi"
bytes = "64K..4M"
nodes = "2.."
path = "multileader"
leaders = 4

[[rule]]
path = "native"
TOML
cat >"$work/bad.toml" <<'TOML'
version = 1

[[rule]]
path = "pipelined"
segmnts = 4
TOML

expect help 0 'explain' -- run "$exe" --help
expect explain-help 0 '--bytes' -- run "$exe" explain --help
expect explain-default 0 '^decision: +multileader leaders=8 pipeline_k=1 kernel=native$' -- \
    run "$exe" explain --bytes 4MiB --ppn 8 --nodes 1
expect explain-rule 0 '^rule: +built-in default.toml:[0-9]+ \(rule [0-9]+, "one node, large' -- run "$exe" explain --bytes 4MiB --ppn 8 --nodes 1
expect explain-both-flavors 0 '^mpi: +mpich, openmpi$' -- run "$exe" explain --bytes 1K --ppn 1 --nodes 16
expect explain-file 0 '^rule: +.*good.toml:3 \(rule 1\)$' -- \
    run "$exe" explain --bytes 1M --ppn 8 --nodes 2 --mpi openmpi --policy "$work/good.toml"
expect explain-file-other-mpi 0 '^decision: +native$' -- \
    run "$exe" explain --bytes 1M --ppn 8 --nodes 2 --mpi mpich --policy "$work/good.toml"
expect explain-env-policy 0 '^decision: +multileader leaders=4' -- \
    run env ARSHIM_POLICY="$work/good.toml" "$exe" explain --bytes 1M --ppn 8 --nodes 2 --mpi openmpi
expect explain-env-override 0 '^decision: +multileader leaders=2 pipeline_k=1 kernel=native$' -- \
    run env ARSHIM_PATH=multileader ARSHIM_LEADERS=2 "$exe" explain --bytes 1K --ppn 8 --nodes 2
expect explain-bad-size 105 'not a size' -- run "$exe" explain --bytes 4Q --ppn 8 --nodes 2
expect explain-missing 106 'required' -- run "$exe" explain --bytes 4M
expect explain-bad-file 0 'the file is not used' -- run "$exe" explain --bytes 1K --ppn 1 --nodes 1 --policy "$work/bad.toml"
expect check-good 0 'good.toml: OK, 2 rules' -- run "$exe" check "$work/good.toml"
expect check-default 0 'OK, [0-9]+ rules' -- run "$exe" check "$default_toml"
expect check-bad 1 "bad.toml:5: rule 1: unknown key 'segmnts' \(did you mean 'segments'\?\)" -- run "$exe" check "$work/bad.toml"
expect check-missing 1 'none.toml: cannot open: No such file or directory' -- run "$exe" check "$work/none.toml"
# Hostile files give one line and no crash or hang (the tool reads them as the shim does).
python3 -c 'print("version = 1\n[[rule]]\npath = \"native\"\n" + ".".join(["a"] * 40000) + " = 1")' >"$work/deep.toml"
expect check-deep-key 1 'deep.toml:4: a key with more than 16 dotted parts' -- run "$exe" check "$work/deep.toml"
mkfifo "$work/fifo.toml"
expect check-fifo 1 'fifo.toml: is a FIFO, not a regular file' -- run timeout 20 "$exe" check "$work/fifo.toml"
expect check-device 1 '/dev/zero: is a character device' -- run timeout 20 "$exe" check /dev/zero
expect show 0 '^[0-9]+ +built-in default.toml:[0-9]+ +any +4M\.\. ' -- run "$exe" show
expect show-override 0 '^overrides: ARSHIM_WINDOW=3$' -- run env ARSHIM_WINDOW=3 "$exe" show --mpi mpich
expect show-mpi 0 '^1 +.*good.toml:3 +openmpi +64K\.\.4M +any +2\.\. ' -- run "$exe" show --policy "$work/good.toml"
expect options 0 '^ARSHIM_PATH \(choice, default auto' -- run "$exe" options
expect options-md 0 '^\| `ARSHIM_SEGMENT_BYTES` \| size \| `0` \|' -- run "$exe" options --markdown
expect default 0 '^version = 1$' -- run "$exe" default
expect env-problem 0 'ARSHIM_WINDOW="x": expected an integer' -- run env ARSHIM_WINDOW=x "$exe" show
# predict: the cost model's times as JSON. Expected values computed here by hand from policy/cost_model.cpp, with
# parameters chosen so that each term is visible: alpha 10 us, net_bw 1 GB/s, copy_bw 10 GB/s, a' 1 us, no compute.
machine=(--param alpha=1e-5 --param net_bw=1e9 --param copy_bw=1e10 --param intra_latency=1e-6 --param gamma=1e18
         --param stream_gain=1)
cat >"$work/tuned.toml" <<'TOML'
version = 1

[model]
alpha = 2e-5
net_bw = 5e8

[[rule]]
bytes = "1M.."
nodes = "2"
path = "pipelined"
segment_bytes = "256K"
window = 4
TOML
# json_check NAME PYTHON-EXPRESSION -- command...: the command's stdout as JSON `j` satisfies the expression.
json_check() {
    local name=$1 check=$2
    shift 3
    local out rc
    out=$("$@" 2>"$work/stderr")
    rc=$?
    if [[ $rc -ne 0 ]] || ! python3 -c "import json, sys; j = json.loads(sys.stdin.read()); sys.exit(0 if ($check) else 1)" <<<"$out"; then
        echo "FAIL $name: rc $rc, output:"
        echo "$out" | head -c 3000 | sed 's/^/    /'
        sed 's/^/    stderr: /' "$work/stderr"
        echo "    (wanted: $check)"
        failures=$((failures + 1))
    else
        passes=$((passes + 1))
    fi
}
close() { echo "abs($1 - ($2)) < 1e-6 * ($2)"; }
# MPICH 4.0.2 on 2 nodes x 1: Rabenseifner between the two ranks: 2 (alpha + n/2 / net_bw) = 20 + 1048.576 us.
json_check predict-native-2x1 "$(close "j['predictions'][0]['flavors']['mpich']['native_us']" 1068.576)" -- \
    run "$exe" predict --layout 2x1 --sizes 1M "${machine[@]}" --mpi mpich
# One node x 8, 4 MiB: the built-in table's multi-leader with 8 leaders, 2 l a' + 2 n / copy_bw = 16 + 838.8608 us.
json_check predict-builtin-1x8 "j['predictions'][0]['flavors']['mpich']['builtin']['decision'] == 'multileader leaders=8 pipeline_k=1 kernel=native' and $(close "j['predictions'][0]['flavors']['mpich']['builtin']['us']" 854.8608)" -- \
    run "$exe" predict --layout 1x8 --sizes 4M "${machine[@]}"
# Every layout x every size, both flavors, every path; paths without a model (reproducible, sharp) are null.
json_check predict-cross "len(j['predictions']) == 6 and [(p['nodes'], p['ppn'], p['bytes']) for p in j['predictions']][:3] == [(2, 2, 8), (2, 2, 65536), (2, 2, 4194304)] and all(set(p['flavors']) == {'mpich', 'openmpi'} and p['flavors']['mpich']['paths']['reproducible']['us'] is None and p['flavors']['openmpi']['paths']['pipelined']['us'] > 0 for p in j['predictions'])" -- \
    run "$exe" predict --layout 2x2,16x4 --sizes 8,64K,4M "${machine[@]}"
# The forced paths get the parameters the shim would run them with (ARSHIM_PATH, the matching rule's or the path's own).
json_check predict-forced "j['predictions'][0]['flavors']['openmpi']['paths']['multileader']['decision'] == 'multileader leaders=1 pipeline_k=1 kernel=native' and j['predictions'][0]['flavors']['openmpi']['paths']['pipelined']['decision'] == j['predictions'][0]['flavors']['openmpi']['builtin']['decision']" -- \
    run "$exe" predict --layout 2x2 --sizes 4M "${machine[@]}"
# --decide-as: the MPICH rules decide while Open MPI's algorithms are costed.
json_check predict-decide-as "j['predictions'][0]['flavors']['openmpi']['decided_as'] == 'mpich' and j['predictions'][0]['flavors']['openmpi']['builtin']['decision'].startswith('multileader leaders=2')" -- \
    run "$exe" predict --layout 2x2 --sizes 4M --decide-as mpich --mpi openmpi "${machine[@]}"
# A policy file: its decision, its [model] (under --param, over the defaults), as the shim would use it.
json_check predict-policy "j['policy']['used'] and '[model]' in j['params_from'] and j['predictions'][0]['params']['alpha'] == 2e-5 and j['predictions'][0]['params']['net_bw'] == 5e8 and j['predictions'][0]['flavors']['mpich']['policy']['decision'] == 'pipelined segment_bytes=256K window=4 kernel=native' and j['predictions'][0]['flavors']['mpich']['policy']['rule'].endswith('tuned.toml:7')" -- \
    run "$exe" predict --layout 2x2 --sizes 4M --policy "$work/tuned.toml" --mpi mpich
json_check predict-policy-param "j['predictions'][0]['params']['alpha'] == 3e-6 and j['predictions'][0]['params']['net_bw'] == 5e8" -- \
    run "$exe" predict --layout 2x2 --sizes 4M --policy "$work/tuned.toml" --param alpha=3e-6
json_check predict-policy-rejected "not j['policy']['used'] and any('bad.toml' in p for p in j['problems'])" -- \
    run "$exe" predict --layout 2x2 --sizes 4M --policy "$work/bad.toml"
# --shapes: each shape's own parameters beat --param (2 x 1 Rabenseifner again: 2 (30 + 262.144) us).
printf '%s' '{"shapes": [{"nodes": 2, "ppn": 1, "bytes": 1048576, "params": {"alpha": 3e-5, "net_bw": 2e9}}, {"nodes": 2, "ppn": 1, "bytes": 1048576}]}' >"$work/shapes.json"
json_check predict-shapes "$(close "j['predictions'][0]['flavors']['mpich']['native_us']" 584.288) and $(close "j['predictions'][1]['flavors']['mpich']['native_us']" 1068.576)" -- \
    run "$exe" predict --shapes "$work/shapes.json" "${machine[@]}" --mpi mpich
json_check predict-shapes-stdin "len(j['predictions']) == 2" -- \
    run sh -c "\"\$0\" predict --shapes - < \"\$1\"" "$exe" "$work/shapes.json"
# Bad input: one line, status 2.
expect predict-bad-param 2 "^arshim-policy predict: unknown machine parameter 'latency'; known: copy_bw" -- \
    run "$exe" predict --layout 2x2 --sizes 1M --param latency=1
expect predict-bad-value 2 'alpha must be a positive number' -- run "$exe" predict --layout 2x2 --sizes 1M --param alpha=-1
expect predict-bad-layout 2 "layout '2by2': write NODESxPPN" -- run "$exe" predict --layout 2by2 --sizes 1M
expect predict-bad-size 2 "sizes: '4Q' is not a size" -- run "$exe" predict --layout 2x2 --sizes 4Q
expect predict-no-shapes 2 'give --layout \(with --sizes\) or --shapes' -- run "$exe" predict
printf '{"shapes": [{"nodes": 0, "ppn": 1, "bytes": 8}]}' >"$work/zero.json"
expect predict-zero-nodes 2 'nodes out of range' -- run "$exe" predict --shapes "$work/zero.json"
printf '{"shapes": [' >"$work/cut.json"
expect predict-cut-json 2 'not a JSON object with a "shapes" list' -- run "$exe" predict --shapes "$work/cut.json"
expect predict-fifo 2 'fifo.toml: is a FIFO, not a regular file' -- \
    run timeout 20 "$exe" predict --layout 2x2 --sizes 1M --policy "$work/fifo.toml"
for example in "$examples"/*.toml; do
  expect "example-$(basename "$example")" 0 ': OK, [0-9]+ rules?$' -- run "$exe" check "$example"
done

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
