// Multi-leader (DPML) path: the node shared-memory protocol of shim/paths/node_shm.h with, across nodes, l
// concurrent MPI allreduces of n/l bytes on l leader communicators, each optionally pipelined in k MPI_Iallreduce
// pieces (DPML-Pipelined, seed 001 §4). Its per-communicator state is the node slot's (window, leader
// communicators), which the SHARP path shares.
#include <algorithm>

#include "shim/paths/node_shm.h"
#include "shim/paths/paths.h"

namespace arshim {

namespace {

constexpr uint32_t kMaxPieces = 64;

int internode_allreduce(void* data, std::size_t count, const Call& call, MPI_Comm comm) {
    const uint32_t pieces = std::clamp<uint32_t>(call.decision.pipeline_k, 1, kMaxPieces);
    if (pieces == 1 || count < pieces)
        return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, call.library_op, comm);
    MPI_Request requests[kMaxPieces];
    const std::size_t per = (count + pieces - 1) / pieces;
    int posted = 0, rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < count; first += per) {
        rc = PMPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * call.type.size,
                             static_cast<int>(std::min(per, count - first)), call.args.datatype, call.library_op,
                             comm, &requests[posted]);
        if (rc != MPI_SUCCESS) break;
        ++posted;
    }
    const int wait_rc = PMPI_Waitall(posted, requests, MPI_STATUSES_IGNORE);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

}  // namespace

PathOutcome run_multileader(const Call& call) {
    CommContext& ctx = call.ctx;
    vocab::Reason reason = vocab::Reason::path_unavailable;
    ShmState* state = node_shm(ctx, call.bytes, &reason);
    if (state == nullptr) return PathOutcome::decline(reason);
    if (call.nary == nullptr) return PathOutcome::decline(vocab::Reason::unsupported_op_type);

    // Leaders per node: at most the smallest node's rank count, so every node has leader j for every j < l and
    // non-uniform ppn needs no special case.
    const int leaders = std::clamp<int>(static_cast<int>(call.decision.leaders), 1, std::min(ctx.ppn_min, kMaxLeaders));
    MPI_Comm leader_comm = ctx.node_count > 1 ? node_leader_comm(ctx, leaders) : MPI_COMM_NULL;
    const int rc = run_node_protocol(call, *state, call.nary, leaders, [&](void* data, std::size_t count) {
        return internode_allreduce(data, count, call, leader_comm);
    });
    return PathOutcome::done(rc);
}

}  // namespace arshim
