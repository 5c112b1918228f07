#!/usr/bin/env bash
# Runs an MPI program under one MPI flavor, optionally with ARShim preloaded, with the settings an oversubscribed
# 2-core machine needs. Used by the MPI integration tests and the examples.
#
#   mpirun.sh FLAVOR NP SHIM_LIB|none [VAR=VALUE ...] -- PROGRAM [ARGS...]
#
# VAR=VALUE pairs are exported to every rank (-x / -genv). Under MPICH the test-only yield helper
# ($ARSHIM_TEST_YIELD_LIB) is preloaded too, so busy-polling ranks give up the CPU.
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
# Harness variables are not ARShim settings: keep them out of the ranks' environment (hydra forwards everything).
unset ARSHIM_TEST_YIELD_LIB ARSHIM_TEST_TIMEOUT
case $flavor in
  openmpi)
    args=(--oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader --bind-to none -n "$np")
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    [[ ${#preload[@]} -gt 0 ]] && args+=(-x "LD_PRELOAD=$(IFS=:; echo "${preload[*]}")")
    for v in "${vars[@]}"; do args+=(-x "$v"); done
    exec timeout -k 10 "$timeout_s" mpirun.openmpi "${args[@]}" "$@"
    ;;
  mpich|abi)  # abi: a program of the MPI standard ABI, under the launcher of MPICH 5 (Hydra) behind it
    [[ -n $yield_lib ]] && preload+=("$yield_lib")
    args=(-n "$np")
    [[ ${#preload[@]} -gt 0 ]] && args+=(-genv LD_PRELOAD "$(IFS=:; echo "${preload[*]}")")
    for v in "${vars[@]}"; do args+=(-genv "${v%%=*}" "${v#*=}"); done
    exec timeout -k 10 "$timeout_s" mpirun.mpich "${args[@]}" "$@"
    ;;
  *) echo "mpirun.sh: unknown MPI flavor '$flavor' (allowed: mpich, openmpi, abi)" >&2; exit 2 ;;
esac
