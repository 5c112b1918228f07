#include "shim/core/engine.h"

#include <chrono>
#include <optional>
#include <string>

#include "shim/core/arg_check.h"
#include "shim/core/context.h"
#include "shim/core/guard.h"
#include "shim/core/library_bugs.h"
#include "shim/core/route.h"
#include "shim/core/runtime.h"
#include "shim/core/simd_ops.h"
#include "shim/core/verify.h"
#include "shim/paths/paths.h"
#include "shim/sharp/path.h"
#include "shim/stats/callsites.h"
#include "shim/tune/online.h"

namespace arshim::engine {

namespace {

struct Routed {
    int rc = MPI_SUCCESS;
    policy::Path path = policy::Path::native;
    uint64_t bytes = 0;
    uint32_t bucket = 0;
    // For the statistics row: communicator id, datatype class, op, and why native (kServed: not a fallback).
    uint64_t comm_id = 0;
    vocab::DtypeClass dtype = vocab::DtypeClass::other;
    uint8_t op = vocab::kRowOpOther;
    vocab::Reason reason = vocab::kServed;
    stats::SharpRun sharp = stats::SharpRun::none;  // how the SHARP path ran it (LLT, SAT, host and why)
    bool replayable = false;  // the next such call can be replayed from the thread's memo (route.h)
    uint32_t element_size = 0;
    // A (datatype, op) the library computes wrong (policy/library_bugs.h): the library gets ARShim's SIMD op instead.
    MPI_Op library_op = MPI_OP_NULL;
};

Routed native_because(const CallArgs& args, vocab::Reason reason, Routed routed) {
    routed.rc = routed.library_op == MPI_OP_NULL ? run_native(args) : run_native(args, routed.library_op);
    routed.path = policy::Path::native;
    routed.reason = reason;
    return routed;
}

// This thread's last replayable native call (route::Memo) and its statistics cell. The common case of a small
// allreduce repeated in a loop then costs a few compares, the library's call and two counter increments: no
// classification, no decision lookup, no row search.
struct LastNative {
    route::Memo memo;
    stats::Cell* cell = nullptr;
    vocab::Reason reason = vocab::kServed;
};
thread_local LastNative t_last __attribute__((tls_model("initial-exec")));

// This thread's last call an ARShim path served, and its statistics row: a served call is routed before its row is
// known, so whether to read the clock is guessed from the row of the last served call with the same arguments (in a
// loop, the same row). A wrong guess costs one sample, never a count.
struct LastServed {
    route::Memo memo;
    const stats::Cell* cell = nullptr;
};
thread_local LastServed t_served __attribute__((tls_model("initial-exec")));

bool replays(const LastNative& last, const CallArgs& args) {
    return last.memo.matches(handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op),
                             CommContext::generation(), args.count, args.sendbuf == args.recvbuf);
}

// Bytes of a call with a derived datatype (only on the fallback route, for the statistics).
uint64_t derived_bytes(const CallArgs& args) {
    int size = 0;
    if (PMPI_Type_size(args.datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return static_cast<uint64_t>(args.count) * static_cast<uint64_t>(size);
}

// In reproducible mode, a derived datatype or a user op cannot be summed in rank order by any path: the library
// serves it, counted as not reproducible rather than under its usual reason.
vocab::Reason reproducible_reason(const Runtime& rt, vocab::Reason why) {
    using vocab::Reason;
    const bool uncovered = why == Reason::derived_datatype || why == Reason::user_op || why == Reason::noncommutative_op;
    return rt.reproducible != ReproducibleMode::off && uncovered ? Reason::not_reproducible : why;
}

// Resolves a call the paths may serve, once: kernels of the active ISA, the op handed to the library.
Call resolve(const CallArgs& args, CommContext& ctx, const CallClass& cls, const Routed& r,
             const policy::Decision& decision) {
    const kernels::KernelTable& kernels = kernels::active();
    const auto op = static_cast<std::size_t>(cls.kop);
    const auto type = static_cast<std::size_t>(cls.type.type);
    MPI_Op library_op = args.op;
    if (r.library_op != MPI_OP_NULL) {
        library_op = r.library_op;  // a known library bug: never the predefined op
    } else if (decision.kernel == policy::KernelChoice::simd) {
        const MPI_Op simd = simd_op(cls.kop);
        if (simd != MPI_OP_NULL) library_op = simd;
    }
    return Call{args,       ctx, cls.type, cls.kop, r.bytes, r.bucket, kernels.binary[op][type], kernels.nary[op][type],
                library_op, decision};
}

// The path a decision names; native (never reached: the caller routes those calls itself) declines.
PathOutcome run_path(const Call& call) {
    switch (call.decision.path()) {
    case policy::Path::pipelined: return run_pipelined(call);
    case policy::Path::multileader: return run_multileader(call);
    case policy::Path::sharp: return run_sharp(call);
    case policy::Path::reproducible: return run_reproducible(call);
    case policy::Path::native:
    case policy::Path::count: break;
    }
    return PathOutcome::decline(vocab::Reason::policy);
}

// This thread's last call an ARShim path served with a settled decision (no candidate being tried, no verify mode,
// not reproducible mode, a predefined datatype and op), resolved: a loop of such calls is routed again without
// classification, decision lookup or tuner (the key's tuning has decided). Valid while its key matches (route::Memo,
// as for native replays); the decision is a copy (the decision cache's overflow slot is reused).
struct ServedRoute {
    route::Memo memo;
    CommContext* ctx = nullptr;
    TypeInfo type{};
    kernels::Op kop{};
    kernels::BinaryFn binary = nullptr;
    kernels::NaryFn nary = nullptr;
    MPI_Op library_op = MPI_OP_NULL;
    policy::Decision decision;
    Routed routed;  // the statistics fields
};
thread_local ServedRoute t_served_route __attribute__((tls_model("initial-exec")));

bool replays_served(const ServedRoute& s, const CallArgs& args) {
    return s.ctx != nullptr && (args.count == 0 || (args.sendbuf != nullptr && args.recvbuf != nullptr)) &&
           s.memo.matches(handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op),
                          CommContext::generation(), args.count, args.sendbuf == args.recvbuf);
}

Routed replay_served(const CallArgs& args, ServedRoute& s) {
    Routed r = s.routed;
    r.bytes = static_cast<uint64_t>(args.count) * s.type.size;
    const Call call{args, *s.ctx, s.type, s.kop, r.bytes, r.bucket, s.binary, s.nary, s.library_op, s.decision};
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        s.ctx = nullptr;       // classify the next call again
        r.replayable = false;  // as route_call(): a path's state may have changed
        return native_because(args, outcome.reason, r);
    }
    r.rc = outcome.rc;
    r.path = call.decision.path();
    r.sharp = outcome.sharp;
    return r;
}

// Classification, in the order docs/architecture.md gives (route::unservable), then the policy's decision, then the path.
// Every test depends only on values identical on all ranks of the communicator, so all ranks route alike.
Routed route_call(const CallArgs& args) {
    if (ServedRoute& served = t_served_route; replays_served(served, args)) return replay_served(args, served);
    Routed r;
    // Erroneous calls go to the library untouched so that it reports them with the user's error handler: null
    // handles, a negative count, send and receive buffers aliased without MPI_IN_PLACE (which ARShim's paths would
    // quietly compute), NULL buffers with elements to reduce (a path would dereference them; with a predefined
    // datatype MPI_BOTTOM is NULL and erroneous too), and (below) a communicator handle the library does not accept.
    if (args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL ||
        args.op == MPI_OP_NULL || (args.sendbuf == args.recvbuf && args.count > 0 && args.sendbuf != nullptr) ||
        (args.count > 0 && (args.sendbuf == nullptr || args.recvbuf == nullptr))) {
        r.rc = run_native(args);
        return r;
    }

    CommContext* ctx = CommContext::get(args.comm);
    if (ctx == nullptr) {
        r.rc = run_native(args);
        return r;
    }
    const CallClass cls = ctx->call_class(args.datatype, args.op);
    r.bytes = cls.type.predefined ? static_cast<uint64_t>(args.count) * cls.type.size : derived_bytes(args);
    r.bucket = vocab::bucket_of(r.bytes);
    r.comm_id = ctx->stats_id;
    r.dtype = cls.type.predefined ? cls.type.dclass : vocab::DtypeClass::derived;
    r.op = cls.has_kernel_op ? static_cast<uint8_t>(cls.kop) : cls.user_op ? vocab::kRowOpUser : vocab::kRowOpOther;
    r.element_size = cls.type.size;

    route::Traits traits;
    traits.intercommunicator = ctx->inter;
    traits.comm_size = ctx->size;
    traits.count = static_cast<int64_t>(args.count);
    traits.predefined_type = cls.type.predefined;
    traits.user_op = cls.user_op;
    traits.supported = cls.supported;
    if (cls.user_op && !ctx->inter && ctx->size > 1 && args.count != 0 && cls.type.predefined) {
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        traits.commutative = commute != 0;
    }
    r.replayable = route::replayable(traits);
    if (cls.library_bug >= 0 && runtime().avoid_library_bugs) {
        // Right at every size and on every route: wherever the library reduces, it reduces with ARShim's op.
        r.library_op = simd_op(cls.kop);
        r.replayable = false;  // the memo replays with the predefined op
        bugs::count(cls.library_bug);
    }
    const bool library_bug = r.library_op != MPI_OP_NULL;
    const vocab::Reason unservable = route::unservable(traits);
    const Runtime& rt = runtime();
    if (unservable != vocab::kServed) return native_because(args, reproducible_reason(rt, unservable), r);
    // ARSHIM_REPRODUCIBLE: a floating-point SUM or PROD is summed in rank order by the reproducible path, whatever the
    // policy or ARSHIM_PATH say, warm communicator or not; the library never reduces it (shim/paths/reproducible.cpp).
    const bool reproducible = rt.reproducible != ReproducibleMode::off && cls.type.dclass == vocab::DtypeClass::floating &&
                              (cls.kop == kernels::Op::sum || cls.kop == kernels::Op::prod);
    if (!ctx->warm() && !ctx->count_cold_call() && !reproducible) {
        r.replayable = false;  // every call of a cold communicator must be counted: never replayed
        return native_because(args, vocab::Reason::cold_communicator, r);
    }

    policy::Decision in_rank_order;  // a reproducible call's decision when the policy's is not order-preserving
    const policy::Decision* chosen =
        ctx->warm() ? &ctx->decide(r.bytes, r.bucket, args.datatype, args.op, cls.type, cls.kop, library_bug,
                                   reproducible)
                    : nullptr;
    if (reproducible && (chosen == nullptr || chosen->path() != policy::Path::reproducible)) {
        in_rank_order = chosen != nullptr ? *chosen : policy::Decision{};
        policy::set_path(in_rank_order, policy::Path::reproducible);  // algorithm auto
        chosen = &in_rank_order;
    }
    const policy::Decision& policy_decision = *chosen;
    CommContext::KeyBook* book = nullptr;
    auto key_book = [&]() -> CommContext::KeyBook& {
        if (book == nullptr) book = &ctx->book(r.bucket, cls.type.type, cls.kop);
        return *book;
    };
    // Online tuning (shim/tune/online.h): the key's learned choice, or during its first calls a candidate to time.
    tune::Pick pick{&policy_decision, -1};
    if (!reproducible && tune::eligible(rt, policy_decision))
        pick = tune::pick(*ctx, key_book(), policy_decision, r.bytes, rt.tune,
                          cls.type.dclass == vocab::DtypeClass::floating &&
                              (cls.kop == kernels::Op::sum || cls.kop == kernels::Op::prod));
    const bool exploring = pick.candidate >= 0;
    // A candidate being tried is copied: reporting its call may end the key's exploration stage and replace the
    // candidates (shim/tune/online.cpp), while the call, its statistics and the verify check still refer to it.
    policy::Decision tried;
    if (exploring) tried = *pick.decision;
    const policy::Decision& decision = exploring ? tried : *pick.decision;
    const auto started = exploring ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto explored = [&](bool declined) {
        if (!exploring) return;
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        tune::report(*ctx, key_book(), pick.candidate, took.count(), declined, r.bucket, cls.type.dclass, cls.kop,
                     args.datatype, args.op, r.bytes);
    };
    if (decision.path() == policy::Path::native) {
        // The policy's choice, or the tuner's (measured faster, or being tried).
        const vocab::Reason why =
            policy_decision.path() == policy::Path::native ? vocab::Reason::policy : vocab::Reason::tuned;
        if (exploring) r.replayable = false;  // the key's next call may try another candidate
        Routed routed = native_because(args, why, r);
        explored(false);
        return routed;
    }
    const Call call = resolve(args, *ctx, cls, r, decision);
    // Verify mode: a key's first ARSHIM_VERIFY served calls are computed by the library too (shim/core/verify.h).
    std::optional<verify::Check> check;
    if (rt.verify_calls > 0 && key_book().verified < rt.verify_calls) {
        ++key_book().verified;
        check.emplace(call);
    }
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        r.replayable = false;  // a path's state may change (SHARP disabled after an error): classify every call
        Routed routed = native_because(args, reproducible ? vocab::Reason::not_reproducible : outcome.reason, r);
        explored(true);
        return routed;
    }
    r.rc = outcome.rc;
    r.path = decision.path();
    r.sharp = outcome.sharp;
    if (exploring) r.replayable = false;
    explored(false);
    if (check) check->finish(call, outcome.rc, key_book(), library_bug);
    if (r.replayable && !reproducible && rt.verify_calls == 0)
        t_served_route = {{handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op),
                           CommContext::generation(), r.element_size, r.bucket},
                          ctx, call.type, call.kop, call.binary, call.nary, call.library_op, decision, r};
    return r;
}

void remember(LastNative& last, const CallArgs& args, const Routed& routed, stats::Cell* cell) {
    last.memo = {handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op), CommContext::generation(),
                 routed.element_size, routed.bucket};
    last.cell = cell;
    last.reason = routed.reason;
}

// Everything but the fast path of allreduce() below: re-entry, disabled, classification, paths, statistics.
[[gnu::noinline]] int allreduce_classified(const CallArgs& args) {
    if (ReentryGuard::active()) {
        ++stats::local().reentrant;
        return run_native(args);
    }
    const Runtime& rt = runtime();  // initializes everything once (shim/core/runtime.cpp)
    if (rt.disabled) return run_native(args);

    ReentryGuard guard;
    // ARSHIM_CHECK_ARGS: all ranks passed the same arguments, or every rank returns an error (shim/core/arg_check.h).
    if (rt.check_args) {
        int rc = MPI_SUCCESS;
        if (!argcheck::agree(args, &rc)) return rc;
    }
    // Statistics: per-path and per-reason counts always (the query API); when a log or summary will report times,
    // the clock pair (TSC) on the calls whose turn it is (ARSHIM_STATS_SAMPLE), and their call site when a log will
    // list it; nothing when paused.
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    LastNative& last = t_last;
    if (!(flags & stats::kCollect)) {
        ++stats::local().paused;
        if (replays(last, args)) return run_native(args);
        const Routed routed = route_call(args);
        // Remembered without a cell: a paused call counts nothing, and the next counted call classifies again.
        if (routed.path == policy::Path::native && routed.replayable) remember(last, args, routed, nullptr);
        return routed.rc;
    }
    const bool timed = flags & stats::kTimed;
    // The timed replay (an untimed one, or one whose turn to be timed has not come, took the fast path in
    // allreduce() unless every call must be classified): same communicator, predefined datatype and op, and size
    // bucket as this thread's last native call, so same route and row, no classification.
    if (timed && last.cell != nullptr && replays(last, args)) {
        stats::Cell& cell = *last.cell;
        const uint64_t bytes = static_cast<uint64_t>(args.count) * last.memo.element_size;
        stats::ThreadCounters& counters = stats::local();
        if (last.reason != vocab::kServed) ++counters.reasons[static_cast<std::size_t>(last.reason)];
        if (!cell.due()) {
            cell.pass(bytes, true);
            return run_native(args);
        }
        const uint64_t replay_start = stats::ticks();
        const int rc = run_native(args);
        const auto elapsed = static_cast<double>(stats::ticks() - replay_start);
        const uint64_t weight = cell.sample(bytes, elapsed);
        if (flags & stats::kCallsites) callsites::record(counters, args.caller, {bytes, elapsed, weight});
        return rc;
    }
    // A classified call is timed whenever times are wanted, unless it repeats this thread's last served call and that
    // row is not due: its row, and so whether it is the row's turn, is known only once it has been routed (a new
    // row's first calls are timed anyway). The time of a call whose turn it is not is dropped.
    LastServed& served = t_served;
    const bool unclocked = timed && served.cell != nullptr && !served.cell->due() && served.memo.matches(
        handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op), CommContext::generation(),
        args.count, args.sendbuf == args.recvbuf);
    const bool clocked = timed && !unclocked;
    const uint64_t start = clocked ? stats::ticks() : 0;
    const Routed routed = route_call(args);
    const auto elapsed = clocked ? static_cast<double>(stats::ticks() - start) : 0.0;  // ticks, seconds at finalize
    stats::ThreadCounters& counters = stats::local();
    const stats::Recorded recorded =
        stats::record(counters, {routed.comm_id, routed.bytes, elapsed,
                                 {routed.path, routed.bucket, routed.dtype, routed.op, routed.reason, routed.sharp},
                                 clocked, unclocked});
    if ((flags & stats::kCallsites) && recorded.weight > 0)
        callsites::record(counters, args.caller, {routed.bytes, elapsed, recorded.weight});
    if (routed.path == policy::Path::native && routed.replayable && recorded.cell != nullptr)
        remember(last, args, routed, recorded.cell);
    if (timed && routed.path != policy::Path::native && recorded.cell != nullptr)
        served = {{handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op), CommContext::generation(),
                   routed.element_size, routed.bucket},
                  recorded.cell};
    return routed.rc;
}

}  // namespace

int allreduce(const CallArgs& args) {
    // Fast path, kept small so that a native-routed call pays only for it: counted, not paused, not re-entrant, not
    // timed (no log or summary wants times, or it is not this row's turn: ARSHIM_STATS_SAMPLE), and the same
    // communicator, datatype, op and size bucket as this thread's last counted native call. `last.cell` is set only
    // after the runtime was ready and not disabled.
    LastNative& last = t_last;
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    if ((flags & ~(stats::kTimed | stats::kCallsites)) == stats::kCollect && !ReentryGuard::active() &&
        last.cell != nullptr && replays(last, args)) {
        stats::Cell& cell = *last.cell;
        const bool timed = flags & stats::kTimed;
        if (!timed || !cell.due()) {
            int rc;
            {
                ReentryGuard guard;
                rc = run_native(args);
            }
            cell.pass(static_cast<uint64_t>(args.count) * last.memo.element_size, timed);
            if (last.reason != vocab::kServed) ++stats::local().reasons[static_cast<std::size_t>(last.reason)];
            return rc;
        }
    }
    return allreduce_classified(args);
}

}  // namespace arshim::engine

namespace arshim {

int run_native(const CallArgs& args) { return run_native(args, args.op); }

int run_native(const CallArgs& args, MPI_Op op) {
#if MPI_VERSION >= 4
    if (args.large_count) return PMPI_Allreduce_c(args.sendbuf, args.recvbuf, args.count, args.datatype, op, args.comm);
#endif
    return PMPI_Allreduce(args.sendbuf, args.recvbuf, static_cast<int>(args.count), args.datatype, op, args.comm);
}

}  // namespace arshim
