#include "shim/paths/node_shm.h"

#include "shim/paths/internode.h"

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/base/node_key.h"
#include "shim/paths/paths.h"
#include "shim/paths/window_pool.h"
#include "shim/stats/trace.h"

// Tests only (test/verify/kernel_fault.cpp, never installed): every window fails to build. Null in the product. (The
// waits, and their test hook, are in node_wait.cpp.)
extern "C" int arshim_test_fail_shm() __attribute__((weak, visibility("hidden")));

namespace arshim {

namespace {

// One node: chunks small enough that a chunk's slots and result stay in the shared cache.
constexpr std::size_t kSingleNodeChunk = 128 * 1024;
// Several nodes: large enough that each leader's inter-node step (chunk / l bytes) is not latency-bound.
constexpr std::size_t kMultiNodeChunk = 1 << 20;
// Several nodes whose leaders go round ARShim's ring (shim/paths/multileader.cpp): the ring makes 2(h-1) blocking
// exchanges per chunk, each paying a rendezvous behind the data already queued on the link, so larger chunks keep
// the link busier; 4 MiB is where the gain stopped (larger chunks gained nothing more), and where the ranks are
// CPU-bound the chunk size does not matter. Not for the library's step, which ran slower with chunks this large
// (docs/cluster.md "Chunks of 4 MiB on the ring").
constexpr std::size_t kRingChunk = 4 << 20;

}  // namespace

namespace {

// The chunk size decides how many inter-node steps each leader makes, so it must be the same on every node: it is
// derived from values identical on all ranks (largest ppn, node count, settings). Set when a window is made, and
// again when a communicator takes over a kept window (shim/paths/window_pool.h).
void set_chunk_limits(const PathContext& ctx, ShmState& state) {
    const ShmDomain& domain = state.domain;
    state.preferred_chunk = domain.count <= 1 ? kSingleNodeChunk
                            : domain.leaders_may_ring && internode_step(ctx.settings->internode, domain.count, UINT64_MAX) == InternodeStep::ring ? kRingChunk
                                                                                                         : kMultiNodeChunk;
    const std::size_t largest_sets = static_cast<std::size_t>(kShmBuffers) * (domain.size_max + 1);
    const std::size_t largest_control = 3 * static_cast<std::size_t>(domain.size_max) * kCacheLine;
    const std::size_t shm_max = static_cast<std::size_t>(ctx.settings->shm_max);
    state.max_chunk = shm_max > largest_control ? (shm_max - largest_control) / largest_sets : 0;
    state.max_chunk &= ~(kCacheLine - 1);
}

}  // namespace

bool shares_memory(const PathContext& ctx, MPI_Comm comm, int size) {
    (void)size;  // used by the SMPI build only
    if (ctx.settings->virtual_ppn <= 0) return true;
#if defined(ARSHIM_FLAVOR_SMPI)
    // One real process for every simulated host: the simulated hosts are SMPI's MPI_COMM_TYPE_SHARED groups.
    MPI_Comm shared = MPI_COMM_NULL;
    comm_split_type_twice(comm, MPI_COMM_TYPE_SHARED, 0, &shared);  // twice: shim/base/mpi_util.h
    int shared_size = 0;
    if (shared != MPI_COMM_NULL) {
        PMPI_Comm_size(shared, &shared_size);
        PMPI_Comm_free(&shared);
    }
    return shared_size == size;
#endif
    // Every rank of `comm` has the same node key (shim/base/node_key.h): one small allreduce.
    const NodeKey key = node_key();
    const long long values[2] = {static_cast<long long>(key.high), static_cast<long long>(key.low)};
    return same_on_all_ranks(values, 2, comm);
}

ShmState* create_shm_state(PathContext& ctx, const ShmDomain& domain, std::size_t wanted_chunk) {
    auto* state = new ShmState;
    state->ppn = domain.size;
    state->domain = domain;

    // Why a window cannot be had, agreed over the communicator as the largest cause any rank saw (its precise
    // words stay with the rank that saw it, which warns: node_segment.cpp).
    enum Cause : long long { none = 0, too_small, not_shared, no_segment, no_communicator, test_hook };
    long long cause = none;
    if (domain.comm == MPI_COMM_NULL)  // the caller could not make the domain's communicator
        cause = no_communicator;
    else if (!shares_memory(ctx, domain.comm, domain.size))  // ARSHIM_VIRTUAL_PPN can group ranks that do not
        cause = not_shared;
    if (arshim_test_fail_shm != nullptr && arshim_test_fail_shm()) cause = test_hook;

    set_chunk_limits(ctx, *state);
    std::size_t chunk = std::min({std::max(wanted_chunk, kMinChunk), state->preferred_chunk, state->max_chunk});
    chunk &= ~(kCacheLine - 1);
    if (chunk < 4 * kCacheLine && cause == none) cause = too_small;
    state->chunk_bytes = chunk;
    const std::size_t sets = static_cast<std::size_t>(kShmBuffers) * (state->ppn + 1);
    const std::size_t control = 3 * static_cast<std::size_t>(state->ppn) * kCacheLine;

    std::string why;  // this rank's own words for a segment it could not make or attach
    if (cause == none) {
        // ARShim's own segment (node_segment.h): nothing another local user can plant; a failure is agreed below.
        PMPI_Comm_set_errhandler(domain.comm, MPI_ERRORS_RETURN);
        state->base = allocate_shared(domain.comm, domain.rank == 0, control + sets * chunk, &state->segment, &why);
        if (state->base == nullptr) cause = no_segment;
    }
    // Everyone agrees on the outcome before anyone uses the window, and on its token (shim/paths/window_pool.h), in
    // one allreduce.
    long long mine[2] = {cause, static_cast<long long>(window_pool::next_token())};
    long long agreed[2] = {no_communicator, 0};
    PMPI_Allreduce(mine, agreed, 2, MPI_LONG_LONG, MPI_MAX, ctx.comm);
    state->token = static_cast<uint64_t>(agreed[1]);
    window_pool::saw_token(state->token);
    if (agreed[0] != none) {
        release_shared(&state->segment);
        if (ctx.rank != 0) return state;
        const char* what = agreed[0] == no_communicator ? "the MPI library has no communicator ids left for it"
                           : agreed[0] == no_segment    ? "its shared memory could not be made or attached safely"
                           : agreed[0] == not_shared    ? "the ranks grouped as one do not share memory"
                           : agreed[0] == too_small     ? "ARSHIM_SHM_MAX leaves no room for it"
                                                        : "refused by a test hook";
        // Every refusal as data (the warning below is once per process, for people).
        if (trace::on())
            trace::event("window_refused", {{"communicator", ctx.stats_id}, {"window", domain.name}, {"error", what},
                                            {"detail", why}});
        if (log::first_time(std::string(domain.name) + "-shm-" + std::to_string(agreed[0])))
            log::warn("{} shared-memory window unavailable ({}{}{}; ARSHIM_SHM_MAX={}): multileader and sharp calls "
                      "run native", domain.name, what, why.empty() ? "" : ": ", why,
                      format_size(static_cast<int64_t>(ctx.settings->shm_max)));
        return state;
    }
    state->arrived = reinterpret_cast<ShmCounter*>(state->base);
    state->reduced = state->arrived + state->ppn;
    state->copied = state->reduced + state->ppn;
    state->buffers = state->base + control;
    if (domain.rank == 0)
        for (int r = 0; r < 3 * state->ppn; ++r) new (&state->arrived[r]) ShmCounter{{0}, {0}};
    PMPI_Barrier(domain.comm);  // counters initialized before anyone reads them
    state->usable = true;
    return state;
}

void free_shm_state(ShmState* state) {
    if (state == nullptr) return;
    release_shared(&state->segment);
    delete state;
}

NodeShm::NodeShm() {
    for (MPI_Comm& c : leader_comm) c = MPI_COMM_NULL;
    for (bool& failed : leader_failed) failed = false;
}

NodeShm::~NodeShm() {
    if (window_pool::offer(members, state, window_comm)) {
        state = nullptr;  // the pool owns the window and its communicator now
        window_comm = MPI_COMM_NULL;
    }
    free_shm_state(state);
    if (window_comm != MPI_COMM_NULL) PMPI_Comm_free(&window_comm);
    for (MPI_Comm& comm : leader_comm)
        if (comm != MPI_COMM_NULL && comm != MPI_COMM_SELF) PMPI_Comm_free(&comm);
}

namespace {

// Replaces the node window by one with room for `chunk`. Collective over the communicator: every rank is in the
// same call (the decision to grow depends on identical values only), and create_shm_state()'s agreement means every
// rank has left the previous call, so nobody still reads the old window when it is freed. When the larger window
// cannot be had, the old one stays (agreed) and is not grown again.
void grow_node_shm(PathContext& ctx, NodeShm& node, std::size_t chunk) {
    ShmState* old = node.state;
    ShmState* grown = create_shm_state(ctx, old->domain, chunk);
    if (!grown->usable) {
        free_shm_state(grown);
        old->grow_failed = chunk;
        return;
    }
    if (ctx.rank == 0)
        log::debug("node window of a {}-rank communicator grown from {} to {} byte chunks", ctx.size, old->chunk_bytes,
                   grown->chunk_bytes);
    free_shm_state(old);
    node.state = grown;
}

}  // namespace

PhaseTimes g_phase_times;

void report_phase_times(int world_rank) {
    const PhaseTimes& t = g_phase_times;
    if (t.chunks == 0) return;  // nothing timed: ARSHIM_PHASE_TIMES off, or no protocol call
    if (trace::on())  // the counts as data; the line below is for people
        trace::event("phases", {{"calls", t.calls}, {"chunks", t.chunks}, {"internode_steps", t.internode_steps},
                                {"ring_steps", t.ring_steps}, {"doubling_steps", t.doubling_steps},
                                {"rabenseifner_steps", t.rabenseifner_steps}, {"sleeps", t.sleeps}});
    const double total = t.copy_in + t.wait_inputs + t.reduce + t.internode + t.wait_results + t.copy_out;
    auto ms = [](double s) { return s * 1e3; };
    std::fprintf(stderr,
                 "arshim[%d] phases (node protocol, %llu calls, %llu chunks, %.1f ms): copy in %.1f ms, wait for "
                 "inputs %.1f ms, reduce %.1f ms, inter-node %.1f ms, wait for results %.1f ms, copy out %.1f ms; "
                 "inter-node steps %llu, on ARShim's ring %llu, by ARShim's recursive doubling %llu, by ARShim's "
                 "reduce-scatter + allgather %llu; sleeps %llu\n",
                 world_rank, static_cast<unsigned long long>(t.calls), static_cast<unsigned long long>(t.chunks),
                 ms(total), ms(t.copy_in), ms(t.wait_inputs), ms(t.reduce), ms(t.internode), ms(t.wait_results),
                 ms(t.copy_out), static_cast<unsigned long long>(t.internode_steps),
                 static_cast<unsigned long long>(t.ring_steps), static_cast<unsigned long long>(t.doubling_steps),
                 static_cast<unsigned long long>(t.rabenseifner_steps), static_cast<unsigned long long>(t.sleeps));
}

namespace {

// The world ranks of my node's members of the communicator, in node-rank order; empty when a member is not a process
// of MPI_COMM_WORLD (its window is then never kept).
std::vector<int> node_members(const PathContext& ctx) {
    std::vector<int> comm_ranks;
    for (int r = 0; r < ctx.size; ++r)
        if (ctx.node_of_rank[static_cast<std::size_t>(r)] == ctx.node_index) comm_ranks.push_back(r);
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    PMPI_Comm_group(ctx.comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> members(comm_ranks.size(), MPI_UNDEFINED);
    PMPI_Group_translate_ranks(group, static_cast<int>(comm_ranks.size()), comm_ranks.data(), world, members.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    if (std::find(members.begin(), members.end(), MPI_UNDEFINED) != members.end()) members.clear();
    return members;
}

// A new communicator's first window, in one allreduce over the communicator: whether it may hold one at all
// (PathContext::admit, ARSHIM_MAX_COMMS), and whether it takes over the window kept from a freed communicator of the
// same node members (shim/paths/window_pool.h): when every rank of this communicator has one, all made together (the
// same token) and with the same chunk capacity on every node. ARSHIM_SHM_REUSE=off (agreed: the context's
// settings) proposes none. Sequence numbers continue: the window's previous communicator made its last call on it
// before it was freed, on every rank of the node, as if this one's calls followed on it.
enum class FirstWindow { refused, taken, build };

FirstWindow first_window(PathContext& ctx, NodeShm& node, ShmDomain& domain) {
    const bool reuse = ctx.settings->shm_reuse;
    if (reuse) node.members = node_members(ctx);
    const ShmState* kept = node.members.empty() ? nullptr : window_pool::reserve(node.members);
    const long long proposal[2] = {kept ? static_cast<long long>(kept->token) : 0,
                                   kept ? static_cast<long long>(kept->chunk_bytes) : 0};
    bool same = false;
    const bool admitted = ctx.admit(proposal, 2, &same);
    // Tokens start at 1: a rank without a kept window (0) makes every rank build a new one.
    if (!admitted || !same || proposal[0] <= 0) {
        if (kept) window_pool::unreserve(node.members);
        return admitted ? FirstWindow::build : FirstWindow::refused;
    }
    const window_pool::Entry entry = window_pool::take(node.members);
    node.state = entry.state;
    node.window_comm = entry.comm;
    domain.comm = entry.comm;
    node.state->domain = domain;
    set_chunk_limits(ctx, *node.state);
    node.state->grow_failed = 0;
    if (ctx.rank == 0)
        log::debug("node window of a {}-rank communicator taken over from a freed one ({} byte chunks)", ctx.size,
                   node.state->chunk_bytes);
    if (ctx.rank == 0 && trace::on())
        trace::event("window_taken", {{"communicator", ctx.stats_id}, {"comm_size", ctx.size},
                                      {"chunk_bytes", node.state->chunk_bytes}});
    return FirstWindow::taken;
}

}  // namespace

ShmState* node_shm(PathContext& ctx, uint64_t bytes, vocab::Reason* reason) {
    // Decline on values identical on all ranks only. ppn = 1 everywhere: nothing to share.
    if (ctx.ppn_max == 1) return *reason = vocab::Reason::one_rank_per_node, nullptr;
    if (ctx.ppn_max > kMaxPpn) return *reason = vocab::Reason::path_unavailable, nullptr;
    // Room for the whole bucket (vocab::bucket_room): a bucket's later calls never grow the window.
    const std::size_t wanted = shm::pow2_chunk(vocab::bucket_room(bytes));
    NodeShm& node = ctx.ensure_slot<NodeShm>(PathSlot::node_shm);
    if (node.state == nullptr) {
        if (ctx.refused()) return *reason = vocab::Reason::comm_limit, nullptr;
        ShmDomain domain;
        domain.rank = ctx.node_rank;
        domain.size = ctx.node_size;
        domain.size_max = ctx.ppn_max;
        domain.count = ctx.node_count;
        domain.leaders_may_ring = true;
        switch (first_window(ctx, node, domain)) {
        case FirstWindow::refused: return *reason = vocab::Reason::comm_limit, nullptr;
        case FirstWindow::taken: break;
        case FirstWindow::build:
            // Same members and order as a split by type: the node's ranks in comm rank order.
            comm_split_twice(ctx.comm, ctx.node_index, ctx.rank, &node.window_comm);  // twice: mpi_util.h
            domain.comm = node.window_comm;
            node.state = create_shm_state(ctx, domain, wanted);
            break;
        }
    } else {
        ShmState& s = *node.state;
        const std::size_t target = std::min({wanted, s.preferred_chunk, s.max_chunk}) & ~(kCacheLine - 1);
        if (s.usable && !s.frozen && target > s.chunk_bytes && target != s.grow_failed) grow_node_shm(ctx, node, target);
    }
    if (!node.state->usable) return *reason = vocab::Reason::shm_unavailable, nullptr;
    return node.state;
}

bool node_leader_comm(PathContext& ctx, int leaders, MPI_Comm* out) {
    NodeShm& node = *ctx.slot<NodeShm>(PathSlot::node_shm);
    MPI_Comm& comm = node.leader_comm[leaders];
    if (comm == MPI_COMM_NULL && !node.leader_failed[leaders]) {
        const int color = ctx.node_rank < leaders ? ctx.node_rank : MPI_UNDEFINED;
        const int rc = comm_split_twice(ctx.comm, color, ctx.node_index, &comm);  // twice: shim/base/mpi_util.h
        // Agreed: every rank declines alike if any could not make it (MPICH: no communicator id left).
        if (!made_on_all_ranks(rc, &comm, ctx.comm)) {
            node.leader_failed[leaders] = true;
            if (ctx.rank == 0 && log::first_time("leader-comm"))
                log::warn("leader communicators of a {}-rank communicator could not be made (the MPI library has "
                          "no communicator ids left?): its node paths decline across nodes", ctx.size);
        } else if (comm == MPI_COMM_NULL) {
            comm = MPI_COMM_SELF;  // "created, not a member"; never freed
        }
    }
    *out = comm == MPI_COMM_SELF ? MPI_COMM_NULL : comm;
    return !node.leader_failed[leaders];
}

}  // namespace arshim
