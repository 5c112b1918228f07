// SHARP path: in-network reduction through NVIDIA's SHARP collective library (seed 003: Graham et al.; seed 001
// §4.6/§5.4: node- and socket-level leaders). docs/sharp.md describes the design; in short:
//
// Levels. A communicator context has up to two SHARP levels, created lazily on the first call the policy routes
// to each (collective, outcome agreed on every rank, shim/sharp/group.h):
//   node leaders   - the node shared-memory chunk protocol (shim/paths/node_shm.h, leaders = 1) gathers and reduces each
//                    chunk on node rank 0, whose inter-node step is a SHARP allreduce over the node leaders;
//   socket leaders - the same protocol one level down: the shared-memory domain is a socket of a node (ranks split
//                    by MPI_COMM_TYPE_SHARED, then by processor package; under ARSHIM_VIRTUAL_PPN each emulated
//                    node is two emulated sockets), each socket's first rank is a SHARP member, and the switch
//                    reduces across sockets and nodes: no inter-socket gather/scatter (seed 001 §4.6);
//   every rank alone on its node (ppn 1 everywhere, either level) - no shared memory: every rank is a member and
//                    SHARP works on the user's buffers (registered through the cache, shim/sharp/regcache.h).
// Per call the leaders choose LLT below ARSHIM_SHARP_SAT_THRESHOLD (or the policy's sharp_mode), SAT at or above,
// split to the library's limits, and run the host path for what SHARP lacks (datatype / op not in the agreed
// capabilities, PROD, long double, complex, MINLOC on padded pairs) or when SAT is unavailable.
//
// Failures. Every SHARP step's outcome is agreed among the leaders right after it (PMPI_Allreduce MAX on the leader
// communicator) before anyone uses its result. A failed chunk is redone on the host path from inputs that are still
// intact (the node-reduced chunk is rebuilt from the ranks' shared-memory slots; in-place user data was copied
// first), so the result is always the host path's correct one. A refused SAT lock is retried (agreed, whole chunk)
// and then runs on the host; a SHARP error disables SHARP on that communicator (agreed; logged once with
// sharp_coll_strerror) and later calls decline to native with reason sharp_unavailable. The other ranks of a domain
// learn each call's outcome from their leader through a shared-memory verdict line, so every rank counts the same
// kind and declines alike afterwards. Every leader posts the same SHARP operations whatever happened locally.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/paths/node_shm.h"
#include "shim/sharp/group.h"
#include "shim/sharp/lib.h"
#include "shim/stats/sharp_counts.h"
#include "shim/stats/trace.h"
#include "shim/sharp/topology.h"
#include "shim/paths/paths.h"

namespace arshim {

namespace sharp_path {

using sharp::Aggregation;
using sharp::Counter;
using sharp::Outcome;
using sharp::Status;

constexpr std::size_t kDirectChunk = std::size_t{1} << 20;  // ppn 1: in-place copy and bounce buffer, each
constexpr int kLockRetries = 3;                             // agreed retries of a chunk whose SAT lock failed
constexpr int kLockFailedCallsBeforeBackoff = 2;
constexpr uint32_t kSatBackoffCalls = 32;                   // SAT-sized calls then sent to the host path

// The per-call outcome a domain's leader publishes for the other ranks of its domain (one cache line).
struct alignas(kCacheLine) VerdictLine {
    std::atomic<uint64_t> sequence;  // the call it describes
    std::atomic<uint32_t> word;      // CallResult::encode()
};

enum class Kind : uint8_t { llt, sat, host };

struct CallResult {
    Kind kind = Kind::llt;
    Counter reason = Counter::host;  // host_* when kind == host
    bool disabled = false;           // a SHARP error: the level is now unusable on every rank
    bool lock_failed = false;        // SAT lock failed after the retries (feeds the back-off)

    uint32_t encode() const {
        return static_cast<uint32_t>(kind) | static_cast<uint32_t>(reason) << 2 | (disabled ? 1u << 10 : 0u);
    }
    static CallResult decode(uint32_t w) {
        CallResult r;
        r.kind = static_cast<Kind>(w & 3u);
        r.reason = static_cast<Counter>(w >> 2 & 255u);
        r.disabled = (w >> 10 & 1u) != 0;
        return r;
    }
    void to_host(Counter why) {
        kind = Kind::host;
        if (reason == Counter::host) reason = why;  // the first reason of the call
    }
};

struct Level {
    bool created = false;
    bool usable = false;
    bool alias_node = false;  // socket level on nodes with one socket each: the node level serves it
    vocab::Reason decline = vocab::Reason::sharp_unavailable;
    bool direct = false;      // every rank alone on its node: no shared memory, every rank a member
    const char* name = "node";
    // shared-memory domain (node or socket)
    ShmState* shm = nullptr;
    bool owns_shm = false;
    MPI_Comm domain_comm = MPI_COMM_NULL;
    bool owns_domain_comm = false;
    int me = 0;  // rank in the domain; 0 is the leader
    NodeSegment verdict_segment;  // shim/paths/node_segment.h
    VerdictLine* verdict = nullptr;
    uint64_t calls = 0;  // calls run on the domain (identical on its ranks)
    // the SHARP members
    MPI_Comm leader_comm = MPI_COMM_NULL;
    bool owns_leader_comm = false;
    char* scratch = nullptr;  // direct: 2 x kDirectChunk (in-place input copy, bounce), registered
    sharp::Group group;
};

void release_level(Level& level);

// The path's per-communicator slot (PathSlot::sharp).
struct SharpState : PathState {
    Level levels[2];  // node leaders, socket leaders
    // Socket level first: its shared state is its own; the node level's is the node slot's (released after this).
    ~SharpState() override {
        release_level(levels[1]);
        release_level(levels[0]);
    }
};

struct Plan {
    bool host = false;
    Counter host_reason = Counter::host;
    Aggregation aggregation = Aggregation::llt;
    sharp::Element element{};
};

// ---------------------------------------------------------------------------------------------------------------
// Creation (collective over the communicator; identical outcome on every rank)

bool create_verdict(Level& level, MPI_Comm domain, int domain_rank) {
    char* base = nullptr;
    {
        const ErrorsReturn errors_return(domain);  // a refused window is a decline (agreed in create_group), not an abort
        base = allocate_shared(domain, domain_rank == 0, sizeof(VerdictLine), &level.verdict_segment);
    }
    if (base != nullptr) {
        level.verdict = reinterpret_cast<VerdictLine*>(base);
        if (domain_rank == 0) new (level.verdict) VerdictLine{{0}, {0}};
    }
    PMPI_Barrier(domain);  // initialized before anyone reads it
    return level.verdict != nullptr;
}

void create_direct(PathContext& ctx, Level& level) {
    level.direct = true;
    level.name = "rank";
    // A split, not MPI_Comm_dup, which would run the user's attribute copy callbacks (and, at the free, delete).
    comm_split_twice(ctx.comm, 0, ctx.rank, &level.leader_comm);  // twice: shim/base/mpi_util.h
    level.owns_leader_comm = true;
    level.scratch = static_cast<char*>(std::aligned_alloc(4096, 2 * kDirectChunk));
    sharp::GroupSpec spec;
    spec.leader_comm = level.leader_comm;
    spec.leader = true;
    spec.local_rank = 0;
    spec.members = ctx.size;
    spec.local_ok = level.scratch != nullptr && level.leader_comm != MPI_COMM_NULL;  // every rank is a member
    if (level.scratch != nullptr) spec.pins.emplace_back(level.scratch, 2 * kDirectChunk);
    spec.name = "rank";
    sharp::create_group(ctx, level.group, spec);
    level.usable = level.group.usable;
}

// The pins of a domain leader: its window's chunk buffers (slots and results), where SHARP reads and writes.
std::size_t shm_buffer_bytes(const ShmState& shm) {
    return static_cast<std::size_t>(kShmBuffers) * (static_cast<std::size_t>(shm.ppn) + 1) * shm.chunk_bytes;
}

// `comms_ok`: this rank's leader communicators were made (agreed with the rest in sharp::create_group).
void create_domain_group(PathContext& ctx, Level& level, int members, int local_rank, bool comms_ok) {
    const bool verdict_ok = create_verdict(level, level.domain_comm, level.me);
    sharp::GroupSpec spec;
    spec.leader_comm = level.leader_comm;
    spec.leader = level.me == 0;
    spec.local_rank = local_rank;
    spec.members = members;
    spec.local_ok = verdict_ok && comms_ok;
    if (spec.leader) spec.pins.emplace_back(level.shm->buffers, shm_buffer_bytes(*level.shm));
    spec.name = level.name;
    sharp::create_group(ctx, level.group, spec);
    level.usable = level.group.usable;
}

void create_node(PathContext& ctx, Level& level) {
    if (ctx.node_count < 2) return;  // one node: nothing for the switches to reduce (declines; same on all ranks)
    vocab::Reason reason = vocab::Reason::sharp_unavailable;
    // The largest window at once, then frozen: its memory is registered with SHARP, so it must never move.
    ShmState* shm = node_shm(ctx, UINT64_MAX, &reason);
    if (shm == nullptr) {
        level.decline = reason;
        return;
    }
    shm->frozen = true;
    level.shm = shm;
    level.domain_comm = ctx.node_communicator();
    level.me = ctx.node_rank;
    // Both agreed on every rank: when either could not be made (no communicator id left), every rank declines.
    if (level.domain_comm == MPI_COMM_NULL || !node_leader_comm(ctx, 1, &level.leader_comm)) {  // l = 1: shared
        level.decline = vocab::Reason::path_unavailable;                                          // with multileader
        return;
    }
    create_domain_group(ctx, level, ctx.node_count, 0, true);
}

// The socket of this rank within its node: emulated under ARSHIM_VIRTUAL_PPN (two sockets per emulated node, the
// first half of its ranks on socket 0), else the processor package it runs on.
int socket_index(const PathContext& ctx) {
    if (ctx.settings->virtual_ppn > 0) return ctx.node_rank * 2 / std::max(1, ctx.node_size);
    return std::max(0, sharp::socket_of_process());
}

void create_socket(PathContext& ctx, Level& level) {
    level.name = "socket";
    const MPI_Comm node = ctx.node_communicator();
    if (node == MPI_COMM_NULL) {  // could not be made (agreed on every rank)
        level.decline = vocab::Reason::path_unavailable;
        return;
    }
    MPI_Comm socket_comm = MPI_COMM_NULL;
    const int split_rc = comm_split_twice(node, socket_index(ctx), ctx.node_rank, &socket_comm);
    int rank = 0, size = 1;
    if (socket_comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(socket_comm, &rank);
        PMPI_Comm_size(socket_comm, &size);
    }
    const int is_leader = rank == 0 ? 1 : 0;
    int on_node = 0;
    PMPI_Allreduce(&is_leader, &on_node, 1, MPI_INT, MPI_SUM, node);
    int maxima[3] = {on_node, size, split_rc == MPI_SUCCESS ? 0 : 1};
    PMPI_Allreduce(MPI_IN_PLACE, maxima, 3, MPI_INT, MPI_MAX, ctx.comm);
    if (maxima[2] != 0) {  // a socket communicator could not be made somewhere: every rank declines
        if (socket_comm != MPI_COMM_NULL) PMPI_Comm_free(&socket_comm);
        level.decline = vocab::Reason::path_unavailable;
        return;
    }
    if (maxima[0] == 1) {  // one socket per node everywhere: socket leaders are the node leaders
        PMPI_Comm_free(&socket_comm);
        level.alias_node = true;
        return;
    }
    int members = 0;
    PMPI_Allreduce(&is_leader, &members, 1, MPI_INT, MPI_SUM, ctx.comm);
    level.domain_comm = socket_comm;
    level.owns_domain_comm = true;
    level.me = rank;

    ShmDomain domain;
    domain.comm = socket_comm;
    domain.rank = rank;
    domain.size = size;
    domain.size_max = maxima[1];
    domain.count = members;
    domain.name = "socket";
    level.shm = maxima[1] <= kMaxPpn ? create_shm_state(ctx, domain, SIZE_MAX) : nullptr;  // same on all ranks
    if (level.shm != nullptr) level.shm->frozen = true;  // registered with SHARP: never moves
    level.owns_shm = level.shm != nullptr;
    if (level.shm == nullptr || !level.shm->usable) {
        level.decline = level.shm == nullptr ? vocab::Reason::path_unavailable : vocab::Reason::shm_unavailable;
        return;
    }
    bool comms_ok = comm_split_twice(ctx.comm, is_leader ? 0 : MPI_UNDEFINED, ctx.rank, &level.leader_comm) ==
                    MPI_SUCCESS;
    level.owns_leader_comm = true;
    // Rank among the socket leaders of this node (SHARP's world_local_rank).
    MPI_Comm node_leaders = MPI_COMM_NULL;
    int local_rank = 0;
    comms_ok &= comm_split_twice(node, is_leader ? 0 : MPI_UNDEFINED, ctx.node_rank, &node_leaders) == MPI_SUCCESS;
    if (node_leaders != MPI_COMM_NULL) {
        PMPI_Comm_rank(node_leaders, &local_rank);
        PMPI_Comm_free(&node_leaders);
    }
    create_domain_group(ctx, level, members, local_rank, comms_ok);
}

Level& level_for(PathContext& ctx, SharpState& state, policy::SharpLeaders leaders) {
    Level& node = state.levels[0];
    auto ensure_node = [&ctx, &node]() -> Level& {
        if (!node.created) {
            node.created = true;
            if (!ctx.admit())  // ARSHIM_MAX_COMMS; agreed, so every rank declines alike
                node.decline = vocab::Reason::comm_limit;
            else if (ctx.ppn_max == 1)
                create_direct(ctx, node);
            else
                create_node(ctx, node);
        }
        return node;
    };
    if (leaders == policy::SharpLeaders::node || ctx.ppn_max == 1) return ensure_node();
    Level& socket = state.levels[1];
    if (!socket.created) {
        socket.created = true;
        if (ctx.admit())
            create_socket(ctx, socket);
        else
            socket.decline = vocab::Reason::comm_limit;
    }
    return socket.alias_node ? ensure_node() : socket;
}

// ---------------------------------------------------------------------------------------------------------------
// Per call

Plan make_plan(const Call& call, Level& level) {
    Plan plan;
    sharp::Group& g = level.group;
    sharp::Element& e = plan.element;
    e.size = call.type.size;
    const bool loc = call.kop == kernels::Op::minloc || call.kop == kernels::Op::maxloc;
    if (!sharp::map_type(call.type.type, call.kop, &e.dtype, &e.tag) || !sharp::map_op(call.kop, &e.op) ||
        !g.has(g.dtypes, e.dtype) || !g.has(g.ops, e.op) || (loc && !g.has(g.tag_dtypes, e.tag))) {
        plan.host = true;
        plan.host_reason = Counter::host_unsupported;
        return plan;
    }
    bool sat = false;
    switch (call.decision.get<policy::SharpParams>().mode) {
    case policy::SharpMode::llt: sat = false; break;
    case policy::SharpMode::sat: sat = true; break;
    case policy::SharpMode::automatic:
        sat = call.bytes >= call.ctx.settings->sharp_sat_threshold;
        break;
    }
    plan.aggregation = sat ? Aggregation::sat : Aggregation::llt;
    if (sat) {
        if (!(g.features & SHARP_FEATURE_SAT) || g.sat_denied) {
            plan.host = true;
            plan.host_reason = Counter::host_no_sat;
        } else if (g.sat_skip > 0) {  // back-off after repeated lock failures (leaders only; agreed history)
            --g.sat_skip;
            plan.host = true;
            plan.host_reason = Counter::host_sat_lock;
        }
    } else if (!(g.features & SHARP_FEATURE_LLT) || sharp::piece_elements(g, Aggregation::llt, e.size, 0) == 0) {
        plan.host = true;
        plan.host_reason = Counter::host_no_llt;
    }
    return plan;
}

void backoff(int attempt) {
    timespec pause{0, 20000L << attempt};  // 20, 40, 80 us
    nanosleep(&pause, nullptr);
}

// After an agreed failure that is not retried: what the rest of the call does, identically on every leader.
void after_failure(const Call& call, Level& level, const Outcome& all, CallResult& result) {
    sharp::Group& g = level.group;
    switch (all.status) {
    case Status::lock:
        result.lock_failed = true;
        result.to_host(Counter::host_sat_lock);
        break;
    case Status::denied:
        g.sat_denied = true;
        result.to_host(Counter::host_no_sat);
        break;
    case Status::error:
    case Status::ok: {
        result.disabled = true;
        result.to_host(Counter::host_error);
        int leader_rank = 0;
        PMPI_Comm_rank(level.leader_comm, &leader_rank);
        if (leader_rank == 0 && log::first_time("sharp-error")) {
            const std::string why = g.api != nullptr ? g.api->describe(all.rc) : std::to_string(all.rc);
            log::warn("SHARP allreduce failed on a {} leader: {}; SHARP is disabled on this communicator ({} "
                      "ranks), the call completed on the host path",
                      level.name, why, call.ctx.size);
            trace::event("sharp_warning", {{"problem", "allreduce_failed"}, {"leaders", level.name},
                                           {"communicator", call.ctx.stats_id}, {"error", why}});
        }
        break;
    }
    }
}

// End of a call on the leaders: SAT lock back-off (from agreed outcomes only, so identical on every leader).
void update_backoff(sharp::Group& g, const CallResult& result) {
    if (result.lock_failed) {
        if (++g.lock_failed_calls >= kLockFailedCallsBeforeBackoff) {
            g.sat_skip = kSatBackoffCalls;
            g.lock_failed_calls = 0;
        }
    } else if (result.kind == Kind::sat) {
        g.lock_failed_calls = 0;
    }
}

// Counts the call by how it ran; the same kind goes into the call's statistics row.
stats::SharpRun account(const CallResult& result) {
    switch (result.kind) {
    case Kind::llt: sharp::count(Counter::llt); return stats::SharpRun::llt;
    case Kind::sat: sharp::count(Counter::sat); return stats::SharpRun::sat;
    case Kind::host: break;
    }
    sharp::count(Counter::host);
    sharp::count(result.reason);
    switch (result.reason) {
    case Counter::host_no_sat: return stats::SharpRun::host_no_sat;
    case Counter::host_no_llt: return stats::SharpRun::host_no_llt;
    case Counter::host_sat_lock: return stats::SharpRun::host_sat_lock;
    case Counter::host_error: return stats::SharpRun::host_error;
    default: return stats::SharpRun::host_unsupported;
    }
}

void disable(const PathContext& ctx, Level& level) {
    if (level.group.leader) sharp::destroy_group(level.group);  // every leader, at the same call
    level.group.usable = false;
    level.usable = false;
    if (ctx.rank == 0) sharp::count(Counter::disabled);  // group events: once per communicator
}

// Rebuilds a domain leader's node-reduced chunk from the ranks' slots (still intact: nobody may overwrite them
// before this leader publishes the chunk), after SHARP may have written part of it.
void rebuild_chunk(const ShmState& state, kernels::NaryFn reduce, void* data, std::size_t count) {
    for (int b = 0; b < kShmBuffers; ++b) {
        if (state.result(b) != data) continue;
        const void* sources[kMaxPpn];
        for (int r = 0; r < state.ppn; ++r) sources[r] = state.slot(b, r);
        reduce(data, sources, static_cast<std::size_t>(state.ppn), count);
        return;
    }
}

// A domain leader's inter-node step for one chunk: SHARP, agreed; on failure the host path from rebuilt input.
int leader_step(const Call& call, Level& level, const Plan& plan, CallResult& result, kernels::NaryFn reduce,
                MPI_Op op, void* data, std::size_t count) {
    sharp::Group& g = level.group;
    if (result.kind != Kind::host) {
        const sharp::Buffer buffer{data, g.pinned_mr(), false};
        for (int attempt = 0;; ++attempt) {
            const Outcome all =
                sharp::agree(g, sharp::reduce(g, plan.aggregation, plan.element, buffer, buffer, count, nullptr, 0));
            if (all.status == Status::ok) return MPI_SUCCESS;
            rebuild_chunk(*level.shm, reduce, data, count);
            if (all.status == Status::lock && attempt < kLockRetries) {
                sharp::count(Counter::sat_lock_retries);
                backoff(attempt);
                continue;
            }
            after_failure(call, level, all, result);
            break;
        }
    }
    return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, op, level.leader_comm);
}

PathOutcome run_domain(const Call& call, Level& level, const Plan& plan) {
    const kernels::NaryFn reduce = call.nary;
    if (reduce == nullptr) return PathOutcome::decline(vocab::Reason::unsupported_op_type);
    const bool leader = level.me == 0;
    const MPI_Op op = call.library_op;
    const uint64_t call_no = ++level.calls;

    CallResult result;
    result.kind = plan.aggregation == Aggregation::sat ? Kind::sat : Kind::llt;
    if (plan.host) result.to_host(plan.host_reason);
    auto internode = [&](void* data, std::size_t count) {
        return leader_step(call, level, plan, result, reduce, op, data, count);
    };
    // Node leaders: the node protocol itself; socket leaders: the same protocol over the socket's ranks.
    const int rc = !level.owns_shm
                       ? run_node_protocol(call, *level.shm, reduce, 1, internode)
                       : run_shm_protocol(call, *level.shm, reduce, 1, level.me, true, internode);
    if (leader) {
        update_backoff(level.group, result);
        level.verdict->word.store(result.encode(), std::memory_order_relaxed);
        level.verdict->sequence.store(call_no, std::memory_order_release);
        node_published();
    } else {
        wait_at_least(level.verdict->sequence, call_no, call.ctx.wait);
        result = CallResult::decode(level.verdict->word.load(std::memory_order_relaxed));
    }
    const stats::SharpRun run = account(result);
    if (result.disabled) disable(call.ctx, level);
    return PathOutcome::done(rc, run);
}

// Every rank alone on its node: every rank is a member and SHARP works on the user's memory. In place, each chunk
// of recvbuf is first copied to the registered scratch buffer, which stays the chunk's intact input.
PathOutcome run_direct(const Call& call, Level& level, const Plan& plan) {
    const CallArgs& args = call.args;
    sharp::Group& g = level.group;
    CallResult result;
    result.kind = plan.aggregation == Aggregation::sat ? Kind::sat : Kind::llt;
    if (plan.host) {
        result.to_host(plan.host_reason);
        const stats::SharpRun run = account(result);
        return PathOutcome::done(run_native(args), run);
    }
    const std::size_t size = call.type.size;
    const std::size_t count = static_cast<std::size_t>(args.count);
    const bool in_place = args.sendbuf == MPI_IN_PLACE;
    char* recv = static_cast<char*>(args.recvbuf);
    const char* send = static_cast<const char*>(args.sendbuf);
    const sharp::Buffer bounce{level.scratch + kDirectChunk, g.pinned_mr(), false};
    const std::size_t chunk = in_place ? kDirectChunk / size : count;
    const MPI_Op op = call.library_op;
    int rc = MPI_SUCCESS;

    for (std::size_t first = 0; first < count; first += chunk) {
        const std::size_t n = std::min(chunk, count - first);
        char* out = recv + first * size;
        const char* in = in_place ? level.scratch : send + first * size;
        if (in_place) {
            std::memcpy(level.scratch, out, n * size);
            charge::copy(n * size);  // the SMPI build's simulated time (shim/base/sim_charge.h); else nothing
        }
        if (result.kind != Kind::host) {
            const sharp::Buffer ib{in, in_place ? g.pinned_mr() : nullptr, !in_place};
            const sharp::Buffer ob{out, nullptr, true};
            for (int attempt = 0;; ++attempt) {
                const Outcome all =
                    sharp::agree(g, sharp::reduce(g, plan.aggregation, plan.element, ib, ob, n, &bounce, kDirectChunk));
                if (all.status == Status::ok) break;
                if (all.status == Status::lock && attempt < kLockRetries) {  // inputs are intact: retry
                    sharp::count(Counter::sat_lock_retries);
                    backoff(attempt);
                    continue;
                }
                after_failure(call, level, all, result);
                break;
            }
            if (result.kind != Kind::host) continue;
        }
        // Host path for this chunk, from the intact input.
        const int chunk_rc = in_place ? PMPI_Allreduce(level.scratch, out, static_cast<int>(n), args.datatype, op,
                                                       level.leader_comm)
                                      : run_native(args);  // not in place: one chunk, the whole call
        if (rc == MPI_SUCCESS) rc = chunk_rc;
    }
    update_backoff(g, result);
    const stats::SharpRun run = account(result);
    if (result.disabled) disable(call.ctx, level);
    return PathOutcome::done(rc, run);
}

void release_level(Level& level) {
    if (!level.created) return;
    sharp::destroy_group(level.group);
    release_shared(&level.verdict_segment);
    level.verdict = nullptr;
    if (level.owns_shm) free_shm_state(level.shm);
    level.shm = nullptr;
    if (level.owns_leader_comm && level.leader_comm != MPI_COMM_NULL) PMPI_Comm_free(&level.leader_comm);
    if (level.owns_domain_comm && level.domain_comm != MPI_COMM_NULL) PMPI_Comm_free(&level.domain_comm);
    std::free(level.scratch);
    level.scratch = nullptr;
    level.created = false;
}

}  // namespace sharp_path

PathOutcome serve_sharp(const Call& call) {
    using namespace sharp_path;
    PathContext& ctx = call.ctx;
    // ARSHIM_SHARP=off is the same on every rank: decline without any collective. Everything else (is the library
    // there?) is agreed when the level is created.
    if (sharp::library(*ctx.settings).mode == sharp::Mode::off) {
        sharp::count(Counter::unavailable);
        return PathOutcome::decline(vocab::Reason::sharp_unavailable);
    }
    Level& level = level_for(ctx, ctx.ensure_slot<SharpState>(PathSlot::sharp), call.decision.get<policy::SharpParams>().leaders);
    if (!level.usable) {
        sharp::count(Counter::unavailable);
        return PathOutcome::decline(level.decline);
    }
    const Plan plan = make_plan(call, level);
    return level.direct ? run_direct(call, level, plan) : run_domain(call, level, plan);
}

}  // namespace arshim
