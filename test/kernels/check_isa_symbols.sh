#!/bin/sh
# The per-ISA-flags ODR trap, checked: an object compiled with AVX-512 flags must export nothing but its fill()
# (no weak inline functions or template instances the linker could pick for baseline callers). And no fused
# multiply-add anywhere in it: a contracted a*b+c rounds once, the scalar reference twice, so results would differ
# from the reference and between levels (GCC's SLP complex-multiply pattern emitted vfmaddsub despite
# -ffp-contract=off; kernels/meson.build).
# usage: check_isa_symbols.sh ISA LIBRARY.a
isa=$1 lib=$2
bad=$(nm -C --defined-only --extern-only "$lib" | awk 'NF >= 3 { $1 = ""; $2 = ""; sub(/^  /, ""); print }' |
      grep -v "^arshim::kernels::$isa::fill(arshim::kernels::KernelTable&)\$")
if [ -n "$bad" ]; then
  echo "$lib exports more than arshim::kernels::$isa::fill:"
  echo "$bad"
  exit 1
fi
fused=$(objdump -d "$lib" | grep -cE '\bv?f(n?m(add|sub)|maddsub|msubadd)[0-9]*(p|s)[sd]\b')
if [ "$fused" -ne 0 ]; then
  echo "$lib contains $fused fused multiply-add instruction(s):"
  objdump -d "$lib" | grep -E '\bv?f(n?m(add|sub)|maddsub|msubadd)[0-9]*(p|s)[sd]\b' | head -5
  exit 1
fi
echo "$lib: only arshim::kernels::$isa::fill is exported, no fused multiply-add"
