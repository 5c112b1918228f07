#!/bin/sh
# The per-ISA-flags ODR trap, checked: an object compiled with AVX-512 flags must export nothing but its fill()
# (no weak inline functions or template instances the linker could pick for baseline callers).
# usage: check_isa_symbols.sh ISA LIBRARY.a
isa=$1 lib=$2
bad=$(nm -C --defined-only --extern-only "$lib" | awk 'NF >= 3 { $1 = ""; $2 = ""; sub(/^  /, ""); print }' |
      grep -v "^arshim::kernels::$isa::fill(arshim::kernels::KernelTable&)\$")
if [ -n "$bad" ]; then
  echo "$lib exports more than arshim::kernels::$isa::fill:"
  echo "$bad"
  exit 1
fi
echo "$lib: only arshim::kernels::$isa::fill is exported"
