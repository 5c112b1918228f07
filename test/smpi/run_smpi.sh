#!/bin/sh
# Runs one SMPI simulation of the CI test (test/smpi/meson.build):
#   run_smpi.sh SMPIRUN SELECTOR PLATFORM HOSTFILE NP [VAR=value ...] -- PROGRAM [ARGS...]
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
[ "$selector" = ompi ] && export CHECK_NO_ZERO=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arshim-smpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
export TMPDIR="$tmp" GLIBC_TUNABLES=glibc.rtld.optional_static_tls=2097152
cd "$tmp" || exit 1
timeout 150 "$smpirun" -np "$np" -platform "$platform" -hostfile "$hostfile" \
  --cfg=smpi/coll-selector:"$selector" --log=root.thres:warning "$@"
