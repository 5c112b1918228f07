#!/bin/bash
# Builds and runs the policy parser's libFuzzer target with clang++ (the project compiler is g++, so meson runs
# this script instead of compiling the target itself).
#
#   run_fuzz.sh --check                          exit 0 when clang++ can build a libFuzzer target here
#   run_fuzz.sh --build OUT INCDIR... -- SRC...  compile SRC (policy sources + the target) into OUT
#   run_fuzz.sh --run EXE SECONDS SEED...        fuzz for SECONDS from the SEED files (copied to a scratch
#                                                corpus); crash inputs go to $FUZZ_ARTIFACTS, by default
#                                                fuzz-artifacts/ next to EXE
#   run_fuzz.sh SECONDS                          standalone: build into a scratch directory and run, with
#                                                policy/default.toml and test/fuzz/corpus/ as seeds; crash
#                                                inputs go to ./fuzz-artifacts/
set -euo pipefail

CXX=${CLANGXX:-clang++}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

# Scratch directories, removed on exit however the script ends.
scratch_dirs=()
trap 'rm -rf "${scratch_dirs[@]}"' EXIT

# toml++ is compiled header-only so that the fuzzer instruments (and ASan checks) the TOML parser too.
# toml_assert.h compiles toml++'s debug assertions out, as in the release library the shim links (see there).
common=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -DTOML_HEADER_ONLY=1 -DTOML_SHARED_LIB=0 -include "$here/toml_assert.h")

check() {
    local dir
    dir=$(mktemp -d)
    scratch_dirs+=("$dir")
    printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
        >"$dir/t.cpp"
    command -v "$CXX" >/dev/null && "$CXX" "${common[@]}" -fsanitize=fuzzer "$dir/t.cpp" -o "$dir/t" 2>/dev/null
}

build() {
    local out=$1
    shift
    local includes=() sources=()
    while [[ $# -gt 0 && $1 != -- ]]; do includes+=("-I$1"); shift; done
    [[ $# -gt 0 ]] && shift
    sources=("$@")
    local dir objects=() pids=()
    dir=$(mktemp -d)
    scratch_dirs+=("$dir")
    local i=0
    for src in "${sources[@]}"; do
        local obj="$dir/$i.o"
        i=$((i + 1))
        local cov=-fsanitize=fuzzer-no-link
        [[ $(basename "$src") == fuzz_*.cpp ]] && cov=-fsanitize=fuzzer
        "$CXX" "${common[@]}" "$cov" "${includes[@]}" -c "$src" -o "$obj" &
        pids+=($!)
        objects+=("$obj")
        # two cores: at most two compilers at a time
        if [[ ${#pids[@]} -ge 2 ]]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    "$CXX" "${common[@]}" -fsanitize=fuzzer "${objects[@]}" -o "$out"
}

run() {
    local exe=$1 seconds=$2
    shift 2
    local corpus artifacts
    corpus=$(mktemp -d)
    scratch_dirs+=("$corpus")
    for seed in "$@"; do
        if [[ -d $seed ]]; then cp "$seed"/* "$corpus"/ 2>/dev/null || true; else cp "$seed" "$corpus"/; fi
    done
    artifacts="${FUZZ_ARTIFACTS:-$(dirname "$exe")/fuzz-artifacts}/"
    mkdir -p "$artifacts"
    local dict=()
    [[ -f $here/policy.dict ]] && dict=(-dict="$here/policy.dict")
    # -max_len: policy files are small; longer inputs only slow the search down.
    # libFuzzer's default exit code for a crash is 77, which meson reads as "skipped": make every finding a failure.
    # FUZZ_SEED: a fixed seed makes a run repeatable (the meson test uses one); unset, libFuzzer picks one.
    local seed=()
    [[ -n ${FUZZ_SEED:-} ]] && seed=(-seed="$FUZZ_SEED")
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$artifacts" "${seed[@]}" "${dict[@]}" "$corpus"
}

case "${1:-}" in
--check) check ;;
--unavailable) echo "run_fuzz.sh: $CXX cannot build libFuzzer targets (Debian: clang, libclang-rt-14-dev)" >&2; exit 77 ;;
--build) shift; build "$@" ;;
--run) shift; run "$@" ;;
'' | -h | --help) sed -n '2,12p' "$0"; exit 2 ;;
*)
    seconds=$1
    check || exec "$0" --unavailable
    scratch=$(mktemp -d)
    scratch_dirs+=("$scratch")
    python3 "$root/policy/embed_text.py" "$root/policy/default.toml" "$scratch/default_policy.cpp" \
        arshim::policy::generated kDefaultToml
    build "$scratch/fuzz-policy" "$root" -- "$root"/policy/{box,config,policy,reader}.cpp \
        "$scratch/default_policy.cpp" "$here/fuzz_policy.cpp"
    FUZZ_ARTIFACTS=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts} \
        run "$scratch/fuzz-policy" "$seconds" "$root/policy/default.toml" "$here/corpus"
    ;;
esac
