// Node shared-memory reduction: the intra-node machinery of the multi-leader (DPML) path, seed 001 (Bayatpour et
// al.) §1 and §4, shared with the SHARP path (which replaces the inter-node step).
//
// Per chunk of the user's buffer:
//   (1) every rank copies its chunk into its own slot of a node shared-memory window;
//   (2) leader j (node ranks 0..l-1) reduces partition j of the chunk over all ppn slots with the n-ary kernel,
//       into the chunk's result area;
//   (3) with several nodes, leader j reduces its partition across nodes (the caller's inter-node step: l concurrent
//       MPI allreduces for multileader, SHARP for the sharp path);
//   (4) every rank copies the reduced chunk out into recvbuf.
// Chunks are small (cache sized on one node) and the window holds kShmBuffers of them, so the phases of consecutive
// chunks overlap and the data a leader reduces is still in cache when it reads it. A call's chunk is its size
// rounded up to a power of two, between kMinChunk and the domain's preferred chunk (call_chunk_bytes): a function of
// values identical on every rank, so every node cuts a call alike. The window starts with room for the first
// call's chunk and grows on demand, up to the preferred chunk and ARSHIM_SHM_MAX (grow_shm_state): a communicator
// that only ever reduces a few bytes costs a few KiB per rank of its node, not megabytes.
//
// Synchronization protocol (no MPI_Barrier per call). The window's control area holds, per node rank, three
// monotonically increasing 64-bit sequence numbers, each on its own cache line:
//   arrived[r] = s  rank r has copied its input for chunk s into its slot;
//   reduced[j] = s  leader j has written its (node- and, with several nodes, globally-) reduced partition of s;
//   copied[r]  = s  rank r has copied chunk s's result out.
// Chunk s uses buffer s % kShmBuffers. Before writing its slot for chunk s a rank has already seen reduced[*] >= s-1
// (it copied out s-1; with several nodes it copies chunk s in one chunk ahead, before waiting for chunk s-1's result,
// having seen reduced[*] >= s-2 = s - kShmBuffers, the chunk that used the buffer before), and leaders reduce chunks
// in order, so a slot is never overwritten before it was reduced. A
// leader writes the result area of buffer s % kShmBuffers only after copied[*] >= s - kShmBuffers (everyone read the
// chunk that used it before). Stores are release (across nodes sequentially consistent, for the sleeping waits
// below), loads acquire, so the data written before a store is visible after the load. Sequence numbers continue across calls (every rank of the node makes the same calls in the same order),
// so the protocol needs no reset. Waiting polls briefly, then yields the CPU (wait_at_least, below).
//
// Small calls on one domain (policy::model::node_reduces_directly): every rank reduces the whole chunk from all
// slots itself, straight into its recvbuf, so a chunk costs one wait (arrived[*] >= s) instead of two (inputs at the
// leaders, results at everyone). Same kernel over the same slots in node-rank order as a leader's reduction: the
// same bits as the leader scheme, on every rank. Each rank then stores copied[me] = s (the leader scheme's
// result-area wait relies on it). No other wait is needed, in either direction of a switch between the two schemes
// on one window: a rank writes its slot of chunk s after it finished chunk s-1, which means it saw arrived[*] >= s-1
// (direct) or reduced[*] >= s-1 (leaders), and either says that every rank that reads slots (all of them, or the
// leaders) finished chunk s-2, the previous user of the buffer; the direct scheme never writes the result area.
#pragma once

#include <mpi.h>

#include <chrono>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "policy/cost_model.h"
#include "shim/base/sim_charge.h"
#include "shim/paths/call.h"
#include "shim/paths/node_segment.h"
#include "shim/paths/path_context.h"
#include "shim/paths/shm_layout.h"

namespace arshim {

using shm::kCacheLine;
using shm::kMinChunk;
constexpr int kShmBuffers = 2;
constexpr int kMaxPpn = 1024;      // sources of one n-ary reduction are kept on the stack
constexpr int kMaxLeaders = 64;

struct alignas(kCacheLine) ShmCounter {
    std::atomic<uint64_t> value;
    std::atomic<uint32_t> sleepers;  // ranks asleep until `value` changes (wait_sleeping), for publish_waking
};
static_assert(sizeof(ShmCounter) == kCacheLine, "one counter per cache line");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory counters must be lock-free");

// Waiting for the other ranks of the domain, as `wait` says (shim/paths/path_context.h WaitPolicy: the context's).
void wait_polling(const std::atomic<uint64_t>& counter, uint64_t target, const WaitPolicy& wait);

inline void wait_at_least(const std::atomic<uint64_t>& counter, uint64_t target, const WaitPolicy& wait) {
    if (counter.load(std::memory_order_acquire) < target) wait_polling(counter, target, wait);
}

// Waits that can be long: with several nodes a rank waits for the leaders' inter-node step (milliseconds for a 1 MiB
// chunk on a slow link). A rank that yields in a loop for that long still takes CPU time from the ones it waits for
// when ranks share cores, and the leaders' network progress is what it takes: whole launches then ran their
// inter-node steps far slower, and none did with the waiting ranks asleep (docs/cluster.md "One chunk ahead").
// So after ARSHIM_SLEEP_AFTER_US (default 1 ms) of polling and yielding, wait_sleeping sleeps on a futex on the
// counter's word until a publish_waking of it (or, as a safety net, a timeout, then looks again). A wake costs a
// system call and some microseconds of latency, only after a wait of 1 ms already. The counter's publishers must
// all use publish_waking while a rank may sleep on it: run_shm_protocol uses both for its calls across nodes (and
// the reproducible path's chain publishes waking), plain stores and waits otherwise.
void wait_sleeping(ShmCounter& counter, uint64_t target, const WaitPolicy& wait);
void wake_sleepers(ShmCounter& counter);
// Waits like wait_at_least, driving MPI's progress engine meanwhile (the reproducible chain's leaders: their sends and
// receives move only while the process is inside MPI). The waits are defined in node_wait.cpp (node_wait_smpi.cpp in
// the SMPI build).
void wait_progressing(const std::atomic<uint64_t>& counter, uint64_t target, MPI_Comm comm);
// Every store a node wait may be waiting for is followed by node_published(). On a real node it is nothing (the
// waits look at the counter itself, or sleep on its futex: publish_waking). In the SMPI build a rank's wait sleeps
// in simulated time until a rank of its simulated host publishes, so that it ends exactly then
// (node_wait_smpi.cpp); a store without it would leave the waiter asleep, and the simulation would end in SimGrid's
// deadlock report.
#if defined(ARSHIM_FLAVOR_SMPI)
void node_published();
#else
inline void node_published() {}
#endif
inline void publish_waking(ShmCounter& counter, uint64_t value) {
    // seq_cst store and load: either this load sees a sleeper's registration, or that sleeper's own seq_cst load
    // after registering sees `value` (and the kernel's check of the futex word catches a store in between).
    counter.value.store(value, std::memory_order_seq_cst);
    if (counter.sleepers.load(std::memory_order_seq_cst) != 0) wake_sleepers(counter);
    node_published();
}

// A shared-memory domain: the ranks that run the chunk protocol together. The multileader path's domain is always
// the node (node_shm); the SHARP path with socket leaders uses the ranks of one socket of a node (shim/sharp/path.cpp).
struct ShmDomain {
    MPI_Comm comm = MPI_COMM_NULL;  // the domain's ranks (must share memory; not owned)
    int rank = 0;                   // my rank in `comm`
    int size = 1;
    int size_max = 1;               // largest domain of the communicator (identical on all ranks)
    int count = 1;                  // domains of the communicator (identical on all ranks)
    const char* name = "node";      // for the log
    bool leaders_may_ring = false;  // the multi-leader path's node domain: its leaders may take ARShim's ring
};

// The window and protocol state of one shared-memory domain: the node (its context slot, below) or, for the SHARP
// path's socket leaders, a socket.
struct ShmState {
    NodeSegment segment;  // the window's memory (shim/paths/node_segment.h)
    char* base = nullptr;
    int ppn = 0;
    std::size_t chunk_bytes = 0;  // the window's chunk capacity (slot stride); identical on every node
    std::size_t preferred_chunk = 0;  // the largest chunk a call uses (identical on every node)
    std::size_t max_chunk = 0;        // the largest chunk ARSHIM_SHM_MAX allows (identical on every node)
    bool frozen = false;              // never regrown (the SHARP path registered the window's memory)
    std::size_t grow_failed = 0;      // a chunk size the window could not grow to (not retried)
    ShmDomain domain;
    ShmCounter* arrived = nullptr;
    ShmCounter* reduced = nullptr;
    ShmCounter* copied = nullptr;
    char* buffers = nullptr;  // kShmBuffers x (ppn slots + 1 result), each chunk_bytes
    uint64_t sequence = 0;    // last chunk sequence number used (identical on the node's ranks)
    bool usable = false;
    uint64_t token = 0;  // agreed by the ranks that made the window (shim/paths/window_pool.h)

    char* slot(int buffer, int rank) const {
        return buffers + (static_cast<std::size_t>(buffer) * (ppn + 1) + static_cast<std::size_t>(rank)) * chunk_bytes;
    }
    char* result(int buffer) const { return slot(buffer, ppn); }
    // The window's bytes (what create_shm_state() asked for).
    std::size_t window_bytes() const {
        return 3 * static_cast<std::size_t>(ppn) * kCacheLine +
               static_cast<std::size_t>(kShmBuffers) * (static_cast<std::size_t>(ppn) + 1) * chunk_bytes;
    }
};

// The node domain's context slot (PathSlot::node_shm), shared by the multileader and SHARP paths: the node window
// and the leader communicators (one per leader count l: node rank j < l of every node).
struct NodeShm : PathState {
    ShmState* state = nullptr;
    // The node's ranks, in node-rank order: the communicator the window is made (and grown) on. Owned; kept with the
    // window when the window goes to the pool (shim/paths/window_pool.h).
    MPI_Comm window_comm = MPI_COMM_NULL;
    std::vector<int> members;  // the node's world ranks in node-rank order (the pool's key); empty: never kept
    MPI_Comm leader_comm[kMaxLeaders + 1];  // by leader count; this rank's own leader communicator
    bool leader_failed[kMaxLeaders + 1];    // by leader count: could not be made (agreed), never tried again
    NodeShm();
    // Collective over the node (the window, unless the pool keeps it) and the user's communicator (leader comms).
    ~NodeShm() override;
};

// The context's node state, built on first use and grown to the chunk a call of `bytes` needs (collective over the
// communicator; every rank learns the same outcome). `bytes` = UINT64_MAX asks for the largest window at once.
// Returns nullptr when the path must decline, with *reason set; the decision is identical on all ranks.
ShmState* node_shm(PathContext& ctx, uint64_t bytes, vocab::Reason* reason);

// The chunk a call of `bytes` uses in `state`'s window.
inline std::size_t call_chunk_bytes(const ShmState& state, uint64_t bytes) {
    return shm::call_chunk_bytes(bytes, state.preferred_chunk, state.chunk_bytes);
}

// Builds the window and protocol state of one domain with room for chunks of `chunk` bytes (at most the preferred
// chunk and what ARSHIM_SHM_MAX allows; collective over ctx.comm; every rank learns the same outcome: `usable` is
// identical on all ranks). node_shm() is create_shm_state() for the node domain, kept in its context slot.
ShmState* create_shm_state(PathContext& ctx, const ShmDomain& domain, std::size_t chunk);
// Whether the `size` ranks of `comm` (a node's or socket's, as the layout says) really share memory: ARSHIM_VIRTUAL_PPN
// can group ranks that do not. Without it, every domain is a node of ARShim's own node map (shim/base/node_key.h) or a
// part of one, so the check (one allreduce: every rank has the same node key) is made only under ARSHIM_VIRTUAL_PPN
// (docs/paths.md "Whether a node's ranks share memory").
// Collective over `comm`; the caller agrees the outcome over the user's communicator.
bool shares_memory(const PathContext& ctx, MPI_Comm comm, int size);
// Frees what create_shm_state() made (collective over the domain: the window) and the state itself.
void free_shm_state(ShmState* state);

// The communicator of leader j = this rank's node rank across nodes, for `leaders` leaders per node, in *out
// (collective over the user's communicator the first time; node_shm() must have built the slot); MPI_COMM_NULL for
// ranks that are not leaders. False, on every rank alike, when it could not be made: the caller declines.
bool node_leader_comm(PathContext& ctx, int leaders, MPI_Comm* out);

// ARSHIM_PHASE_TIMES=1 (debug; WaitPolicy::phase_times): seconds this process spent in each phase of the protocol
// below, summed over every call and chunk, printed at finalize (report_phase_times). Off, a call pays one
// predictable branch per chunk.
struct PhaseTimes {
    double copy_in = 0, wait_inputs = 0, reduce = 0, internode = 0, wait_results = 0, copy_out = 0;
    uint64_t chunks = 0, calls = 0;
    // The latency and multi-leader paths' inter-node steps, and those on ARShim's ring and recursive doubling.
    uint64_t internode_steps = 0, ring_steps = 0, doubling_steps = 0, rabenseifner_steps = 0;
    uint64_t sleeps = 0;                           // waits that went to sleep (wait_sleeping)
};
extern PhaseTimes g_phase_times;  // the calling threads' sums (a debug aid: unsynchronized across threads)
// Prints this rank's sums ("arshim[R] phases: ..."), if it spent time in the protocol.
void report_phase_times(int world_rank);
// Counts one inter-node step taken as `step` (ARSHIM_PHASE_TIMES only).
inline void count_internode_step(const WaitPolicy& wait, policy::model::InternodeStep step) {
    if (!wait.phase_times) return;
    ++g_phase_times.internode_steps;
    g_phase_times.ring_steps += step == policy::model::InternodeStep::ring ? 1 : 0;
    g_phase_times.doubling_steps += step == policy::model::InternodeStep::doubling ? 1 : 0;
    g_phase_times.rabenseifner_steps += step == policy::model::InternodeStep::rabenseifner ? 1 : 0;
}

class PhaseClock {
public:
    explicit PhaseClock(const WaitPolicy& wait) : on_(wait.phase_times) {
        if (on_) last_ = std::chrono::steady_clock::now(), ++g_phase_times.calls;
    }
    // Adds the time since the previous lap to `phase`.
    void lap(double PhaseTimes::*phase) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        g_phase_times.*phase += std::chrono::duration<double>(now - last_).count();
        last_ = now;
    }
    void chunk() {
        if (on_) ++g_phase_times.chunks;
    }

private:
    bool on_;
    std::chrono::steady_clock::time_point last_;
};

// Runs the chunk protocol for one call over a domain in which this rank is `me`. `internode(void* data,
// std::size_t count)` is called by each leader with its reduced partition of every chunk when there are several
// domains (`multinode`); it returns an MPI error code. An `internode(void* data, std::size_t count, void* scratch)`
// also gets `count` elements of scratch room.
template <typename InterNode>
int run_shm_protocol(const Call& call, ShmState& state, kernels::NaryFn reduce, int leaders, int me,
                     bool multinode, InterNode&& internode) {
    const std::size_t element = call.type.size;
    const std::size_t count = static_cast<std::size_t>(call.args.count);
    const std::size_t chunk_elements = call_chunk_bytes(state, call.bytes) / element;
    const char* input =
        static_cast<const char*>(call.args.sendbuf == MPI_IN_PLACE ? call.args.recvbuf : call.args.sendbuf);
    char* output = static_cast<char*>(call.args.recvbuf);
    const bool leader = me < leaders;
    const void* sources[kMaxPpn];
    int rc = MPI_SUCCESS;
    const WaitPolicy& wait = call.ctx.wait;
    PhaseClock clock(wait);
    const bool direct = !multinode && policy::model::node_reduces_directly(call.bytes, state.ppn);
    bool staged = false;  // this rank's input for the current chunk is in its slot already (copied ahead)
    // Across nodes the waits can be long: waiting ranks may sleep, so every store wakes them (wait_sleeping).
    auto publish = [multinode](ShmCounter& counter, uint64_t value) {
        if (multinode) {
            publish_waking(counter, value);
        } else {
            counter.value.store(value, std::memory_order_release);
            node_published();
        }
    };
    auto wait_for = [multinode, &wait](ShmCounter& counter, uint64_t target) {
        if (multinode) wait_sleeping(counter, target, wait);
        else wait_at_least(counter.value, target, wait);
    };

    for (std::size_t first = 0; first < count; first += chunk_elements) {
        const std::size_t n = std::min(chunk_elements, count - first);
        const uint64_t s = ++state.sequence;
        const int buffer = static_cast<int>(s % kShmBuffers);
        clock.chunk();

        // (1) my input chunk into my slot
        if (!staged) {
            std::memcpy(state.slot(buffer, me), input + first * element, n * element);
            charge::copy(n * element);  // the SMPI build's simulated time (shim/base/sim_charge.h); else nothing
            publish(state.arrived[me], s);
        }
        staged = false;
        clock.lap(&PhaseTimes::copy_in);

        if (direct) {
            for (int r = 0; r < state.ppn; ++r) wait_at_least(state.arrived[r].value, s, wait);
            clock.lap(&PhaseTimes::wait_inputs);
            for (int r = 0; r < state.ppn; ++r) sources[r] = state.slot(buffer, r);
            reduce(output + first * element, sources, static_cast<std::size_t>(state.ppn), n);
            charge::nary(n * element, static_cast<std::size_t>(state.ppn));
            state.copied[me].value.store(s, std::memory_order_release);
            node_published();
            clock.lap(&PhaseTimes::reduce);
            continue;
        }
        if (leader) {
            std::size_t part_first = 0, part_count = 0;
            shm::partition(n, element, leaders, me, &part_first, &part_count);
            for (int r = 0; r < state.ppn; ++r) wait_for(state.arrived[r], s);
            if (s > kShmBuffers)
                for (int r = 0; r < state.ppn; ++r) wait_for(state.copied[r], s - kShmBuffers);
            clock.lap(&PhaseTimes::wait_inputs);
            const std::size_t offset = part_first * element;
            if (part_count > 0) {
                // (2) reduce partition `me` over every rank's slot, in node-rank order (same bits on every rank)
                for (int r = 0; r < state.ppn; ++r) sources[r] = state.slot(buffer, r) + offset;
                reduce(state.result(buffer) + offset, sources, static_cast<std::size_t>(state.ppn), part_count);
                charge::nary(part_count * element, static_cast<std::size_t>(state.ppn));
                clock.lap(&PhaseTimes::reduce);
                // (3) across nodes; after an error the protocol still completes, so no rank of the node hangs.
                // A step that needs scratch room gets this leader's own slot at the partition: only this leader
                // read it (in (2)), and only this rank writes it again, for a later chunk.
                if (multinode && rc == MPI_SUCCESS) {
                    if constexpr (std::is_invocable_v<InterNode, void*, std::size_t, void*>)
                        rc = internode(state.result(buffer) + offset, part_count, state.slot(buffer, me) + offset);
                    else
                        rc = internode(state.result(buffer) + offset, part_count);
                }
                clock.lap(&PhaseTimes::internode);
            }
            publish(state.reduced[me], s);
        }

        // Several nodes: the next chunk's input goes into my slot before I wait for this chunk's result, so that the
        // leaders find every input there when their inter-node step ends instead of waiting for the ranks that were
        // copying this chunk out, time the leaders' link would stand idle (docs/cluster.md "One chunk ahead"). Safe:
        // the next chunk's buffer was last used by chunk s-1, whose slots every leader had reduced before storing
        // reduced[*] >= s-1, which I saw when I copied chunk s-1 out.
        if (multinode && count - first > chunk_elements) {
            const std::size_t next_first = first + chunk_elements;
            const std::size_t next_n = std::min(chunk_elements, count - next_first);
            std::memcpy(state.slot(static_cast<int>((s + 1) % kShmBuffers), me), input + next_first * element,
                        next_n * element);
            charge::copy(next_n * element);
            publish(state.arrived[me], s + 1);
            staged = true;
            clock.lap(&PhaseTimes::copy_in);
        }

        // (4) the whole reduced chunk out
        for (int j = 0; j < leaders; ++j) wait_for(state.reduced[j], s);
        clock.lap(&PhaseTimes::wait_results);
        std::memcpy(output + first * element, state.result(buffer), n * element);
        charge::copy(n * element);
        publish(state.copied[me], s);
        clock.lap(&PhaseTimes::copy_out);
    }
    return rc;
}

// The chunk protocol over the node: `internode` is called when the communicator spans several nodes.
template <typename InterNode>
int run_node_protocol(const Call& call, ShmState& state, kernels::NaryFn reduce, int leaders,
                      InterNode&& internode) {
    return run_shm_protocol(call, state, reduce, leaders, call.ctx.node_rank, call.ctx.node_count > 1,
                            std::forward<InterNode>(internode));
}

}  // namespace arshim
