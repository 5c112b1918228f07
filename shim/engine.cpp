#include "shim/engine.h"

#include <chrono>

#include "shim/guard.h"
#include "shim/runtime.h"

namespace arshim::engine {

namespace {

using Clock = std::chrono::steady_clock;

struct Routed {
    int rc = MPI_SUCCESS;
    policy::Path path = policy::Path::native;
    uint64_t bytes = 0;
};

Routed native_because(const CallArgs& args, stats::Reason reason, uint64_t bytes) {
    stats::count_reason(reason);
    return {run_native(args), policy::Path::native, bytes};
}

uint64_t payload_bytes(const CallArgs& args, const TypeInfo& type) {
    if (type.predefined) return static_cast<uint64_t>(args.count) * type.size;
    int size = 0;  // derived datatype: only on the fallback route, for the statistics
    if (PMPI_Type_size(args.datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return static_cast<uint64_t>(args.count) * static_cast<uint64_t>(size);
}

// Classification, in the order DESIGN.md gives: communicator, datatype, op, then the policy's decision.
// Every test below depends only on values identical on all ranks of the communicator (count, datatype, op and
// communicator are required to match across ranks by the MPI standard), so all ranks route alike.
Routed route(const CallArgs& args) {
    // Erroneous calls go to the library untouched so that it reports them with the user's error handler.
    if (args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL || args.op == MPI_OP_NULL)
        return {run_native(args), policy::Path::native, 0};

    CommContext* ctx = CommContext::get(args.comm);
    const TypeInfo type = type_info(args.datatype);
    const uint64_t bytes = payload_bytes(args, type);
    if (ctx->inter) return native_because(args, stats::Reason::intercommunicator, bytes);
    if (ctx->size == 1) return native_because(args, stats::Reason::single_rank, bytes);
    if (args.count == 0) return native_because(args, stats::Reason::zero_count, bytes);
    if (!type.predefined) return native_because(args, stats::Reason::derived_datatype, bytes);

    kernels::Op kop{};
    if (!kernel_op(args.op, &kop)) {
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        return native_because(args, commute ? stats::Reason::user_op : stats::Reason::noncommutative_op, bytes);
    }
    if (!kernel_supports(args.op, args.datatype))
        return native_because(args, stats::Reason::unsupported_op_type, bytes);

    const policy::Decision& decision = ctx->decide(bytes, args.datatype, args.op, type, kop);
    const PathCall call{args, *ctx, type, kop, bytes, decision};
    PathOutcome outcome;
    switch (decision.path) {
    case policy::Path::pipelined: outcome = run_pipelined(call); break;
    case policy::Path::multileader: outcome = run_multileader(call); break;
    case policy::Path::sharp: outcome = run_sharp(call); break;
    case policy::Path::native:
    case policy::Path::count: return native_because(args, stats::Reason::policy, bytes);
    }
    if (!outcome.served) return native_because(args, outcome.reason, bytes);
    return {outcome.rc, decision.path, bytes};
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
    const Clock::time_point start = Clock::now();
    const Routed routed = route(args);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    stats::record(routed.path, routed.bytes, seconds);
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
