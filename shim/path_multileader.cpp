// Multi-leader (DPML) path: the node shared-memory protocol of node_shm.h with, across nodes, l concurrent MPI
// allreduces of n/l bytes on l leader communicators, each optionally pipelined in k MPI_Iallreduce pieces
// (DPML-Pipelined, seed 001 §4).
#include <algorithm>

#include "shim/node_shm.h"
#include "shim/simd_ops.h"

namespace arshim {

namespace {

constexpr uint32_t kMaxPieces = 64;

int internode_allreduce(void* data, std::size_t count, const PathCall& call, MPI_Op op, MPI_Comm comm) {
    const uint32_t pieces = std::clamp<uint32_t>(call.decision.pipeline_k, 1, kMaxPieces);
    if (pieces == 1 || count < pieces)
        return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, op, comm);
    MPI_Request requests[kMaxPieces];
    const std::size_t per = (count + pieces - 1) / pieces;
    int posted = 0, rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < count; first += per) {
        rc = PMPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * call.type.size,
                             static_cast<int>(std::min(per, count - first)), call.args.datatype, op, comm,
                             &requests[posted]);
        if (rc != MPI_SUCCESS) break;
        ++posted;
    }
    const int wait_rc = PMPI_Waitall(posted, requests, MPI_STATUSES_IGNORE);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

}  // namespace

PathOutcome run_multileader(const PathCall& call) {
    CommContext& ctx = call.ctx;
    stats::Reason reason = stats::Reason::path_unavailable;
    MultileaderState* state = node_shm(ctx, call.bytes, &reason);
    if (state == nullptr) return PathOutcome::decline(reason);
    const kernels::NaryFn reduce =
        kernels::active().nary[static_cast<int>(call.kop)][static_cast<int>(call.type.type)];
    if (reduce == nullptr) return PathOutcome::decline(stats::Reason::unsupported_op_type);

    // Leaders per node: at most the smallest node's rank count, so every node has leader j for every j < l and
    // non-uniform ppn needs no special case.
    const int leaders = std::clamp<int>(static_cast<int>(call.decision.leaders), 1, std::min(ctx.ppn_min, kMaxLeaders));
    MPI_Comm leader_comm = ctx.node_count > 1 ? node_leader_comm(ctx, *state, leaders) : MPI_COMM_NULL;
    MPI_Op op = call.args.op;
    if (call.decision.kernel == policy::KernelChoice::simd) {
        const MPI_Op simd = simd_op_for(call.args.op);
        if (simd != MPI_OP_NULL) op = simd;
    }
    const int rc = run_node_protocol(call, *state, reduce, leaders, [&](void* data, std::size_t count) {
        return internode_allreduce(data, count, call, op, leader_comm);
    });
    return PathOutcome::done(rc);
}

}  // namespace arshim
