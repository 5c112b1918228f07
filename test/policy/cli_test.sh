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
expect explain-both-flavors 0 '^mpi: +mpich, openmpi$' -- run "$exe" explain --bytes 1K --ppn 8 --nodes 16
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
for example in "$examples"/*.toml; do
  expect "example-$(basename "$example")" 0 ': OK, [0-9]+ rules?$' -- run "$exe" check "$example"
done

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
