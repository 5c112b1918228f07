#!/usr/bin/env bash
# One emulated-cluster integration test: HOSTS virtual hosts x PPN ranks under one MPI flavor.
#
#   cluster_test.sh FLAVOR HOSTS PPN CHECK_ALLREDUCE ARSHIM_CLUSTER
#
# 1. `arshim cluster up` (10 Gbit/s tbf links) with a watcher that tears the rig down if this script is killed;
# 2. `arshim cluster verify`: each rank's MPI_COMM_TYPE_SHARED node is its virtual host, allreduce traffic crosses
#    the links (NIC byte counters), the links are shaped;
# 3. check_allreduce (every type/op, MPI_IN_PLACE, sub-communicators; its own expected values) with ARShim preloaded
#    and each path forced: native, pipelined, multileader (expected to run where ranks share a host, and to decline
#    to native where every host has one rank);
# 4. down (trap: also on failure, INT and TERM; by PID).
# Exit 77 (skip) when not root or when network namespaces are unavailable.
set -uo pipefail
flavor=$1 hosts=$2 ppn=$3 check=$4 cluster=$5

bash "$cluster" check || exit $?   # 77 with the reason when the rig cannot run here
[[ -x $check ]] || { echo "cluster_test: $check not built" >&2; exit 1; }

# One user of this rig at a time (a second `meson test` waits here).
mkdir -p /run/arshim-cluster
exec 9>>"/run/arshim-cluster/${ARSHIM_CLUSTER_NAME:-arshim}.lock"
flock -w 900 9 || { echo "cluster_test: rig is busy" >&2; exit 1; }
export ARSHIM_CLUSTER_LOCKED=${ARSHIM_CLUSTER_NAME:-arshim}

cleanup() { bash "$cluster" down 9>&- || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failures=0
step() {  # name, command...
  local name=$1 start=$SECONDS rc=0
  shift
  echo "=== $name"
  "$@" 9>&- || rc=$?
  echo "--- $name: $([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)") in $((SECONDS - start)) s"
  [[ $rc == 0 ]] || failures=$((failures + 1))
}

step "up $hosts hosts" bash "$cluster" up --hosts "$hosts" --link 10gbit --watch $$ || true
verify_log=$(mktemp)
trap 'cleanup; rm -f "$verify_log"' EXIT
step "verify $flavor ${hosts}x$ppn" bash -c 'bash "$1" verify --mpi "$2" --ppn "$3" --bytes 2M --reps 2 > "$4" 2>&1; rc=$?
                                             cat "$4"; exit $rc' _ "$cluster" "$flavor" "$ppn" "$verify_log"
# The references verify measures beside its checks (docs/cluster.md "What the rig allows"): the library's
# point-to-point floor among one rank per host, and on three hosts or more the plain-TCP ring.
references_printed() {
  grep -q "$flavor: point-to-point among one rank per host, the bound's bytes: one stream [0-9.]* ms = [0-9.]* x the bound, $((2 * (hosts - 1))) blocking ring steps [0-9.]* ms = [0-9.]* x" "$verify_log" ||
    { echo "cluster_test: verify printed no point-to-point floor" >&2; return 1; }
  ((hosts < 3)) || grep -q "TCP ring reference over $hosts hosts: .* = [0-9.]* x the allreduce bound" "$verify_log" ||
    { echo "cluster_test: verify printed no TCP ring reference" >&2; return 1; }
}
step "verify's references $flavor ${hosts}x$ppn" references_printed
((failures)) && exit 1

common=(-x "CHECK_FLAVOR=$flavor" -x CHECK_EXPECT_SHIM=1 -x ARSHIM_LOG=warn)
for path in native pipelined multileader reproducible; do
  vars=("${common[@]}" -x "ARSHIM_PATH=$path")
  large=20011
  case $path in
    pipelined) vars+=(-x ARSHIM_SEGMENT_BYTES=16K -x CHECK_EXPECT_PATH=pipelined) ;;
    multileader)
      # several ranks per host: real node shared memory + inter-node leader allreduces (2 leaders, 3 pieces);
      # one rank per host: on 3 hosts the calls from 64 KiB go round ARShim's ring over the ranks, on 2 the path
      # declines (one_rank_per_node) and the calls run native, still checked (the large case, 300007 elements,
      # spans several 1 MiB multi-node chunks, or ring chunks of 3 MiB)
      large=300007
      if ((ppn > 1)); then
        vars+=(-x ARSHIM_LEADERS=2 -x ARSHIM_PIPELINE_K=3 -x CHECK_EXPECT_PATH=multileader)
      elif ((hosts == 3)); then
        vars+=(-x CHECK_EXPECT_PATH=multileader)
      fi ;;
    reproducible)
      # in rank order: the chain of node leaders over real shared memory and links (several ranks per host), or
      # gather / exchange (one rank per host)
      vars+=(-x ARSHIM_LEADERS=2 -x CHECK_EXPECT_PATH=reproducible)
      large=300007 ;;
  esac
  step "check_allreduce $flavor ${hosts}x$ppn ARSHIM_PATH=$path" \
    bash "$cluster" run --mpi "$flavor" --ppn "$ppn" --timeout 150 "${vars[@]}" -- "$check" --quick --subcomms \
      --large "$large"
done

# The multi-leader path's inter-node step on ARShim's ring over the rig's links (ARSHIM_INTERNODE=ring; auto takes it
# on node counts that are not a power of two), results checked; with one rank per host every call goes round it.
step "check_allreduce $flavor ${hosts}x$ppn multileader, inter-node ring" \
  bash "$cluster" run --mpi "$flavor" --ppn "$ppn" --timeout 150 "${common[@]}" -x ARSHIM_PATH=multileader \
    -x ARSHIM_LEADERS=2 -x ARSHIM_INTERNODE=ring -x CHECK_EXPECT_PATH=multileader -- "$check" --quick --large 300007

# The links' MTU (shape --mtu): set on every interface, shown by status, a bad value refused with exit 2 and nothing
# changed; back to 1500 afterwards.
mtu_check() {
  bash "$cluster" shape --mtu 9000 || return 1
  local shown  # whole outputs first: grep -q closing a pipe early fails the pipeline under pipefail
  shown=$(bash "$cluster" status)
  grep -q "mtu 9000" <<<"$shown" || { echo "status does not show mtu 9000"; return 1; }
  shown=$(ip -n "${ARSHIM_CLUSTER_NAME:-arshim}-h0" link show arsh0)
  grep -q "mtu 9000" <<<"$shown" || { echo "h0's NIC is not at 9000"; return 1; }
  local rc=0
  bash "$cluster" shape --mtu 80 2>/dev/null || rc=$?
  [[ $rc == 2 ]] || { echo "shape --mtu 80: exit $rc, expected 2"; return 1; }
  shown=$(bash "$cluster" status)
  grep -q "mtu 9000" <<<"$shown" || { echo "a refused MTU changed the rig"; return 1; }
  bash "$cluster" shape --mtu 1500
}
step "links' MTU" mtu_check

# MPICH + UCX over TCP hangs in MPI_Finalize in about half of the 2x2 runs without the rig's finalize helper
# (docs/cluster.md): five more short runs, each bounded, must all finish.
if [[ $flavor == mpich ]] && ((ppn > 1)); then
  probe=$(dirname "$check")/../../tools/cluster/cluster_probe-mpich
  finalize_runs() {
    local i
    for i in 1 2 3 4 5; do
      bash "$cluster" run --mpi mpich --ppn "$ppn" --native --timeout 30 -- "$probe" --bytes 64K --reps 1 \
        >/dev/null || { echo "finalize run $i did not finish"; return 1; }
    done
  }
  step "MPI_Finalize x5 mpich ${hosts}x$ppn" finalize_runs
fi

# Nothing may be left on the hosts (a hang would have been killed by the run's timeout and cleaned by PID).
left=$(bash "$cluster" status | grep -c 'processes:' || true)
[[ $left == 0 ]] || { echo "cluster_test: processes left on the virtual hosts"; failures=$((failures + 1)); }

if ((failures)); then
  echo "cluster_test: $failures step(s) failed"
  exit 1
fi
echo "cluster_test: $flavor ${hosts}x$ppn: all steps passed"
