#!/bin/sh
# Runs one SMPI simulation of the CI test (test/smpi/meson.build):
#   run_smpi.sh SMPIRUN SELECTOR PLATFORM HOSTFILE NP [VAR=value ...] -- PROGRAM [ARGS...]
# (SMPI_CHECK_RANKS=64 in the environment: 64 ranks on 16 hosts instead, below.)
# SELECTOR is SMPI's collective selector (mpich or ompi). Under ompi, CHECK_NO_ZERO=1: SimGrid 3.32's ompi selector
# dies of a division by zero on a 0-element MPI_Allreduce (test/smpi/check_smpi.c). The per-rank copies of the
# program and smpirun's unrolled hostfile go to a private directory, removed at the end. GLIBC_TUNABLES: each rank's
# copy of the program needs its own static TLS (ARShim's initial-exec thread_locals), more than glibc's surplus.
set -u
smpirun=$1 selector=$2 platform=$3 hostfile=$4 np=$5
shift 5
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  export "$1"
  shift
done
[ $# -gt 0 ] && shift
# SMPI_CHECK_RANKS=64 (tools/checks/smpi_64ranks.sh): the same case on 16 hosts of cluster16x8.xml with 64 ranks,
# 4 per host (for hosts4x4.txt) or 1 to 8 (hosts_uneven64.txt, for hosts_uneven.txt).
if [ "${SMPI_CHECK_RANKS:-16}" = 64 ]; then
  dir=$(dirname "$platform")
  platform=$dir/cluster16x8.xml np=64
  case $(basename "$hostfile") in
    hosts_uneven.txt) hostfile=$dir/hosts_uneven64.txt ;;
    *) hostfile=$dir/hosts16x4.txt ;;
  esac
fi
[ "$selector" = ompi ] && export CHECK_NO_ZERO=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arshim-smpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
export TMPDIR="$tmp" GLIBC_TUNABLES=glibc.rtld.optional_static_tls=2097152
cd "$tmp" || exit 1
timeout 150 "$smpirun" -np "$np" -platform "$platform" -hostfile "$hostfile" \
  --cfg=smpi/coll-selector:"$selector" --log=root.thres:warning "$@"
