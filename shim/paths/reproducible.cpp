// The reproducible path (ARSHIM_REPRODUCIBLE, docs/reproducible.md): every element's result is the left fold in
// communicator rank order, ((x0 + x1) + x2) + ... + x(p-1), computed by the n-ary kernels (which fold their sources
// in the order given, bitwise alike on every ISA), so the bits depend on nothing but the data: not on the path's
// parameters, the node layout, the ISA or the MPI library. The library never reduces these calls; it only moves
// bytes (MPI_BYTE).
//
// Three ways to get every rank's contribution of an element to one place, in rank order:
//   gather    every rank receives every contribution (allgather) and folds locally: p x n bytes in, one round; small
//             vectors.
//   exchange  rank r receives partition r of every rank (alltoall), folds it, and the folded partitions are shared
//             (allgather): the bytes of a reduce-scatter + allgather (Rabenseifner), for any layout.
//   node      through the node's shared-memory window (shim/paths/node_shm.h): on one node, the multi-leader
//             protocol, which folds in node-rank order = communicator rank order; on several nodes whose ranks are
//             contiguous (node 0 holds ranks 0..a, node 1 the next ones, ...), a chain: leader j of node k receives
//             the fold of nodes 0..k-1 for its partition from leader j of node k-1, folds its node's ranks into it
//             in order and passes it on; the last node has the final fold and sends it back down the chain. Two
//             chunks are in flight, so the forward and the backward direction of each link carry data at once: about
//             n bytes per link and direction, like the best allreduce (a ring moves 2 (N-1)/N n).
// ARSHIM_REPRODUCIBLE=any-np turns float and double SUM into exact integer sums first (kernels/binned.h) and runs
// the same algorithms on the accumulators, whose addition is exact: the result no longer depends on p either.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <vector>

#include "kernels/binned.h"
#include "policy/paths/latency.h"
#include "shim/paths/node_shm.h"
#include "shim/paths/paths.h"

namespace arshim {

namespace {

constexpr int kForwardTag = 0x4152;   // the fold of the nodes before, going up the chain
constexpr int kBackwardTag = 0x4153;  // the final fold, going down
// Scratch memory bound per step (gather: p contributions of a segment; exchange: p partitions of a segment).
constexpr std::size_t kScratchBytes = std::size_t{32} << 20;

// The path's per-communicator slot: scratch memory, grown on demand and kept.
struct ReproState : PathState {
    std::vector<char> gathered, part, accumulators, magnitudes;
    std::vector<char> partial[kShmBuffers];  // the chain: a leader's folds in flight up the chain
    std::vector<int> counts, displs, part_counts, part_displs;
    std::vector<const void*> sources;
};

// At least `bytes`, with room for the bucket's larger calls (vocab::bucket_room): grown on a bucket's first call only.
char* room(std::vector<char>& buffer, std::size_t bytes) {
    if (buffer.size() < bytes) buffer.resize(vocab::bucket_room(bytes));
    return buffer.data();
}

// One rank-order reduction of `count` elements of `size` bytes from `in` into `out` (which may be `in`).
struct Fold {
    const char* in;
    char* out;
    std::size_t count;
    std::size_t size;
    kernels::NaryFn fold;
};

int gather_fold(PathContext& ctx, ReproState& rs, const Fold& f) {
    const auto p = static_cast<std::size_t>(ctx.size);
    const std::size_t per_step = std::max<std::size_t>(1, std::min<std::size_t>(kScratchBytes / (p * f.size),
                                                                                 INT_MAX / f.size));
    rs.sources.resize(p);
    int rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < f.count && rc == MPI_SUCCESS; first += per_step) {
        const std::size_t n = std::min(per_step, f.count - first), bytes = n * f.size;
        char* all = room(rs.gathered, p * bytes);
        rc = PMPI_Allgather(f.in + first * f.size, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                            MPI_BYTE, ctx.comm);
        for (std::size_t r = 0; r < p; ++r) rs.sources[r] = all + r * bytes;
        if (rc == MPI_SUCCESS) {
            f.fold(f.out + first * f.size, rs.sources.data(), p, n);
            charge::nary(bytes, p);  // the SMPI build's simulated time (shim/base/sim_charge.h); else nothing
        }
    }
    return rc;
}

int exchange_fold(PathContext& ctx, ReproState& rs, const Fold& f) {
    const auto p = static_cast<std::size_t>(ctx.size);
    const auto me = static_cast<std::size_t>(ctx.rank);
    const std::size_t per_step = std::max<std::size_t>(p, std::min<std::size_t>(kScratchBytes / f.size,
                                                                                 INT_MAX / f.size));
    rs.counts.resize(p), rs.displs.resize(p), rs.part_counts.resize(p), rs.part_displs.resize(p);
    rs.sources.resize(p);
    int rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < f.count && rc == MPI_SUCCESS; first += per_step) {
        const std::size_t n = std::min(per_step, f.count - first);
        // Partition r of this step: n / p elements, the first n % p partitions one more.
        for (std::size_t r = 0; r < p; ++r) {
            const std::size_t start = r * (n / p) + std::min(r, n % p), length = n / p + (r < n % p ? 1 : 0);
            rs.counts[r] = static_cast<int>(length * f.size);
            rs.displs[r] = static_cast<int>(start * f.size);
        }
        const std::size_t mine = static_cast<std::size_t>(rs.counts[me]);  // bytes of my partition
        for (std::size_t r = 0; r < p; ++r) {
            rs.part_counts[r] = static_cast<int>(mine);
            rs.part_displs[r] = static_cast<int>(r * mine);
        }
        char* parts = room(rs.gathered, p * mine + 1);
        char* folded = room(rs.part, mine + 1);
        rc = PMPI_Alltoallv(f.in + first * f.size, rs.counts.data(), rs.displs.data(), MPI_BYTE, parts,
                            rs.part_counts.data(), rs.part_displs.data(), MPI_BYTE, ctx.comm);
        if (rc != MPI_SUCCESS) break;
        for (std::size_t r = 0; r < p; ++r) rs.sources[r] = parts + r * mine;
        f.fold(folded, rs.sources.data(), p, mine / f.size);
        charge::nary(mine, p);
        rc = PMPI_Allgatherv(folded, static_cast<int>(mine), MPI_BYTE, f.out + first * f.size, rs.counts.data(),
                             rs.displs.data(), MPI_BYTE, ctx.comm);
    }
    return rc;
}

// The chain over the leaders of contiguous nodes (see the top of the file). Every rank copies its chunks into the
// node window and the reduced chunks out, as in the multi-leader protocol (node_shm.h: arrived / reduced / copied
// sequence numbers, published waking: a rank of the window's next call, on the multi-leader path, may sleep on
// them); leader j folds partition j of each chunk, with the fold of the nodes before as its first source. Chunk s is
// finished (its final fold received, published, copied out) after chunk s+1 is started, so two chunks are in flight;
// a buffer is reused only after every request on it completed and every rank copied it out.
int chain_fold(PathContext& ctx, ShmState& st, ReproState& rs, int leaders, MPI_Comm leader_comm, const Fold& f) {
    const int me = ctx.node_rank, node = ctx.node_index, nodes = ctx.node_count;
    const bool leader = me < leaders;
    const std::size_t es = f.size;
    const std::size_t chunk_elements = std::max<std::size_t>(1, call_chunk_bytes(st, f.count * es) / es);
    const std::size_t largest_part = (chunk_elements / static_cast<std::size_t>(leaders) + kCacheLine) * es;
    MPI_Request forward[kShmBuffers], backward[kShmBuffers], final_fold[kShmBuffers];
    std::size_t part_first[kShmBuffers] = {}, part_count[kShmBuffers] = {};
    for (int b = 0; b < kShmBuffers; ++b) {
        forward[b] = backward[b] = final_fold[b] = MPI_REQUEST_NULL;
        if (leader) room(rs.partial[b], largest_part);
    }
    const void* sources[kMaxPpn + 1];
    int rc = MPI_SUCCESS;
    auto note = [&rc](int result) {
        if (rc == MPI_SUCCESS) rc = result;
    };

    // Leader: fold chunk s and send it on (or, on the last node, back).
    auto start = [&](uint64_t s, std::size_t n) {
        const int b = static_cast<int>(s % kShmBuffers);
        for (int r = 0; r < st.ppn; ++r) wait_progressing(st.arrived[r].value, s, leader_comm);
        if (s > kShmBuffers)
            for (int r = 0; r < st.ppn; ++r) wait_progressing(st.copied[r].value, s - kShmBuffers, leader_comm);
        note(PMPI_Wait(&forward[b], MPI_STATUS_IGNORE));  // partial[b] and result(b) are free again
        note(PMPI_Wait(&backward[b], MPI_STATUS_IGNORE));
        shm::partition(n, es, leaders, me, &part_first[b], &part_count[b]);
        const std::size_t pc = part_count[b], bytes = pc * es;
        if (pc > 0) {
            char* result = st.result(b) + part_first[b] * es;
            std::size_t nsrc = 0;
            if (node > 0) {
                note(PMPI_Recv(result, static_cast<int>(bytes), MPI_BYTE, node - 1, kForwardTag, leader_comm,
                               MPI_STATUS_IGNORE));
                sources[nsrc++] = result;
            }
            for (int r = 0; r < st.ppn; ++r) sources[nsrc++] = st.slot(b, r) + part_first[b] * es;
            char* dst = node < nodes - 1 ? rs.partial[b].data() : result;
            f.fold(dst, sources, nsrc, pc);
            charge::nary(bytes, nsrc);
            if (node < nodes - 1) {
                note(PMPI_Isend(dst, static_cast<int>(bytes), MPI_BYTE, node + 1, kForwardTag, leader_comm,
                                &forward[b]));
                note(PMPI_Irecv(result, static_cast<int>(bytes), MPI_BYTE, node + 1, kBackwardTag, leader_comm,
                                &final_fold[b]));
                return;
            }
            note(PMPI_Isend(result, static_cast<int>(bytes), MPI_BYTE, node - 1, kBackwardTag, leader_comm,
                            &backward[b]));
        }
        publish_waking(st.reduced[me], s);  // the last node holds the final fold
    };
    // Leader: chunk s's final fold arrived from above; pass it down; publish it.
    auto complete = [&](uint64_t s) {
        const int b = static_cast<int>(s % kShmBuffers);
        if (final_fold[b] == MPI_REQUEST_NULL) return;  // last node, or nothing to fold: published in start()
        note(PMPI_Wait(&final_fold[b], MPI_STATUS_IGNORE));
        if (node > 0)
            note(PMPI_Isend(st.result(b) + part_first[b] * es, static_cast<int>(part_count[b] * es), MPI_BYTE,
                            node - 1, kBackwardTag, leader_comm, &backward[b]));
        publish_waking(st.reduced[me], s);
    };
    auto finish = [&](uint64_t s, std::size_t first, std::size_t n) {
        if (leader) complete(s);
        for (int j = 0; j < leaders; ++j) {
            if (leader) wait_progressing(st.reduced[j].value, s, leader_comm);
            else wait_at_least(st.reduced[j].value, s, ctx.wait);
        }
        std::memcpy(f.out + first * es, st.result(static_cast<int>(s % kShmBuffers)), n * es);
        charge::copy(n * es);
        publish_waking(st.copied[me], s);
    };

    uint64_t pending = 0;
    std::size_t pending_first = 0, pending_n = 0;
    for (std::size_t first = 0; first < f.count; first += chunk_elements) {
        const std::size_t n = std::min(chunk_elements, f.count - first);
        const uint64_t s = ++st.sequence;
        std::memcpy(st.slot(static_cast<int>(s % kShmBuffers), me), f.in + first * es, n * es);
        charge::copy(n * es);
        publish_waking(st.arrived[me], s);
        if (leader) start(s, n);
        if (pending != 0) finish(pending, pending_first, pending_n);
        pending = s, pending_first = first, pending_n = n;
    }
    if (pending != 0) finish(pending, pending_first, pending_n);
    for (int b = 0; b < kShmBuffers; ++b) {
        note(PMPI_Wait(&forward[b], MPI_STATUS_IGNORE));
        note(PMPI_Wait(&backward[b], MPI_STATUS_IGNORE));
    }
    return rc;
}

// Through the node window: one node (the multi-leader protocol: node-rank order is rank order there), or the chain
// over contiguous nodes. False when the node layout does not allow it (then *rc is untouched); decided from values
// identical on every rank.
bool node_fold(const Call& call, ReproState& rs, const Fold& f, int* rc) {
    PathContext& ctx = call.ctx;
    if (!ctx.warm() || ctx.ppn_max < 2 || (ctx.node_count > 1 && !ctx.nodes_contiguous)) return false;
    vocab::Reason reason{};
    ShmState* state = node_shm(ctx, f.count * f.size, &reason);
    if (state == nullptr) return false;
    const int leaders = std::clamp<int>(static_cast<int>(call.decision.get<policy::ReproducibleParams>().leaders), 1, std::min(ctx.ppn_min, kMaxLeaders));
    if (ctx.node_count > 1) {
        MPI_Comm leader_comm = MPI_COMM_NULL;
        if (!node_leader_comm(ctx, leaders, &leader_comm)) return false;  // agreed: the fold without the window
        *rc = chain_fold(ctx, *state, rs, leaders, leader_comm, f);
        return true;
    }
    // One node: the multi-leader protocol on a call that describes the fold's buffers.
    CallArgs args = call.args;
    args.sendbuf = f.in == f.out ? MPI_IN_PLACE : f.in;
    args.recvbuf = f.out;
    args.count = static_cast<MPI_Count>(f.count);
    TypeInfo type = call.type;
    type.size = static_cast<uint32_t>(f.size);
    const Call fold_call{args, ctx, type, call.kop, f.count * f.size, call.bucket, call.binary, f.fold,
                         call.library_op, call.decision};
    *rc = run_node_protocol(fold_call, *state, f.fold, leaders, [](void*, std::size_t) { return MPI_SUCCESS; });
    return true;
}

// The algorithm the decision names, or (auto) the node one where the layout allows it, else gather up to 1 KiB and
// exchange beyond: gather is one collective but moves every rank's whole vector to every rank, so it pays only for
// small vectors; by a few KiB the chain already beat it across nodes (docs/reproducible.md "Across nodes").
constexpr std::size_t kGatherBytes = 1024;

int run_fold(const Call& call, ReproState& rs, const Fold& f) {
    using policy::ReproAlgorithm;
    const ReproAlgorithm wanted = call.decision.get<policy::ReproducibleParams>().algorithm;
    int rc = MPI_SUCCESS;
    if ((wanted == ReproAlgorithm::node || wanted == ReproAlgorithm::automatic) && node_fold(call, rs, f, &rc))
        return rc;
    if (wanted == ReproAlgorithm::gather ||
        (wanted != ReproAlgorithm::exchange && f.count * f.size <= kGatherBytes))
        return gather_fold(call.ctx, rs, f);
    return exchange_fold(call.ctx, rs, f);
}

// ARSHIM_REPRODUCIBLE=any-np, float or double SUM: the grid of every element (MAX of the magnitudes over the ranks),
// exact accumulators folded by the same algorithms, one rounding.
template <typename Real>
int exact_sum(const Call& call, ReproState& rs) {
    using Accumulator = binned::AccumulatorOf<Real>;
    const std::size_t count = static_cast<std::size_t>(call.args.count);
    const auto* in = static_cast<const Real*>(call.args.sendbuf == MPI_IN_PLACE ? call.args.recvbuf
                                                                                : call.args.sendbuf);
    auto* grid = reinterpret_cast<Real*>(room(rs.magnitudes, count * sizeof(Real)));
    binned::finite_magnitudes(in, grid, count);
    const MPI_Datatype real = sizeof(Real) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT;
    int rc = PMPI_Allreduce(MPI_IN_PLACE, grid, static_cast<int>(count), real, MPI_MAX, call.ctx.comm);
    if (rc != MPI_SUCCESS) return rc;
    auto* acc = reinterpret_cast<Accumulator*>(room(rs.accumulators, count * sizeof(Accumulator)));
    binned::to_accumulators(in, grid, acc, count);
    const Fold f{reinterpret_cast<const char*>(acc), reinterpret_cast<char*>(acc), count, sizeof(Accumulator),
                 &binned::add_nary<Real>};
    rc = run_fold(call, rs, f);
    if (rc == MPI_SUCCESS) binned::to_reals(acc, grid, static_cast<Real*>(call.args.recvbuf), count);
    return rc;
}

}  // namespace

PathOutcome serve_reproducible(const Call& call) {
    if (call.nary == nullptr) return PathOutcome::decline(vocab::Reason::unsupported_op_type);
    // The exact sums count as ints: the grid's allreduce and the accumulators stay within int counts.
    const bool exact = call.ctx.settings->reproducible == ReproducibleMode::any_np && call.kop == kernels::Op::sum &&
                       (call.type.type == kernels::Type::f64 || call.type.type == kernels::Type::f32) &&
                       static_cast<uint64_t>(call.args.count) <= INT_MAX;
    ReproState& rs = call.ctx.ensure_slot<ReproState>(PathSlot::reproducible);
    if (exact)
        return PathOutcome::done(call.type.type == kernels::Type::f64 ? exact_sum<double>(call, rs)
                                                                       : exact_sum<float>(call, rs));
    // A small call on one node: the latency path's slots, whose every rank folds all the node's slots in node-rank
    // order (= communicator rank order on one node) with the same n-ary kernel: the rank-order fold, bit for bit, in
    // about the time of the latency path instead of the node window's protocol (docs/reproducible.md "Cost").
    if (call.ctx.node_count == 1 && call.bytes <= policy::kLatencyMaxBytes && call.ctx.warm()) {
        const policy::ReproAlgorithm wanted = call.decision.get<policy::ReproducibleParams>().algorithm;
        if (wanted == policy::ReproAlgorithm::automatic || wanted == policy::ReproAlgorithm::node) {
            const PathOutcome small = serve_latency(call);
            if (small.served) return small;
        }
    }
    const char* in =
        static_cast<const char*>(call.args.sendbuf == MPI_IN_PLACE ? call.args.recvbuf : call.args.sendbuf);
    const Fold f{in, static_cast<char*>(call.args.recvbuf), static_cast<std::size_t>(call.args.count), call.type.size,
                 call.nary};
    return PathOutcome::done(run_fold(call, rs, f));
}

}  // namespace arshim
