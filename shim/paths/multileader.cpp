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

// ARShim's ring among the leader communicator's h members (one per node): a reduce-scatter then an allgather, h-1
// steps each, so every node sends and receives 2(h-1)/h of the partition, the bandwidth bound, for any h. MPICH
// 4.0.2's allreduce meets a count of ranks that is not a power of two with a step that sends the whole vector to a
// partner first and returns the result after, so the partner's link carries about twice the bound's bytes in
// sequential phases and that step runs far from the bound where a power of two runs near it
// (docs/cluster.md "Three nodes"). Block b is reduced along the ring in a fixed order and then copied to every
// member, so every rank gets the same bits, call after call. `scratch` holds one block.
int ring_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
    constexpr int kTag = 0x4152;  // the leader communicators are ARShim's own: no user message can match
    int h = 1, r = 0;
    PMPI_Comm_size(comm, &h);
    PMPI_Comm_rank(comm, &r);
    const std::size_t element = call.type.size;
    const auto first = [&](int b) { return count * static_cast<std::size_t>(b) / static_cast<std::size_t>(h); };
    const auto length = [&](int b) { return static_cast<int>(first(b + 1) - first(b)); };
    const int right = (r + 1) % h, left = (r + h - 1) % h;
    MPI_Datatype type = call.args.datatype;
    // Reduce-scatter: at step k, send block r-k (reduced by k+1 members so far), receive block r-k-1 and add ours.
    // After h-1 steps this rank holds block r+1 reduced over every member.
    for (int k = 0; k + 1 < h; ++k) {
        const int send = (r - k + h) % h, recv = (r - k - 1 + 2 * h) % h;
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kTag, scratch,
                                     length(recv), type, left, kTag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        char* block = data + first(recv) * element;
        const void* sources[2] = {block, scratch};
        call.nary(block, sources, 2, static_cast<std::size_t>(length(recv)));
        charge::reduce(static_cast<std::size_t>(length(recv)) * element);  // the SMPI build's (sim_charge.h)
    }
    // Allgather: pass the reduced blocks on around the ring, each received straight into its place.
    for (int k = 0; k + 1 < h; ++k) {
        const int send = (r + 1 - k + h) % h, recv = (r - k + h) % h;
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kTag,
                                     data + first(recv) * element, length(recv), type, left, kTag, comm,
                                     MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
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
        if (ctx.wait.phase_times) ++g_phase_times.internode_steps, ++g_phase_times.ring_steps;
        clock.chunk();
        clock.lap(&PhaseTimes::internode);
        if (rc != MPI_SUCCESS) return PathOutcome::done(rc);
    }
    return PathOutcome::done(MPI_SUCCESS);
}

}  // namespace

bool internode_takes_ring(InternodeMode mode, int nodes, uint64_t partition_bytes) {
    switch (mode) {
    case InternodeMode::ring: return true;
    case InternodeMode::library: return false;
    case InternodeMode::automatic: break;
    }
    return policy::model::internode_ring_auto(static_cast<uint32_t>(nodes), partition_bytes);
}

PathOutcome serve_multileader(const Call& call) {
    PathContext& ctx = call.ctx;
    // Decided on values identical on every rank (layout, size, settings), so every rank takes the same branch.
    if (ctx.ppn_max == 1 && ctx.node_count > 1 && call.nary != nullptr &&
        internode_takes_ring(ctx.settings->internode, ctx.node_count, call.bytes))
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
        const bool ring = internode_takes_ring(call.ctx.settings->internode, call.ctx.node_count, count * call.type.size);
        if (call.ctx.wait.phase_times) ++g_phase_times.internode_steps, g_phase_times.ring_steps += ring ? 1 : 0;
        if (ring) return ring_allreduce(static_cast<char*>(data), count, call, leader_comm, static_cast<char*>(scratch));
        return internode_allreduce(data, count, call, leader_comm);
    });
    return PathOutcome::done(rc);
}

}  // namespace arshim
