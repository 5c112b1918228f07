#!/usr/bin/env bash
# Runs an MPI program under one MPI flavor, optionally with ARShim preloaded, with the settings an oversubscribed
# 2-core machine needs. Used by the MPI integration tests and the examples.
#
#   mpirun.sh FLAVOR NP SHIM_LIB|none [VAR=VALUE ...] -- PROGRAM [ARGS...]
#
# VAR=VALUE pairs are exported to every rank (-x / -genv). Under MPICH the test-only yield helper
# ($ARSHIM_TEST_YIELD_LIB) is preloaded too, so busy-polling ranks give up the CPU.
#
# FLAVOR abi-mpich / abi-openmpi: a program of the MPI standard ABI (linked to libmpi_abi.so.1) under that MPI's
# launcher, with that MPI's implementation of the ABI ($ARSHIM_TEST_ABI_IMPL, a file) loaded as libmpi_abi.so.1:
# several MPIs install one (Debian forky: MPICH 5 and Open MPI 6), and ldconfig points the name at one of them.
set -euo pipefail
flavor=$1 np=$2 shim=$3
shift 3
vars=()
while [[ $# -gt 0 && $1 != -- ]]; do vars+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
preload=()
[[ $shim != none ]] && preload+=("$shim")
timeout_s=${ARSHIM_TEST_TIMEOUT:-240}
yield_lib=${ARSHIM_TEST_YIELD_LIB:-}
abi_impl=${ARSHIM_TEST_ABI_IMPL:-}
# Harness variables are not ARShim settings: keep them out of the ranks' environment (hydra forwards everything).
unset ARSHIM_TEST_YIELD_LIB ARSHIM_TEST_TIMEOUT ARSHIM_TEST_ABI_IMPL
abi_dir=
if [[ $flavor == abi-* ]]; then
  [[ -f $abi_impl ]] || { echo "mpirun.sh: $flavor needs ARSHIM_TEST_ABI_IMPL, the MPI's libmpi_abi file (got '$abi_impl')" >&2; exit 2; }
  abi_dir=$(mktemp -d)
  trap 'rm -rf "$abi_dir"' EXIT
  ln -s "$abi_impl" "$abi_dir/libmpi_abi.so.1"
  vars+=("LD_LIBRARY_PATH=$abi_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  flavor=${flavor#abi-}
  run() { timeout -k 10 "$timeout_s" "$@"; }  # not exec: the directory is removed after the run
else
  run() { exec timeout -k 10 "$timeout_s" "$@"; }
fi
case $flavor in
  openmpi)
    args=(--oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --bind-to none -n "$np")
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    [[ ${#preload[@]} -gt 0 ]] && args+=(-x "LD_PRELOAD=$(IFS=:; echo "${preload[*]}")")
    for v in "${vars[@]}"; do args+=(-x "$v"); done
    run mpirun.openmpi "${args[@]}" "$@"
    ;;
  mpich)
    [[ -n $yield_lib ]] && preload+=("$yield_lib")
    args=(-n "$np")
    [[ ${#preload[@]} -gt 0 ]] && args+=(-genv LD_PRELOAD "$(IFS=:; echo "${preload[*]}")")
    for v in "${vars[@]}"; do args+=(-genv "${v%%=*}" "${v#*=}"); done
    run mpirun.mpich "${args[@]}" "$@"
    ;;
  *) echo "mpirun.sh: unknown MPI flavor '$flavor' (allowed: mpich, openmpi, abi-mpich, abi-openmpi)" >&2; exit 2 ;;
esac
