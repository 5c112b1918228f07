#include "shim/node_shm.h"

#include <algorithm>
#include <new>
#include <string>

#include "shim/log.h"

namespace arshim {

namespace {

// One node: chunks small enough that a chunk's slots and result stay in the shared cache.
constexpr std::size_t kSingleNodeChunk = 128 * 1024;
// Several nodes: large enough that each leader's inter-node step (chunk / l bytes) is not latency-bound.
constexpr std::size_t kMultiNodeChunk = 1 << 20;

std::size_t pow2_ceil(uint64_t bytes) {
    std::size_t p = kMinChunk;
    while (p < bytes && p < (std::size_t{1} << 40)) p <<= 1;
    return p;
}

}  // namespace

std::size_t call_chunk_bytes(const MultileaderState& state, uint64_t bytes) {
    return std::min({pow2_ceil(bytes), state.preferred_chunk, state.chunk_bytes});
}

MultileaderState* create_shm_state(CommContext& ctx, const ShmDomain& domain, std::size_t wanted_chunk) {
    auto* state = new MultileaderState;
    for (MPI_Comm& c : state->leader_comm) c = MPI_COMM_NULL;
    state->ppn = domain.size;
    state->domain = domain;

    // The "node" must really share memory (ARSHIM_VIRTUAL_PPN can group ranks that do not).
    int ok = 1;
    MPI_Comm shared = MPI_COMM_NULL;
    PMPI_Comm_split_type(domain.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    int shared_size = 0;
    PMPI_Comm_size(shared, &shared_size);
    PMPI_Comm_free(&shared);
    if (shared_size != domain.size) ok = 0;

    // The chunk size decides how many inter-node steps each leader makes, so it must be the same on every node: it
    // is derived from values identical on all ranks (largest ppn, node count, settings, the call's size).
    state->preferred_chunk = domain.count > 1 ? kMultiNodeChunk : kSingleNodeChunk;
    const std::size_t largest_sets = static_cast<std::size_t>(kShmBuffers) * (domain.size_max + 1);
    const std::size_t largest_control = 3 * static_cast<std::size_t>(domain.size_max) * kCacheLine;
    const std::size_t shm_max = static_cast<std::size_t>(ctx.config->number(OptionId::shm_max));
    state->max_chunk = shm_max > largest_control ? (shm_max - largest_control) / largest_sets : 0;
    state->max_chunk &= ~(kCacheLine - 1);
    std::size_t chunk = std::min({std::max(wanted_chunk, kMinChunk), state->preferred_chunk, state->max_chunk});
    chunk &= ~(kCacheLine - 1);
    if (chunk < 4 * kCacheLine) ok = 0;
    state->chunk_bytes = chunk;
    const std::size_t sets = static_cast<std::size_t>(kShmBuffers) * (state->ppn + 1);
    const std::size_t control = 3 * static_cast<std::size_t>(state->ppn) * kCacheLine;

    if (ok) {
        // Errors creating the window must come back to us (and be agreed on), not abort the job.
        PMPI_Comm_set_errhandler(domain.comm, MPI_ERRORS_RETURN);
        const MPI_Aint bytes = domain.rank == 0 ? static_cast<MPI_Aint>(control + sets * chunk) : 0;
        void* mine = nullptr;
        int rc = PMPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, domain.comm, &mine, &state->window);
        if (rc == MPI_SUCCESS) {
            MPI_Aint size = 0;
            int disp = 0;
            rc = PMPI_Win_shared_query(state->window, 0, &size, &disp, &state->base);
        }
        if (rc != MPI_SUCCESS) ok = 0;
    }
    int all_ok = 0;  // everyone agrees on the outcome before anyone uses the window
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx.comm);
    if (!all_ok) {
        if (state->window != MPI_WIN_NULL) PMPI_Win_free(&state->window);
        if (ctx.rank == 0 && log::first_time(std::string(domain.name) + "-shm"))
            log::warn("{} shared-memory window unavailable (ARSHIM_SHM_MAX={}, a {}'s ranks must share "
                      "memory): multileader and sharp calls run native",
                      domain.name, ctx.config->text(OptionId::shm_max), domain.name);
        return state;
    }
    state->arrived = reinterpret_cast<ShmCounter*>(state->base);
    state->reduced = state->arrived + state->ppn;
    state->copied = state->reduced + state->ppn;
    state->buffers = state->base + control;
    if (domain.rank == 0)
        for (int r = 0; r < 3 * state->ppn; ++r) new (&state->arrived[r]) ShmCounter{{0}};
    PMPI_Barrier(domain.comm);  // counters initialized before anyone reads them
    state->usable = true;
    return state;
}

void free_shm_state(MultileaderState* state) {
    if (state == nullptr) return;
    if (state->window != MPI_WIN_NULL) PMPI_Win_free(&state->window);
    for (MPI_Comm& comm : state->leader_comm)
        if (comm != MPI_COMM_NULL && comm != MPI_COMM_SELF) PMPI_Comm_free(&comm);
    delete state;
}

// Replaces the context's node state by one with room for `chunk`, keeping the leader communicators. Collective
// over the communicator: every rank is in the same call (the decision to grow depends on identical values only),
// and create_shm_state()'s agreement means every rank has left the previous call, so nobody still reads the old
// window when it is freed. When the larger window cannot be had, the old one stays (agreed) and is not grown again.
void grow_node_shm(CommContext& ctx, std::size_t chunk) {
    MultileaderState* old = ctx.multileader;
    MultileaderState* grown = create_shm_state(ctx, old->domain, chunk);
    if (!grown->usable) {
        free_shm_state(grown);
        old->grow_failed = chunk;
        return;
    }
    for (int l = 0; l <= kMaxLeaders; ++l) std::swap(grown->leader_comm[l], old->leader_comm[l]);
    if (ctx.rank == 0)
        log::debug("node window of a {}-rank communicator grown from {} to {} byte chunks", ctx.size, old->chunk_bytes,
                   grown->chunk_bytes);
    free_shm_state(old);
    ctx.multileader = grown;
}

MultileaderState* node_shm(CommContext& ctx, uint64_t bytes, stats::Reason* reason) {
    // Decline on values identical on all ranks only. ppn = 1 everywhere: nothing to share.
    if (ctx.ppn_max == 1) return *reason = stats::Reason::one_rank_per_node, nullptr;
    if (ctx.ppn_max > kMaxPpn) return *reason = stats::Reason::path_unavailable, nullptr;
    const std::size_t wanted = pow2_ceil(bytes);
    if (ctx.multileader == nullptr) {
        ShmDomain node;
        node.comm = ctx.node_comm;
        node.rank = ctx.node_rank;
        node.size = ctx.node_size;
        node.size_max = ctx.ppn_max;
        node.count = ctx.node_count;
        ctx.multileader = create_shm_state(ctx, node, wanted);
    } else {
        MultileaderState& s = *ctx.multileader;
        const std::size_t target = std::min({wanted, s.preferred_chunk, s.max_chunk}) & ~(kCacheLine - 1);
        if (s.usable && !s.frozen && target > s.chunk_bytes && target != s.grow_failed) grow_node_shm(ctx, target);
    }
    if (!ctx.multileader->usable) return *reason = stats::Reason::shm_unavailable, nullptr;
    return ctx.multileader;
}

MPI_Comm node_leader_comm(CommContext& ctx, MultileaderState& state, int leaders) {
    MPI_Comm& comm = state.leader_comm[leaders];
    if (comm == MPI_COMM_NULL) {
        const int color = ctx.node_rank < leaders ? ctx.node_rank : MPI_UNDEFINED;
        PMPI_Comm_split(ctx.comm, color, ctx.node_index, &comm);
        if (comm == MPI_COMM_NULL) comm = MPI_COMM_SELF;  // "created, not a member"; never freed
    }
    return comm == MPI_COMM_SELF ? MPI_COMM_NULL : comm;
}

void shm_partition(std::size_t elements, std::size_t element_size, int parts, int j, std::size_t* first,
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

void release_multileader(CommContext& ctx) {
    free_shm_state(ctx.multileader);
    ctx.multileader = nullptr;
}

}  // namespace arshim
