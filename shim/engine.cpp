#include "shim/engine.h"

#include <cstring>

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
};

Routed native_because(const CallArgs& args, stats::Reason reason, Routed routed) {
    routed.rc = run_native(args);
    routed.path = policy::Path::native;
    routed.reason = reason;
    return routed;
}

uint64_t payload_bytes(const CallArgs& args, const TypeInfo& type) {
    if (type.predefined) return static_cast<uint64_t>(args.count) * type.size;
    int size = 0;  // derived datatype: only on the fallback route, for the statistics
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

// The statistics' op of a call whose op has no kernel: predefined (MPI_REPLACE, ...) or user-defined.
uint8_t stats_op_without_kernel(MPI_Op op) {
    return std::strcmp(mpi_op_name(op), "user") == 0 ? stats::kOpUser : stats::kOpOtherPredefined;
}

// Classification, in the order DESIGN.md gives: communicator, datatype, op, then the policy's decision.
// Every test below depends only on values identical on all ranks of the communicator (count, datatype, op and
// communicator are required to match across ranks by the MPI standard), so all ranks route alike.
Routed route(const CallArgs& args) {
    Routed r;
    // Erroneous calls go to the library untouched so that it reports them with the user's error handler.
    if (args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL || args.op == MPI_OP_NULL) {
        r.rc = run_native(args);
        return r;
    }

    CommContext* ctx = CommContext::get(args.comm);
    const TypeInfo type = type_info(args.datatype);
    r.bytes = payload_bytes(args, type);
    r.comm_id = ctx->stats_id;
    r.dtype = stats_dtype(type);
    kernels::Op kop{};
    const bool have_kernel_op = kernel_op(args.op, &kop);
    r.op = have_kernel_op ? static_cast<uint8_t>(kop) : stats_op_without_kernel(args.op);
    if (ctx->inter) return native_because(args, stats::Reason::intercommunicator, r);
    if (ctx->size == 1) return native_because(args, stats::Reason::single_rank, r);
    if (args.count == 0) return native_because(args, stats::Reason::zero_count, r);
    if (!type.predefined) return native_because(args, stats::Reason::derived_datatype, r);

    if (!have_kernel_op) {
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        return native_because(args, commute ? stats::Reason::user_op : stats::Reason::noncommutative_op, r);
    }
    if (!kernel_supports(args.op, args.datatype))
        return native_because(args, stats::Reason::unsupported_op_type, r);

    const policy::Decision& decision = ctx->decide(r.bytes, args.datatype, args.op, type, kop);
    const PathCall call{args, *ctx, type, kop, r.bytes, decision};
    PathOutcome outcome;
    switch (decision.path) {
    case policy::Path::pipelined: outcome = run_pipelined(call); break;
    case policy::Path::multileader: outcome = run_multileader(call); break;
    case policy::Path::sharp: outcome = run_sharp(call); break;
    case policy::Path::native:
    case policy::Path::count: return native_because(args, stats::Reason::policy, r);
    }
    if (!outcome.served) return native_because(args, outcome.reason, r);
    r.rc = outcome.rc;
    r.path = decision.path;
    r.sharp = outcome.sharp;
    return r;
}

}  // namespace

int allreduce(const CallArgs& args) {
    if (ReentryGuard::active()) {
        ++stats::local().reentrant;
        return run_native(args);
    }
    const Runtime& rt = runtime();
    if (rt.disabled) return run_native(args);

    ReentryGuard guard;
    callsites::ensure_ready();  // once: ARSHIM_STATS_CALLSITES / _DEPTH, module ranges
    // Statistics: one clock pair (TSC), one row update and (call sites on) one call-site update; nothing when paused.
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    if (!(flags & stats::kCollect)) {
        ++stats::local().paused;
        return route(args).rc;
    }
    const uint64_t start = stats::ticks();
    const Routed routed = route(args);
    const auto elapsed = static_cast<double>(stats::ticks() - start);  // clock ticks, seconds at finalize
    stats::ThreadCounters& counters = stats::local();
    stats::record(counters, {routed.comm_id, routed.bytes, elapsed,
                             {routed.path, stats::bucket_of(routed.bytes), routed.dtype, routed.op, routed.reason,
                              routed.sharp}});
    if (flags & stats::kCallsites) callsites::record(counters, args.caller, routed.bytes, elapsed);
    return routed.rc;
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
