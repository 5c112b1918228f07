// The latency path (policy/paths/latency.h; docs/paths.md "`latency`"): calls of up to kLatencyMaxBytes
// through cache-line slots in node shared memory.
//
// The node's window holds, for each of two buffers, one slot per node rank and one result slot. A slot is a header
// cache line {sequence number, 56 bytes} and kLatencyMaxBytes of payload lines; a vector of up to 56 bytes lives in
// the header line itself, so a reader that sees the sequence number has the data in the same cache line (one line
// moves between cores per remote rank), and a larger one starts at the next line.
//
// One call, sequence number s, buffer s % 2, every rank of the node:
//   copy my vector into my slot, store sequence = s (release);
//   one node: wait for every slot's sequence >= s (acquire), reduce all slots in node-rank order into recvbuf. Every
//     rank computes the result itself, with the same kernel over the same slots in the same order: the same bits on
//     every rank, and no broadcast step;
//   several nodes: node rank 0 waits for the slots, reduces them into recvbuf, combines it with the other nodes' rank
//     0s (ARShim's recursive doubling, or the library's allreduce: shim/paths/internode.h), copies the result into
//     the result slot and publishes it (waking sleepers: that wait can be long); the others wait for it and copy it
//     out. With one rank on every node there is no window: the rank is its node's rank 0.
// Reuse is safe with two buffers: a rank writes its slot of buffer s % 2 for call s after it finished call s-1, for
// which it saw every rank's slot (one node) or the result (several nodes) of s-1; every rank published s-1 only after
// finishing s-2, the previous call that used the buffer, so nobody still reads the slot or the result being
// overwritten. Sequence numbers continue across calls (every rank makes the same calls in the same order on a
// communicator): no reset, no read-modify-write atomics, no barrier. Waits poll briefly, then yield (node_shm.h).
#include <algorithm>
#include <cstring>
#include <new>

#include "policy/paths/latency.h"
#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/paths/internode.h"
#include "shim/paths/node_shm.h"
#include "shim/paths/paths.h"
#include "shim/stats/trace.h"

// Tests only (test/verify/kernel_fault.cpp, never installed): 1 = no wait for the other ranks' slots, 2 = one buffer
// instead of two (a slot reused by the next call while a slower rank may still read it); either must make
// test/mpi/check_sequence fail.
extern "C" int arshim_test_latency_fault() __attribute__((weak, visibility("hidden")));
// Tests only: nonzero fails this rank's window (ARSHIMTEST_FAIL_SHM, kernel_fault.cpp), as node_shm.cpp's.
extern "C" int arshim_test_fail_shm() __attribute__((weak, visibility("hidden")));

namespace arshim {

namespace {

constexpr std::size_t kInlineBytes = kCacheLine - sizeof(uint64_t);
constexpr std::size_t kPayloadBytes = policy::kLatencyMaxBytes;
constexpr int kBuffers = 2;
static_assert((kBuffers & (kBuffers - 1)) == 0, "a call's buffer is its sequence number masked");

struct alignas(kCacheLine) SlotHeader {
    std::atomic<uint64_t> sequence;
    char inline_data[kInlineBytes];
};
static_assert(sizeof(SlotHeader) == kCacheLine, "the sequence number and the small vector share one cache line");
constexpr std::size_t kSlotBytes = kCacheLine + kPayloadBytes;

struct LatencyState : PathState {
    NodeSegment segment;        // the slots' memory (shim/paths/node_segment.h)
    char* slots = nullptr;      // kBuffers x (ppn + 1) slots of kSlotBytes
    ShmCounter* result = nullptr;  // several nodes: the result slot's sequence (node rank 0 publishes it, waking)
    int ppn = 0;
    uint64_t sequence = 0;      // the last call's (identical on the node's ranks)
    uint64_t wait_mask = ~uint64_t{0};    // a wait is for sequence s & wait_mask (a test hook may make it 0)
    uint64_t buffer_mask = kBuffers - 1;  // call s uses buffer s & buffer_mask (a test hook may make it 0)
    MPI_Comm leaders = MPI_COMM_NULL;  // several nodes: node rank 0 of every node (MPI_COMM_NULL on the others)
    char* scratch = nullptr;   // several nodes, node rank 0: room for the inter-node step (a vector, kPayloadBytes)
    bool failed = false;        // could not be made (agreed): the path declines on this communicator for good
    // The context's wait policy, kept beside the slots: the call reaches it from the state it holds anyway (through
    // the context, the served call paid 5 instructions more: callgrind, issue 55).
    WaitPolicy wait;

    SlotHeader* header(int buffer, int rank) const {
        return reinterpret_cast<SlotHeader*>(slots + (static_cast<std::size_t>(buffer) * (ppn + 1) + rank) * kSlotBytes);
    }
    // Where a slot's vector of `bytes` lives: in the header line when it fits there, else in the payload lines.
    static char* data(SlotHeader* h, uint64_t bytes) {
        return bytes <= kInlineBytes ? h->inline_data : reinterpret_cast<char*>(h) + kCacheLine;
    }
    ~LatencyState() override {
        release_shared(&segment);
        if (leaders != MPI_COMM_NULL) PMPI_Comm_free(&leaders);
        delete[] scratch;
    }
};

// Builds the communicator's state on its first latency call (collective over the communicator; the outcome is agreed,
// so every rank declines alike).
LatencyState* latency_state(PathContext& ctx, vocab::Reason* reason) {
    auto* state = ctx.slot<LatencyState>(PathSlot::latency);
    if (state != nullptr) {
        if (!state->failed) return state;
        *reason = vocab::Reason::shm_unavailable;
        return nullptr;
    }
    state = &ctx.ensure_slot<LatencyState>(PathSlot::latency);
    state->wait = ctx.wait;
    if (ctx.ppn_max > kMaxPpn) {  // identical on every rank: no communication needed to agree
        state->failed = true;
        *reason = vocab::Reason::path_unavailable;
        return nullptr;
    }
    if (!ctx.admit()) {  // ARSHIM_MAX_COMMS (agreed)
        state->failed = true;
        *reason = vocab::Reason::comm_limit;
        return nullptr;
    }
    // With one rank on every node (identical on every rank) there is nothing to share: no window, every rank is its
    // node's rank 0 and goes straight to the inter-node step.
    const bool window = ctx.ppn_max > 1 || ctx.node_count == 1;
    const MPI_Comm node = window ? ctx.node_communicator() : MPI_COMM_NULL;
    int ok = !window || (node != MPI_COMM_NULL && shares_memory(ctx, node, ctx.node_size)) ? 1 : 0;
    std::string why;
    state->ppn = ctx.node_size;
    const std::size_t bytes = kCacheLine + static_cast<std::size_t>(kBuffers) * (ctx.node_size + 1) * kSlotBytes;
    char* base = nullptr;
    if (ok && window) {
        PMPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);  // errors come back, agreed below
        base = allocate_shared(node, ctx.node_rank == 0, bytes, &state->segment, &why);  // zero-filled
        if (base != nullptr && ctx.node_rank == 0) new (base) ShmCounter{{0}, {0}};  // sequence numbers start at 0
        ok = base != nullptr;
    }
    if (arshim_test_fail_shm != nullptr && arshim_test_fail_shm()) ok = 0;
    // The split is collective over the whole communicator: every rank makes it, whatever its node's window did (a
    // node whose window failed skipped it once, and the other nodes waited in it for ever: a node of ranks that do
    // not share memory under ARSHIM_VIRTUAL_PPN, in the SMPI build's test with nodes straddling hosts).
    if (ctx.node_count > 1) {
        const int rc = comm_split_twice(ctx.comm, ctx.node_rank == 0 ? 0 : MPI_UNDEFINED, ctx.rank, &state->leaders);
        if (rc != MPI_SUCCESS) ok = 0;
        if (ok && ctx.node_rank == 0) state->scratch = new (std::nothrow) char[kPayloadBytes];
        if (ok && ctx.node_rank == 0 && state->scratch == nullptr) ok = 0;
    }
    // Everyone agrees before anyone uses the window; the allreduce also orders rank 0's initialization before every
    // rank's first access.
    int all_ok = ok;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx.comm);
    if (!all_ok) {
        if (ctx.rank == 0 && !why.empty() && trace::on())  // as node_shm.cpp's event
            trace::event("window_refused", {{"communicator", ctx.stats_id}, {"window", "latency node"}, {"error", why}});
        if (ctx.rank == 0 && log::first_time("latency-shm")) {
            if (!why.empty())  // rank 0's own words; another rank that failed says its own (node_segment.cpp)
                log::warn("node shared-memory window unavailable ({}): latency calls run native", why);
            else
                log::warn("node shared-memory window unavailable (a node's ranks must share memory): latency calls "
                          "run native");
        }
        release_shared(&state->segment);
        if (state->leaders != MPI_COMM_NULL) PMPI_Comm_free(&state->leaders);
        delete[] state->scratch;
        state->scratch = nullptr;
        state->failed = true;
        *reason = vocab::Reason::shm_unavailable;
        return nullptr;
    }
    if (window) {
        state->result = reinterpret_cast<ShmCounter*>(base);
        state->slots = base + kCacheLine;
    }
    const int fault = arshim_test_latency_fault != nullptr ? arshim_test_latency_fault() : 0;
    if (fault == 1) state->wait_mask = 0;
    if (fault == 2) state->buffer_mask = 0;
    return state;
}

}  // namespace

PathOutcome serve_latency(const Call& call) {
    if (call.bytes > policy::kLatencyMaxBytes) return PathOutcome::decline(vocab::Reason::buffer_too_large);
    if (call.nary == nullptr) return PathOutcome::decline(vocab::Reason::unsupported_op_type);
    PathContext& ctx = call.ctx;
    vocab::Reason reason = vocab::Reason::path_unavailable;
    LatencyState* const state = latency_state(ctx, &reason);
    if (state == nullptr) return PathOutcome::decline(reason);
    const std::size_t count = static_cast<std::size_t>(call.args.count);
    if (count == 0) return PathOutcome::done(MPI_SUCCESS);

    const uint64_t bytes = call.bytes;
    const uint64_t s = ++state->sequence;
    const int buffer = static_cast<int>(s & state->buffer_mask);
    const uint64_t arrived = s & state->wait_mask;
    const int me = ctx.node_rank, ppn = state->ppn;
    const void* input = call.args.sendbuf == MPI_IN_PLACE ? call.args.recvbuf : call.args.sendbuf;
    char* const output = static_cast<char*>(call.args.recvbuf);

    if (ppn > 1 || ctx.node_count == 1) {  // (a node of one rank among several nodes has no slot to fill)
        SlotHeader* const mine = state->header(buffer, me);
        std::memcpy(LatencyState::data(mine, bytes), input, bytes);
        charge::copy(bytes);  // the SMPI build's simulated time (shim/base/sim_charge.h); else nothing
        mine->sequence.store(s, std::memory_order_release);
        node_published();
    }

    // This rank's own contribution is read from its input, not from the slot it just wrote: a load from that slot
    // waits until the stores above leave the store buffer, which waits for the line to come back from the ranks that
    // read it at the previous use of the buffer -- a cross-core round trip on the critical path of every call (it
    // was about a third of an 8-byte call, perf on the 2-core VM; docs/paths.md "The latency path"). The values are
    // the slot's, so every rank still reduces the same values in the same order. nary_fn allows its destination to
    // be its first or second source only, so an input that is the recvbuf (in place, or a sendbuf aliasing the
    // recvbuf, which MPI forbids and some programs do) stands in for node ranks 0 and 1 only.
    const bool own_from_input = input != output || me < 2;
    const void* sources[kMaxPpn];
    auto reduce_node = [&] {
        for (int r = 0; r < ppn; ++r) {
            SlotHeader* h = state->header(buffer, r);
            if (r != me) wait_at_least(h->sequence, arrived, state->wait);
            sources[r] = r == me && own_from_input ? input : LatencyState::data(h, bytes);
        }
        call.nary(output, sources, static_cast<std::size_t>(ppn), count);
        charge::nary(bytes, static_cast<std::size_t>(ppn));
    };
    if (ctx.node_count == 1) {
        reduce_node();
        return PathOutcome::done(MPI_SUCCESS);
    }
    int rc = MPI_SUCCESS;
    if (me == 0) {
        if (ppn > 1) reduce_node();
        else if (input != output) {
            std::memcpy(output, input, bytes);
            charge::copy(bytes);
        }
        PhaseClock clock(state->wait);  // ARSHIM_PHASE_TIMES only
        clock.chunk();
        const InternodeStep step = internode_step(ctx.settings->internode, ctx.node_count, bytes);
        count_internode_step(state->wait, step);
        rc = run_internode_step(step, output, count, call, state->leaders, state->scratch);
        clock.lap(&PhaseTimes::internode);
        if (ppn > 1) {
            SlotHeader* const result = state->header(buffer, ppn);
            // On an error the node still completes the call (nobody hangs), and the others get the error too.
            std::memcpy(LatencyState::data(result, bytes), output, bytes);
            charge::copy(bytes);
            result->sequence.store(static_cast<uint64_t>(rc), std::memory_order_relaxed);
            publish_waking(*state->result, s);
        }
    } else {
        SlotHeader* const result = state->header(buffer, ppn);
        wait_sleeping(*state->result, s, state->wait);
        std::memcpy(output, LatencyState::data(result, bytes), bytes);
        charge::copy(bytes);
        rc = static_cast<int>(result->sequence.load(std::memory_order_relaxed));
    }
    return PathOutcome::done(rc);
}

}  // namespace arshim
