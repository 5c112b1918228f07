// Multi-leader (DPML) path: the node shared-memory protocol of shim/paths/node_shm.h with, across nodes, l
// concurrent MPI allreduces of n/l bytes on l leader communicators, each optionally pipelined in k MPI_Iallreduce
// pieces (DPML-Pipelined, seed 001 §4). Its per-communicator state is the node slot's (window, leader
// communicators), which the SHARP path shares.
#include <algorithm>
#include <cstring>
#include <vector>

#include "policy/cost_model.h"
#include "shim/base/library_nb.h"
#include "shim/base/mpi_util.h"
#include "shim/base/sim_charge.h"
#include "shim/paths/internode.h"
#include "shim/paths/node_shm.h"
#include "shim/paths/paths.h"

namespace arshim {

namespace {

constexpr uint32_t kMaxPieces = 64;

int internode_allreduce(void* data, std::size_t count, const Call& call, MPI_Comm comm) {
    const uint32_t pieces = std::clamp<uint32_t>(call.decision.get<policy::MultileaderParams>().pipeline_k, 1, kMaxPieces);
    if (pieces == 1 || count < pieces)
        return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, call.library_op, comm);
    MPI_Request requests[kMaxPieces];
    const std::size_t per = (count + pieces - 1) / pieces;
    int posted = 0, rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < count; first += per) {
        rc = library_iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * call.type.size,
                             static_cast<int>(std::min(per, count - first)), call.args.datatype, call.library_op,
                             comm, &requests[posted]);
        if (rc != MPI_SUCCESS) break;
        ++posted;
    }
    const int wait_rc = library_waitall(posted, requests);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

// One rank per node (ppn 1 on every node): no node phase, so the node window is not built (node_shm() declines),
// and on the node counts where the inter-node step takes ARShim's ring the whole call goes round it among all ranks:
// the libraries and the pipelined path fold the ranks beyond a power of two in and out there, which the ring, at the
// bandwidth bound for any count, avoids (docs/cluster.md "One rank per node on three nodes"). The ring runs on a
// private split of the user's communicator, so its point-to-point messages never meet the user's, in chunks whose
// blocks fit a fixed scratch buffer (made on the first call, never grown: the hot path allocates nothing).
constexpr std::size_t kOneRankRingBlock = policy::model::kOneRankRingBlockBytes;  // the cost model's too

struct OneRankRing : PathState {
    MPI_Comm comm = MPI_COMM_NULL;
    bool failed = false;  // the communicator could not be made (agreed): the path declines, never tries again
    std::vector<char> scratch;
    ~OneRankRing() override {
        if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
    }
};

PathOutcome run_one_rank_ring(const Call& call) {
    PathContext& ctx = call.ctx;
    OneRankRing& ring = ctx.ensure_slot<OneRankRing>(PathSlot::multileader);
    if (ring.failed) return PathOutcome::decline(vocab::Reason::path_unavailable);
    if (ring.comm == MPI_COMM_NULL) {  // collective: every rank takes this path in the same call (identical values)
        if (!ctx.admit()) return PathOutcome::decline(vocab::Reason::comm_limit);  // ARSHIM_MAX_COMMS
        // A split, not MPI_Comm_dup: a duplicate would run the copy callbacks of the user's attributes on the
        // user's communicator (and their delete callbacks when ARShim frees it); a split copies none.
        const int rc = comm_split_twice(ctx.comm, 0, ctx.rank, &ring.comm);  // twice: shim/base/mpi_util.h
        // Agreed: when a rank could not make it (no communicator id left), every rank declines alike.
        if (!made_on_all_ranks(rc, &ring.comm, ctx.comm)) {
            ring.failed = true;
            return PathOutcome::decline(vocab::Reason::path_unavailable);
        }
        ring.scratch.resize(kOneRankRingBlock);
    }
    const std::size_t element = call.type.size;
    const std::size_t count = static_cast<std::size_t>(call.args.count);
    char* data = static_cast<char*>(call.args.recvbuf);
    if (call.args.sendbuf != MPI_IN_PLACE && count > 0) {
        std::memcpy(data, call.args.sendbuf, count * element);
        charge::copy(count * element);
    }
    // A chunk of h blocks of at most kOneRankRingBlock bytes each (ring_allreduce's blocks are count / h elements).
    const std::size_t chunk = std::max<std::size_t>(1, kOneRankRingBlock / element) * static_cast<std::size_t>(ctx.size);
    PhaseClock clock(ctx.wait);
    for (std::size_t first = 0; first < count; first += chunk) {
        const int rc = ring_allreduce(data + first * element, std::min(chunk, count - first), call, ring.comm,
                                      ring.scratch.data());
        count_internode_step(ctx.wait, InternodeStep::ring);
        clock.chunk();
        clock.lap(&PhaseTimes::internode);
        if (rc != MPI_SUCCESS) return PathOutcome::done(rc);
    }
    return PathOutcome::done(MPI_SUCCESS);
}

}  // namespace

PathOutcome serve_multileader(const Call& call) {
    PathContext& ctx = call.ctx;
    // Decided on values identical on every rank (layout, size, settings), so every rank takes the same branch.
    if (ctx.ppn_max == 1 && ctx.node_count > 1 && call.nary != nullptr &&
        internode_step(ctx.settings->internode, ctx.node_count, call.bytes) == InternodeStep::ring)
        return run_one_rank_ring(call);
    vocab::Reason reason = vocab::Reason::path_unavailable;
    ShmState* state = node_shm(ctx, call.bytes, &reason);
    if (state == nullptr) return PathOutcome::decline(reason);
    if (call.nary == nullptr) return PathOutcome::decline(vocab::Reason::unsupported_op_type);

    // Leaders per node: at most the smallest node's rank count, so every node has leader j for every j < l and
    // non-uniform ppn needs no special case.
    const int leaders = std::clamp<int>(static_cast<int>(call.decision.get<policy::MultileaderParams>().leaders), 1, std::min(ctx.ppn_min, kMaxLeaders));
    MPI_Comm leader_comm = MPI_COMM_NULL;
    if (ctx.node_count > 1 && !node_leader_comm(ctx, leaders, &leader_comm))
        return PathOutcome::decline(vocab::Reason::path_unavailable);
    const int rc = run_node_protocol(call, *state, call.nary, leaders, [&](void* data, std::size_t count, void* scratch) {
        const InternodeStep step =
            internode_step(call.ctx.settings->internode, call.ctx.node_count, count * call.type.size, leaders);
        count_internode_step(call.ctx.wait, step);
        if (step == InternodeStep::library) return internode_allreduce(data, count, call, leader_comm);
        return run_internode_step(step, static_cast<char*>(data), count, call, leader_comm, static_cast<char*>(scratch));
    });
    return PathOutcome::done(rc);
}

}  // namespace arshim
