#include "shim/engine.h"

#include "shim/callsites.h"
#include "shim/guard.h"
#include "shim/runtime.h"

namespace arshim::engine {

namespace {

struct Routed {
    int rc = MPI_SUCCESS;
    policy::Path path = policy::Path::native;
    uint64_t bytes = 0;
    // For the statistics row: communicator id, datatype class, op, and why native (kServed: not a fallback).
    uint64_t comm_id = 0;
    stats::Dtype dtype = stats::Dtype::other;
    uint8_t op = stats::kOpOtherPredefined;
    stats::Reason reason = stats::kServed;
    stats::SharpRun sharp = stats::SharpRun::none;  // how the SHARP path ran it (LLT, SAT, host and why)
    // Native for a reason that depends only on (communicator, predefined datatype, predefined op, size bucket):
    // the next such call can be replayed from LastNative.
    bool replayable = false;
    uint32_t element_size = 0;
};

Routed native_because(const CallArgs& args, stats::Reason reason, Routed routed) {
    routed.rc = run_native(args);
    routed.path = policy::Path::native;
    routed.reason = reason;
    return routed;
}

// This thread's last replayable native call. The common case of a small allreduce repeated in a loop then costs a
// few compares, the library's call and two counter increments: no classification, no decision lookup, no row
// search. Valid while no context was freed since (CommContext::generation: a freed communicator's handle may be
// reused). Only predefined datatypes and ops: their handles never change meaning. Handles as integers, zero when
// empty (the generation is never 0).
struct LastNative {
    uintptr_t comm = 0, datatype = 0, op = 0;
    uint64_t generation = 0;
    uint32_t element_size = 0;
    uint32_t bucket = 0;
    stats::Row* row = nullptr;
    stats::Reason reason = stats::kServed;
};
thread_local LastNative t_last __attribute__((tls_model("initial-exec")));

bool replays(const LastNative& last, const CallArgs& args) {
    return last.generation == CommContext::generation() && last.comm == handle_bits(args.comm) &&
           last.datatype == handle_bits(args.datatype) && last.op == handle_bits(args.op) && args.count >= 0 &&
           args.sendbuf != args.recvbuf &&
           stats::bucket_of(static_cast<uint64_t>(args.count) * last.element_size) == last.bucket;
}

// Bytes of a call with a derived datatype (only on the fallback route, for the statistics).
uint64_t derived_bytes(const CallArgs& args) {
    int size = 0;
    if (PMPI_Type_size(args.datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return static_cast<uint64_t>(args.count) * static_cast<uint64_t>(size);
}

stats::Dtype stats_dtype(const TypeInfo& type) {
    if (!type.predefined) return stats::Dtype::derived;
    switch (type.dclass) {
    case policy::DtypeClass::floating: return stats::Dtype::floating;
    case policy::DtypeClass::integer: return stats::Dtype::integer;
    case policy::DtypeClass::other: break;
    }
    return stats::Dtype::other;
}

// Classification, in the order DESIGN.md gives: communicator, datatype, op, then the policy's decision.
// Every test below depends only on values identical on all ranks of the communicator (count, datatype, op and
// communicator are required to match across ranks by the MPI standard), so all ranks route alike.
Routed route(const CallArgs& args) {
    Routed r;
    // Erroneous calls go to the library untouched so that it reports them with the user's error handler: null
    // handles, a negative count, send and receive buffers aliased without MPI_IN_PLACE (which ARShim's paths would
    // quietly compute), and (below) a communicator handle the library does not accept.
    if (args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL ||
        args.op == MPI_OP_NULL || (args.sendbuf == args.recvbuf && args.count > 0 && args.sendbuf != nullptr)) {
        r.rc = run_native(args);
        return r;
    }

    CommContext* ctx = CommContext::get(args.comm);
    if (ctx == nullptr) {
        r.rc = run_native(args);
        return r;
    }
    const CallClass& cls = ctx->call_class(args.datatype, args.op);
    r.bytes = cls.type.predefined ? static_cast<uint64_t>(args.count) * cls.type.size : derived_bytes(args);
    r.comm_id = ctx->stats_id;
    r.dtype = stats_dtype(cls.type);
    r.op = cls.has_kernel_op ? static_cast<uint8_t>(cls.kop)
                             : cls.user_op ? stats::kOpUser : stats::kOpOtherPredefined;
    // Every native reason below except derived_datatype and the user-op ones is fixed by (communicator, datatype,
    // op, size bucket); for a predefined op and datatype the call may be replayed.
    r.replayable = cls.type.predefined && !cls.user_op;
    r.element_size = cls.type.size;
    if (ctx->inter) return native_because(args, stats::Reason::intercommunicator, r);
    if (ctx->size == 1) return native_because(args, stats::Reason::single_rank, r);
    if (args.count == 0) return native_because(args, stats::Reason::zero_count, r);
    if (!cls.type.predefined) return native_because(args, stats::Reason::derived_datatype, r);
    if (cls.user_op) {
        // Asked per call: a freed user op's handle may come back with the other commutativity.
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        return native_because(args, commute ? stats::Reason::user_op : stats::Reason::noncommutative_op, r);
    }
    if (!cls.supported) return native_because(args, stats::Reason::unsupported_op_type, r);

    const policy::Decision& decision = ctx->decide(r.bytes, args.datatype, args.op, cls.type, cls.kop);
    if (decision.path == policy::Path::native) return native_because(args, stats::Reason::policy, r);
    const PathCall call{args, *ctx, cls.type, cls.kop, r.bytes, decision};
    PathOutcome outcome;
    switch (decision.path) {
    case policy::Path::pipelined: outcome = run_pipelined(call); break;
    case policy::Path::multileader: outcome = run_multileader(call); break;
    case policy::Path::sharp: outcome = run_sharp(call); break;
    case policy::Path::native:
    case policy::Path::count: return native_because(args, stats::Reason::policy, r);
    }
    if (!outcome.served) {
        r.replayable = false;  // a path's state may change (SHARP disabled after an error): classify every call
        return native_because(args, outcome.reason, r);
    }
    r.rc = outcome.rc;
    r.path = decision.path;
    r.sharp = outcome.sharp;
    return r;
}

void remember(LastNative& last, const CallArgs& args, const Routed& routed, stats::Row* row) {
    last = {handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op), CommContext::generation(),
            routed.element_size, stats::bucket_of(routed.bytes), row, routed.reason};
}

// Everything but the fast path of allreduce() below: re-entry, disabled, classification, paths, statistics.
[[gnu::noinline]] int allreduce_classified(const CallArgs& args) {
    if (ReentryGuard::active()) {
        ++stats::local().reentrant;
        return run_native(args);
    }
    const Runtime& rt = runtime();
    if (rt.disabled) return run_native(args);

    ReentryGuard guard;
    callsites::ensure_ready();  // once: ARSHIM_STATS / _SUMMARY / _CALLSITES / _DEPTH, module ranges
    // Statistics: per-path and per-reason counts always (the query API); the clock pair (TSC) only when a log or
    // summary will report times, and the call site only when a log will list it; nothing when paused.
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    LastNative& last = t_last;
    if (!(flags & stats::kCollect)) {
        ++stats::local().paused;
        if (replays(last, args)) return run_native(args);
        const Routed routed = route(args);
        // Remembered without a row: a paused call counts nothing, and the next counted call classifies again.
        if (routed.path == policy::Path::native && routed.replayable) remember(last, args, routed, nullptr);
        return routed.rc;
    }
    const bool timed = flags & stats::kTimed;
    // The timed replay (an untimed one took the fast path in allreduce()): same communicator, predefined datatype
    // and op, and size bucket as this thread's last native call, so same route and row, no classification.
    if (timed && last.row != nullptr && replays(last, args)) {
        const uint64_t replay_start = stats::ticks();
        const int rc = run_native(args);
        const auto elapsed = static_cast<double>(stats::ticks() - replay_start);
        const uint64_t bytes = static_cast<uint64_t>(args.count) * last.element_size;
        last.row->cell.add(bytes, elapsed);
        stats::ThreadCounters& counters = stats::local();
        if (flags & stats::kCallsites) callsites::record(counters, args.caller, bytes, elapsed);
        if (last.reason != stats::kServed) ++counters.reasons[static_cast<std::size_t>(last.reason)];
        return rc;
    }
    const uint64_t start = timed ? stats::ticks() : 0;
    const Routed routed = route(args);
    const auto elapsed = timed ? static_cast<double>(stats::ticks() - start) : 0.0;  // ticks, seconds at finalize
    stats::ThreadCounters& counters = stats::local();
    const uint32_t bucket = stats::bucket_of(routed.bytes);
    stats::Row* row = stats::record(counters, {routed.comm_id, routed.bytes, elapsed,
                                               {routed.path, bucket, routed.dtype, routed.op, routed.reason,
                                                routed.sharp}});
    if (flags & stats::kCallsites) callsites::record(counters, args.caller, routed.bytes, elapsed);
    if (routed.path == policy::Path::native && routed.replayable && row != nullptr) remember(last, args, routed, row);
    return routed.rc;
}

}  // namespace

int allreduce(const CallArgs& args) {
    // Fast path, kept small so that a native-routed call pays only for it: counters only (no log, summary or
    // pause; call sites imply timing, stats.cpp), not re-entrant, and the same communicator, datatype, op and size bucket as this thread's last
    // counted native call. `last.row` is set only after the runtime was ready and not disabled.
    LastNative& last = t_last;
    if (stats::g_flags.load(std::memory_order_relaxed) == stats::kCollect && !ReentryGuard::active() &&
        last.row != nullptr && replays(last, args)) {
        int rc;
        {
            ReentryGuard guard;
            rc = run_native(args);
        }
        ++last.row->cell.calls;
        last.row->cell.bytes += static_cast<uint64_t>(args.count) * last.element_size;
        if (last.reason != stats::kServed) ++stats::local().reasons[static_cast<std::size_t>(last.reason)];
        return rc;
    }
    return allreduce_classified(args);
}

}  // namespace arshim::engine

namespace arshim {

int run_native(const CallArgs& args) {
#if MPI_VERSION >= 4
    if (args.large_count)
        return PMPI_Allreduce_c(args.sendbuf, args.recvbuf, args.count, args.datatype, args.op, args.comm);
#endif
    return PMPI_Allreduce(args.sendbuf, args.recvbuf, static_cast<int>(args.count), args.datatype, args.op,
                          args.comm);
}

}  // namespace arshim
