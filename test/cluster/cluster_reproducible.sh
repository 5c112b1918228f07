#!/usr/bin/env bash
# ARSHIM_REPRODUCIBLE=layout on the emulated cluster (docs/reproducible.md): check_reproducible's digests (every
# floating-point type, SUM and PROD, wide exponent range) are the same on 2 hosts x 2 ranks, on 4 hosts x 1 rank and
# on one node, under MPICH and Open MPI; each run also checks itself against the rank-order fold.
#
#   cluster_reproducible.sh ARSHIM_CLUSTER CHECK_REPRODUCIBLE_MPICH CHECK_REPRODUCIBLE_OPENMPI SHIM_MPICH SHIM_OPENMPI
# Exit 77 (skip) when not root or when network namespaces are unavailable.
set -uo pipefail
cluster=$1 prog_mpich=$2 prog_openmpi=$3 shim_mpich=$4 shim_openmpi=$5
mpirun_sh=$(cd "$(dirname "$0")" && pwd)/../mpi/mpirun.sh
bash "$cluster" check || exit $?
mkdir -p /run/arshim-cluster
exec 9>>"/run/arshim-cluster/${ARSHIM_CLUSTER_NAME:-arshim}.lock"
flock -w 900 9 || { echo "cluster_reproducible: rig is busy" >&2; exit 1; }
export ARSHIM_CLUSTER_LOCKED=${ARSHIM_CLUSTER_NAME:-arshim}
trap 'bash "$cluster" down 9>&- || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail=0
counts=1,7,1000,100003
work=$(mktemp -d /tmp/arshim-cluster-repro.XXXXXX)
trap 'bash "$cluster" down 9>&- || true; rm -rf "$work"' EXIT
# One node first: the reference.
reference=$(ARSHIM_TEST_TIMEOUT=200 "$mpirun_sh" mpich 4 "$shim_mpich" ARSHIM_REPRODUCIBLE=layout -- "$prog_mpich" \
            --mode layout --counts $counts 2>&1 | grep '^digest')
[[ -n $reference ]] || { echo "FAIL: no digests on one node"; exit 1; }
echo "ok: one node, mpich: $(wc -l <<<"$reference") digests"
for topology in "2 2" "4 1"; do
  read -r hosts ppn <<<"$topology"
  bash "$cluster" up --hosts "$hosts" --link 10gbit --watch $$ 9>&- >/dev/null || { echo "FAIL: cluster up $hosts"; exit 1; }
  for flavor in mpich openmpi; do
    prog=$prog_mpich
    [[ $flavor == openmpi ]] && prog=$prog_openmpi
    stats=$work/stats-$flavor-$hosts.json  # /tmp is shared by the rig's hosts (only /dev/shm and /etc/hosts are not)
    out=$(bash "$cluster" run --mpi "$flavor" --ppn "$ppn" --timeout 200 -x ARSHIM_REPRODUCIBLE=layout \
          -x ARSHIM_STATS="$stats" -x ARSHIM_STATS_SUMMARY=0 -- "$prog" --mode layout --counts $counts 9>&- 2>&1)
    rc=$?
    digests=$(grep '^digest' <<<"$out")
    if [[ $rc -ne 0 ]] || ! grep -q "all results as expected" <<<"$out"; then
      echo "FAIL: $flavor on $hosts hosts x $ppn: not the rank-order fold (exit $rc)"; sed 's/^/    /' <<<"$out" | tail -20
      fail=1
    elif [[ $digests != "$reference" ]]; then
      echo "FAIL: $flavor on $hosts hosts x $ppn: other bits than on one node"
      diff <(echo "$reference") <(echo "$digests") | head -10
      fail=1
    elif ! python3 -c 'import json, sys; log = json.load(open(sys.argv[1]))
sys.exit(0 if sum(p["calls"] for p in log["paths"] if p["path"] == "reproducible") > 0 else 1)' "$stats"; then
      echo "FAIL: $flavor on $hosts hosts x $ppn: the reproducible path served nothing"; fail=1
    else
      echo "ok: $flavor on $hosts hosts x $ppn: the same bits as on one node"
    fi
  done
  bash "$cluster" down 9>&- >/dev/null || true
done
exit $fail
