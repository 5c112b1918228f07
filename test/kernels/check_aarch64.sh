#!/usr/bin/env bash
# The NEON and SVE kernels, checked on an x86-64 machine: the kernel library and its unit test are cross-compiled
# for aarch64 (Debian's g++-aarch64-linux-gnu) and run under user-mode QEMU (qemu-aarch64 -cpu max), once with
# 128-bit and once with 512-bit SVE vectors. The same exhaustive comparison with the independent reference as on
# the host (test_kernels.cpp), for the levels the host cannot run. Skipped (77) without the cross compiler or QEMU,
# and after the compile-time checks without Catch2 2 (below).
#   check_aarch64.sh SOURCE_ROOT BUILD_ROOT
set -uo pipefail
src=$1 build=$2
cxx=aarch64-linux-gnu-g++
if ! command -v "$cxx" >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "skipped: needs $cxx and qemu-aarch64 (Debian packages g++-aarch64-linux-gnu, qemu-user)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The kernel objects get kernels/meson.build's flags: no FMA contraction, no SLP vectorization.
kernel_flags=(-O2 -std=c++17 -ffp-contract=off -fno-tree-slp-vectorize -Wall -Wextra -I"$src" -I"$build")
flags=("${kernel_flags[@]}" -Werror)
set -e
"$cxx" "${flags[@]}" -c "$src/kernels/neon.cpp" -o "$work/neon.o"
"$cxx" "${flags[@]}" -march=armv8.2-a+sve -c "$src/kernels/sve.cpp" -o "$work/sve.o"
"$cxx" "${flags[@]}" -DARSHIM_KERNELS_NEON -DARSHIM_KERNELS_SVE -c "$src/kernels/kernels.cpp" -o "$work/kernels.o"
"$cxx" "${flags[@]}" -c "$src/kernels/scalar.cpp" -o "$work/scalar.o"
set +e
# The ISA-flags ODR trap, as on the host: the SVE object exports nothing but its fill(), and no kernel object holds
# a fused multiply-add (a contracted a*b+c rounds once where the reference rounds twice).
bad=$(aarch64-linux-gnu-nm -C --defined-only --extern-only "$work/sve.o" | grep -v 'arshim::kernels::sve::fill')
[[ -z $bad ]] || { echo "FAIL: sve.o exports more than its fill(): $bad"; exit 1; }
fused=$(aarch64-linux-gnu-objdump -d "$work"/{neon,sve,scalar}.o | grep -cE '\bf(n?m(la|ls|add|sub)|mad|msb|nmad|nmsb)\b')
[[ $fused -eq 0 ]] || { echo "FAIL: $fused fused multiply-add instruction(s) in the aarch64 kernel objects"; exit 1; }

# The unit test needs Catch2 for aarch64. Catch2 2 is one header, compiled here for any target; Catch2 3 is a compiled
# library, and Debian's catch2 package (not Multi-Arch) has none for aarch64: with it (Debian 13), the kernels are
# compiled and checked above but not run.
catch=$(find /usr/include -path '*/catch2/catch.hpp' | head -1)
if [[ -z $catch ]]; then
  echo "skipped: NEON/SVE kernels compiled and checked, not run: running needs Catch2 2 (catch2/catch.hpp)," \
       "Catch2 3 has no aarch64 library here"
  exit 77
fi
mkdir -p "$work/inc/catch2"
cp "$catch" "$work/inc/catch2/"
test_flags=("${kernel_flags[@]}" -I"$work/inc" -DARSHIM_CATCH2_MAJOR=2)
set -e
"$cxx" "${test_flags[@]}" -c "$src/test/kernels/test_kernels.cpp" -o "$work/test.o"
"$cxx" "${test_flags[@]}" -c "$src/test/support/catch_main.cpp" -o "$work/catch_main.o"
"$cxx" "$work"/*.o -static -o "$work/test_kernels"
set +e

fail=0
tests='kernels match the reference: neon,kernels match the reference: sve,vector levels really install vector kernels,every level*,semantics of the tricky cases,ISA selection'
for vq in 1 4; do
  echo "== qemu-aarch64 -cpu max, SVE vectors of $((vq * 128)) bits"
  out=$(qemu-aarch64 -cpu "max,sve-max-vq=$vq" "$work/test_kernels" "$tests" 2>&1)
  rc=$?
  tail -n 3 <<<"$out"
  [[ $rc -eq 0 ]] || { echo "FAIL (exit $rc)"; tail -n 40 <<<"$out"; fail=1; }
  # A level the emulated CPU lacked would be skipped with a warning, and the run would pass without testing it.
  if grep -q 'skipped' <<<"$out"; then echo "FAIL: a level was skipped:"; grep -B2 'skipped' <<<"$out"; fail=1; fi
  tests='kernels match the reference: sve'  # the NEON level does not depend on the SVE vector length
done
exit $fail
