#!/usr/bin/env bash
# The preload libraries export exactly the intended symbols (nm -D):
#  - both: MPI_Init, MPI_Init_thread, MPI_Allreduce, MPI_Pcontrol and the arshim_* query API, nothing else;
#  - Open MPI: also the Fortran manglings (its Fortran bindings call PMPI_Allreduce directly);
#  - MPICH: MPI_Allreduce_c, and NO Fortran names (its Fortran bindings call the C MPI_Allreduce: defining them
#    would intercept each Fortran call twice).
#   check_symbols.sh FLAVOR LIBRARY
set -uo pipefail
flavor=$1 lib=$2
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
fail=0
need() { grep -qx "$1" <<<"$syms" || { echo "FAIL: $lib does not export $1"; fail=1; }; }
forbid() { grep -qx "$1" <<<"$syms" && { echo "FAIL: $lib must not export $1"; fail=1; }; }
for s in MPI_Init MPI_Init_thread MPI_Allreduce MPI_Pcontrol arshim_version arshim_path_calls arshim_reason_calls; do
  need "$s"
done
fortran=(mpi_allreduce mpi_allreduce_ mpi_allreduce__ MPI_ALLREDUCE mpi_allreduce_f08_
         mpi_init mpi_init_ mpi_init__ MPI_INIT mpi_init_thread mpi_init_thread_ mpi_init_thread__ MPI_INIT_THREAD)
# Both libraries wrap the f08 init (Open MPI's and MPICH's f08 MPI_Init call PMPI_Init directly).
for s in mpi_init_f08_ mpi_init_thread_f08_; do need "$s"; done
case $flavor in
  openmpi) for s in "${fortran[@]}"; do need "$s"; done ;;
  mpich) need MPI_Allreduce_c; for s in "${fortran[@]}"; do forbid "$s"; done ;;
esac
leaked=$(grep -v -E '^(MPI_|mpi_|arshim_)' <<<"$syms")
if [[ -n $leaked ]]; then
  echo "FAIL: $lib exports internal symbols:"; head -5 <<<"$leaked"; fail=1
fi
[[ $fail -eq 0 ]] && echo "check_symbols: $flavor exports $(wc -l <<<"$syms") symbols, as intended"
exit $fail
