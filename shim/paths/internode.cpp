// ARShim's own inter-node steps (shim/paths/internode.h).
#include "shim/paths/internode.h"

#include <cstring>

#include "shim/base/sim_charge.h"

namespace arshim {

namespace {

constexpr int kRingTag = 0x4152;      // the leader communicators are ARShim's own: no user message can match
constexpr int kDoublingTag = 0x4153;  // (a separate tag keeps a mix-up between the two loud, not silent)

}  // namespace

InternodeStep internode_step(InternodeMode mode, int nodes, uint64_t partition_bytes, int leaders) {
    switch (mode) {
    case InternodeMode::library: return InternodeStep::library;
    case InternodeMode::ring: return InternodeStep::ring;
    case InternodeMode::doubling: return InternodeStep::doubling;
    case InternodeMode::automatic: break;
    }
    return policy::model::internode_step_auto(static_cast<uint32_t>(nodes > 0 ? nodes : 1), partition_bytes,
                                              static_cast<uint32_t>(leaders > 0 ? leaders : 1));
}

// A reduce-scatter then an allgather, h-1 steps each, so every node sends and receives 2(h-1)/h of the partition,
// the bandwidth bound, for any h. MPICH 4.0.2's allreduce meets a count of ranks that is not a power of two with a
// step that sends the whole vector to a partner first and returns the result after, so the partner's link carries
// about twice the bound's bytes in sequential phases and that step runs far from the bound where a power of two runs
// near it (docs/cluster.md "Three nodes"). Block b is reduced along the ring in a fixed order and then copied to every
// member, so every rank gets the same bits, call after call.
int ring_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
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
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kRingTag, scratch,
                                     length(recv), type, left, kRingTag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        char* block = data + first(recv) * element;
        const void* sources[2] = {block, scratch};
        call.nary(block, sources, 2, static_cast<std::size_t>(length(recv)));
        charge::reduce(static_cast<std::size_t>(length(recv)) * element);  // the SMPI build's (sim_charge.h)
    }
    // Allgather: pass the reduced blocks on around the ring, each received straight into its place.
    for (int k = 0; k + 1 < h; ++k) {
        const int send = (r + 1 - k + h) % h, recv = (r - k + h) % h;
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kRingTag,
                                     data + first(recv) * element, length(recv), type, left, kRingTag, comm,
                                     MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

// log2 h exchanges of the whole vector where MPICH 4.0.2's blocking allreduce takes reduce-scatter + allgather (2 log2 h
// latencies) from 16 bytes and Open MPI 4.1's takes a reduce then a broadcast (2 log2 h in a row) at 256 ranks and more
// below 4 KiB: for the small vectors this step is given, latency is the cost (docs/scale.md "Small calls at hundreds of
// nodes"). The members' order is the communicator's (the nodes' order), and each exchange joins two contiguous
// blocks of members: reducing the lower block's vector first gives both partners the same bits, so every member ends
// with the same result, the same on every rerun of the same layout.
int doubling_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
    int h = 1, r = 0;
    PMPI_Comm_size(comm, &h);
    PMPI_Comm_rank(comm, &r);
    if (h < 2 || count == 0) return MPI_SUCCESS;
    const std::size_t bytes = count * call.type.size;
    const int n = static_cast<int>(bytes);  // a latency-path vector or a partition of one chunk: far below 2 GiB
    // Folds `received` (from the member below when `from_lower`) and `data` into `data`, lower block first.
    auto fold = [&](bool from_lower) {
        const void* sources[2] = {from_lower ? scratch : data, from_lower ? data : scratch};
        call.nary(data, sources, 2, count);
        charge::reduce(bytes);  // the SMPI build's (sim_charge.h)
    };
    int pof2 = 1;
    while (pof2 * 2 <= h) pof2 *= 2;
    const int rem = h - pof2;
    // Members below 2 rem pair up (2i, 2i+1): the even one hands its vector over, sits the exchanges out and gets the
    // result back; the odd one continues as number i. Members from 2 rem on continue as r - rem.
    int number = r - rem;
    int rc = MPI_SUCCESS;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            rc = PMPI_Send(data, n, MPI_BYTE, r + 1, kDoublingTag, comm);
            if (rc == MPI_SUCCESS) rc = PMPI_Recv(data, n, MPI_BYTE, r + 1, kDoublingTag, comm, MPI_STATUS_IGNORE);
            return rc;
        }
        rc = PMPI_Recv(scratch, n, MPI_BYTE, r - 1, kDoublingTag, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) fold(/*from_lower=*/true);
        number = r / 2;
    }
    auto member = [rem](int v) { return v < rem ? 2 * v + 1 : v + rem; };  // the rank of number v
    for (int distance = 1; distance < pof2 && rc == MPI_SUCCESS; distance *= 2) {
        const int partner_number = number ^ distance;
        const int partner = member(partner_number);
        rc = PMPI_Sendrecv(data, n, MPI_BYTE, partner, kDoublingTag, scratch, n, MPI_BYTE, partner, kDoublingTag,
                           comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) fold(/*from_lower=*/partner_number < number);
    }
    // The folded-in even member waits for its result even after an error here (it would hang otherwise); what it
    // gets is then this member's partial vector, and the error code is this member's.
    if (r < 2 * rem) {
        const int back = PMPI_Send(data, n, MPI_BYTE, r - 1, kDoublingTag, comm);
        if (rc == MPI_SUCCESS) rc = back;
    }
    return rc;
}

int run_internode_step(InternodeStep step, char* data, std::size_t count, const Call& call, MPI_Comm comm,
                       char* scratch) {
    switch (step) {
    case InternodeStep::ring: return ring_allreduce(data, count, call, comm, scratch);
    case InternodeStep::doubling: return doubling_allreduce(data, count, call, comm, scratch);
    case InternodeStep::library: break;
    }
    return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, call.library_op, comm);
}

}  // namespace arshim
