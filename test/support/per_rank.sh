#!/bin/sh
# TEST CODE ONLY: gives each rank of one launch its own environment, what an MPMD command line (`A : B`) gives each
# section, without one: Debian 13's mpirun.openmpi (Open MPI 5.0.7, PRRTE 3.0.8) crashes on any MPMD line
# (open-mpi/ompi#13303), with or without ARShim.
#
#   mpirun -n N per_rank.sh SETTINGS_0 SETTINGS_1 ... SETTINGS_N-1 -- PROGRAM ARGS...
#
# SETTINGS_i: the variables rank i gets, as comma-separated VAR=VALUE (values without commas), or "-" for none. The
# rank is read from the launcher's variable (Open MPI: OMPI_COMM_WORLD_RANK; Hydra: PMI_RANK; PMIx: PMIX_RANK).
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-}}}
[ -n "$rank" ] || { echo "per_rank.sh: no rank variable (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK)" >&2; exit 2; }
i=0
mine=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  [ "$i" -eq "$rank" ] && mine=$1
  i=$((i + 1))
  shift
done
[ "${1:-}" = -- ] || { echo "per_rank.sh: no -- before the program" >&2; exit 2; }
shift
[ "$rank" -lt "$i" ] || { echo "per_rank.sh: rank $rank has no settings ($i given)" >&2; exit 2; }
if [ "$mine" != - ]; then
  old_ifs=$IFS
  IFS=,
  for assignment in $mine; do
    export "$assignment"
  done
  IFS=$old_ifs
fi
exec "$@"
