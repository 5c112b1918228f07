// Multi-leader (DPML) path, seed 001 (Bayatpour et al.) §1 and §4.
//
// Per chunk of the user's buffer:
//   (1) every rank copies its chunk into its own slot of a node shared-memory window;
//   (2) leader j (node ranks 0..l-1) reduces partition j of the chunk over all ppn slots with the n-ary kernel,
//       into the chunk's result area;
//   (3) with several nodes, leader j allreduces its partition across nodes on leader communicator j (ranks with
//       node rank j), optionally in k pipelined MPI_Iallreduce pieces (DPML-Pipelined), so l inter-node
//       allreduces of n/l bytes run concurrently;
//   (4) every rank copies the reduced chunk out into recvbuf.
// Chunks are small (cache sized on one node) and the window holds kBuffers of them, so the phases of consecutive
// chunks overlap and the data a leader reduces is still in cache when it reads it.
//
// Synchronization protocol (no MPI_Barrier per call). The window's control area holds, per node rank, three
// monotonically increasing 64-bit sequence numbers, each on its own cache line:
//   arrived[r] = s  rank r has copied its input for chunk s into its slot;
//   reduced[j] = s  leader j has written its (node- and, with several nodes, globally-) reduced partition of s;
//   copied[r]  = s  rank r has copied chunk s's result out.
// Chunk s uses buffer s % kBuffers. Before writing its slot for chunk s a rank has already seen reduced[*] >= s-1
// (it copied out s-1), and since leaders reduce chunks in order, slot reuse after kBuffers chunks is safe. A leader
// writes the result area of buffer s % kBuffers only after copied[*] >= s - kBuffers (everyone read the chunk that
// used it before). Stores are release, loads acquire, so the data written before a store is visible after the load.
// Sequence numbers continue across calls (every rank of the node makes the same calls in the same order), so the
// protocol needs no reset. Waiting spins briefly, then yields the CPU (ranks may outnumber cores).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

#include "shim/log.h"
#include "shim/paths.h"
#include "shim/simd_ops.h"

namespace arshim {

namespace {

constexpr int kBuffers = 2;
constexpr std::size_t kCacheLine = 64;
constexpr int kMaxPieces = 64;
constexpr int kMaxPpn = 1024;  // sources of one n-ary reduction are kept on the stack
// One node: chunks small enough that a chunk's slots and result stay in the shared cache.
constexpr std::size_t kSingleNodeChunk = 128 * 1024;
// Several nodes: large enough that each leader's inter-node allreduce (chunk / l bytes) is not latency-bound.
constexpr std::size_t kMultiNodeChunk = 1 << 20;

struct alignas(kCacheLine) Counter {
    std::atomic<uint64_t> value;
};
static_assert(sizeof(Counter) == kCacheLine, "one counter per cache line");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory counters must be lock-free");

void wait_at_least(const std::atomic<uint64_t>& counter, uint64_t target) {
    for (int spin = 0; counter.load(std::memory_order_acquire) < target; ++spin)
        if (spin > 64) sched_yield();
}

}  // namespace

struct MultileaderState {
    MPI_Win window = MPI_WIN_NULL;
    char* base = nullptr;
    int ppn = 0;
    std::size_t chunk_bytes = 0;
    Counter* arrived = nullptr;
    Counter* reduced = nullptr;
    Counter* copied = nullptr;
    char* buffers = nullptr;  // kBuffers x (ppn slots + 1 result), each chunk_bytes
    uint64_t sequence = 0;    // last chunk sequence number used (identical on the node's ranks)
    bool usable = false;
    // Leader communicators by leader count: leader_comms[l][j] is not stored; only this rank's own (node rank j < l).
    MPI_Comm leader_comm[65] = {};

    char* slot(int buffer, int rank) const {
        return buffers + (static_cast<std::size_t>(buffer) * (ppn + 1) + static_cast<std::size_t>(rank)) * chunk_bytes;
    }
    char* result(int buffer) const { return slot(buffer, ppn); }
};

namespace {

// Builds the node window; collective over the communicator. All ranks learn the same outcome.
MultileaderState* create_state(CommContext& ctx) {
    auto* state = new MultileaderState;
    for (MPI_Comm& c : state->leader_comm) c = MPI_COMM_NULL;
    state->ppn = ctx.node_size;

    // The "node" must really share memory (ARSHIM_VIRTUAL_PPN can group ranks that do not).
    int ok = 1;
    MPI_Comm shared = MPI_COMM_NULL;
    PMPI_Comm_split_type(ctx.node_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    int shared_size = 0;
    PMPI_Comm_size(shared, &shared_size);
    PMPI_Comm_free(&shared);
    if (shared_size != ctx.node_size) ok = 0;

    // The chunk size decides how many inter-node allreduces each leader makes, so it must be the same on every
    // node: it is derived from values identical on all ranks (largest ppn, node count, settings).
    const std::size_t preferred = ctx.node_count > 1 ? kMultiNodeChunk : kSingleNodeChunk;
    const std::size_t largest_sets = static_cast<std::size_t>(kBuffers) * (ctx.ppn_max + 1);
    const std::size_t largest_control = 3 * static_cast<std::size_t>(ctx.ppn_max) * kCacheLine;
    const std::size_t shm_max = static_cast<std::size_t>(ctx.config->number(OptionId::shm_max));
    std::size_t chunk =
        std::min(preferred, shm_max > largest_control ? (shm_max - largest_control) / largest_sets : 0);
    chunk &= ~(kCacheLine - 1);
    const std::size_t per_chunk_sets = static_cast<std::size_t>(kBuffers) * (state->ppn + 1);
    const std::size_t control = 3 * static_cast<std::size_t>(state->ppn) * kCacheLine;
    if (chunk < 4 * kCacheLine) ok = 0;
    state->chunk_bytes = chunk;

    if (ok) {
        // Errors creating the window must come back to us (and be agreed on), not abort the job.
        PMPI_Comm_set_errhandler(ctx.node_comm, MPI_ERRORS_RETURN);
        const MPI_Aint bytes = ctx.node_rank == 0 ? static_cast<MPI_Aint>(control + per_chunk_sets * chunk) : 0;
        void* mine = nullptr;
        int rc = PMPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, ctx.node_comm, &mine, &state->window);
        if (rc == MPI_SUCCESS) {
            MPI_Aint size = 0;
            int disp = 0;
            rc = PMPI_Win_shared_query(state->window, 0, &size, &disp, &state->base);
        }
        if (rc != MPI_SUCCESS) ok = 0;
    }
    // Everyone agrees on the outcome before anyone uses the window.
    int all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx.comm);
    if (!all_ok) {
        if (state->window != MPI_WIN_NULL) PMPI_Win_free(&state->window);
        if (ctx.rank == 0 && log::first_time("multileader-shm"))
            log::warn("multileader path unavailable: no node shared-memory window (ARSHIM_SHM_MAX={}, nodes must "
                      "share memory); those calls run native",
                      ctx.config->text(OptionId::shm_max));
        return state;
    }
    state->arrived = reinterpret_cast<Counter*>(state->base);
    state->reduced = state->arrived + state->ppn;
    state->copied = state->reduced + state->ppn;
    state->buffers = state->base + control;
    if (ctx.node_rank == 0)
        for (int r = 0; r < 3 * state->ppn; ++r) new (&state->arrived[r]) Counter{{0}};
    PMPI_Barrier(ctx.node_comm);  // counters initialized before anyone reads them
    state->usable = true;
    return state;
}

// The leader communicator for leader count l (leader j = node rank j on every node); collective over comm.
MPI_Comm leader_comm(CommContext& ctx, MultileaderState& state, int leaders) {
    MPI_Comm& comm = state.leader_comm[leaders];
    if (comm == MPI_COMM_NULL) {
        const int color = ctx.node_rank < leaders ? ctx.node_rank : MPI_UNDEFINED;
        PMPI_Comm_split(ctx.comm, color, ctx.node_index, &comm);
        if (comm == MPI_COMM_NULL) comm = MPI_COMM_SELF;  // marks "created, not a member"; never freed
    }
    return comm;
}

// Partition j of `elements` among `parts`, on cache-line boundaries where the element size allows.
void partition(std::size_t elements, std::size_t element_size, int parts, int j, std::size_t* first,
               std::size_t* count) {
    const std::size_t unit = std::max<std::size_t>(1, kCacheLine / element_size);
    const std::size_t units = (elements + unit - 1) / unit;
    const std::size_t per = units / static_cast<std::size_t>(parts);
    const std::size_t extra = units % static_cast<std::size_t>(parts);
    const std::size_t start = static_cast<std::size_t>(j) * per + std::min<std::size_t>(j, extra);
    const std::size_t length = per + (static_cast<std::size_t>(j) < extra ? 1 : 0);
    *first = std::min(elements, start * unit);
    *count = std::min(elements, (start + length) * unit) - *first;
}

int internode_allreduce(void* data, std::size_t count, const PathCall& call, MPI_Op op, MPI_Comm comm) {
    const uint32_t pieces = std::clamp<uint32_t>(call.decision.pipeline_k, 1, kMaxPieces);
    if (pieces == 1 || count < pieces)
        return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, op, comm);
    MPI_Request requests[kMaxPieces];
    const std::size_t per = (count + pieces - 1) / pieces;
    int posted = 0, rc = MPI_SUCCESS;
    for (std::size_t first = 0; first < count && rc == MPI_SUCCESS; first += per, ++posted)
        rc = PMPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * call.type.size,
                             static_cast<int>(std::min(per, count - first)), call.args.datatype, op, comm,
                             &requests[posted]);
    const int wait_rc = PMPI_Waitall(rc == MPI_SUCCESS ? posted : posted - 1, requests, MPI_STATUSES_IGNORE);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

}  // namespace

PathOutcome run_multileader(const PathCall& call) {
    CommContext& ctx = call.ctx;
    // Decline on values identical on all ranks only. ppn = 1 everywhere degenerates to native.
    if (ctx.ppn_max == 1) return PathOutcome::decline(stats::Reason::one_rank_per_node);
    if (ctx.ppn_max > kMaxPpn) return PathOutcome::decline(stats::Reason::path_unavailable);
    if (ctx.multileader == nullptr) ctx.multileader = create_state(ctx);
    MultileaderState& state = *ctx.multileader;
    if (!state.usable) return PathOutcome::decline(stats::Reason::shm_unavailable);

    const kernels::NaryFn reduce = kernels::active().nary[static_cast<int>(call.kop)][static_cast<int>(call.type.type)];
    if (reduce == nullptr) return PathOutcome::decline(stats::Reason::unsupported_op_type);

    // Leaders per node: at most the smallest node's rank count, so every node has leader j for every j < l and
    // non-uniform ppn needs no special case.
    const int leaders = std::clamp<int>(static_cast<int>(call.decision.leaders), 1, std::min(ctx.ppn_min, 64));
    const bool multinode = ctx.node_count > 1;
    MPI_Comm my_leader_comm = MPI_COMM_NULL;
    if (multinode) my_leader_comm = leader_comm(ctx, state, leaders);
    MPI_Op op = call.args.op;
    if (call.decision.kernel == policy::KernelChoice::simd) {
        const MPI_Op simd = simd_op_for(call.args.op);
        if (simd != MPI_OP_NULL) op = simd;
    }

    const std::size_t element = call.type.size;
    const std::size_t count = static_cast<std::size_t>(call.args.count);
    const std::size_t chunk_elements = state.chunk_bytes / element;
    const char* input = static_cast<const char*>(call.args.sendbuf == MPI_IN_PLACE ? call.args.recvbuf
                                                                                   : call.args.sendbuf);
    char* output = static_cast<char*>(call.args.recvbuf);
    const int me = ctx.node_rank;
    const bool leader = me < leaders;
    const void* sources[kMaxPpn];
    int rc = MPI_SUCCESS;

    for (std::size_t first = 0; first < count; first += chunk_elements) {
        const std::size_t n = std::min(chunk_elements, count - first);
        const uint64_t s = ++state.sequence;
        const int buffer = static_cast<int>(s % kBuffers);

        // (1) my input chunk into my slot
        std::memcpy(state.slot(buffer, me), input + first * element, n * element);
        state.arrived[me].value.store(s, std::memory_order_release);

        if (leader) {
            std::size_t part_first = 0, part_count = 0;
            partition(n, element, leaders, me, &part_first, &part_count);
            for (int r = 0; r < state.ppn; ++r) wait_at_least(state.arrived[r].value, s);
            if (s > kBuffers)
                for (int r = 0; r < state.ppn; ++r) wait_at_least(state.copied[r].value, s - kBuffers);
            const std::size_t offset = part_first * element;
            if (part_count > 0) {
                // (2) reduce partition me over every rank's slot, in node-rank order (same bits on every rank)
                for (int r = 0; r < state.ppn; ++r) sources[r] = state.slot(buffer, r) + offset;
                reduce(state.result(buffer) + offset, sources, static_cast<std::size_t>(state.ppn), part_count);
                // (3) across nodes
                if (multinode && rc == MPI_SUCCESS)
                    rc = internode_allreduce(state.result(buffer) + offset, part_count, call, op, my_leader_comm);
            }
            state.reduced[me].value.store(s, std::memory_order_release);
        }

        // (4) the whole reduced chunk out
        for (int j = 0; j < leaders; ++j) wait_at_least(state.reduced[j].value, s);
        std::memcpy(output + first * element, state.result(buffer), n * element);
        state.copied[me].value.store(s, std::memory_order_release);
    }
    return PathOutcome::done(rc);
}

void release_multileader(CommContext& ctx) {
    MultileaderState* state = ctx.multileader;
    if (state == nullptr) return;
    if (state->window != MPI_WIN_NULL) PMPI_Win_free(&state->window);
    for (MPI_Comm& comm : state->leader_comm)
        if (comm != MPI_COMM_NULL && comm != MPI_COMM_SELF) PMPI_Comm_free(&comm);
    delete state;
    ctx.multileader = nullptr;
}

}  // namespace arshim
