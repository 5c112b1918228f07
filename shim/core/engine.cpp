// The engine: one MPI_Allreduce as a line of stages. A call whose key has a route settled in this thread's route
// cache replays it (replay) and is recorded (record). Any other call is classified (classify_call: its handles are
// read here, the rest is shim/core/classify.h, MPI-free), its route is looked up (route::look_up, shim/core/router.h,
// MPI-free: every routing rule, asking the communicator what a rule needs through CommQuestions), run (run: the
// library, or a path from the run table made from the path rows, with the modes the route names around it: tuning's
// report, verify's check), recorded (record), and remembered for the next call of its key (remember).
#include "shim/core/engine.h"

#include <optional>

#include "shim/base/device.h"
#include "shim/base/guard.h"
#include "shim/base/library_bugs.h"
#include "shim/core/classify.h"
#include "shim/core/context.h"
#include "shim/core/route_cache.h"
#include "shim/core/router.h"
#include "shim/core/runtime.h"
#include "shim/core/simd_ops.h"
#include "shim/modes/arg_check.h"
#include "shim/modes/online.h"
#include "shim/modes/verify.h"
#include "shim/paths/paths.h"
#include "shim/stats/callsites.h"

namespace arshim {

// The native row's run function: never called (the engine runs the library's allreduce itself).
PathOutcome serve_native(const Call&) { return PathOutcome::decline(vocab::Reason::policy); }

}  // namespace arshim

namespace arshim::engine {

namespace {

// The library's allreduce, inlined into the fast path (run_native, below, for everyone else). In the SMPI build
// with reductions charged the library gets ARShim's op, which charges them (simd_ops.h charged_library_op).
inline int library_allreduce(const CallArgs& args, MPI_Op op) {
    op = charged_library_op(op, args.datatype);  // the op itself in the real build (an empty inline)
#if MPI_VERSION >= 4
    if (args.large_count) return PMPI_Allreduce_c(args.sendbuf, args.recvbuf, args.count, args.datatype, op, args.comm);
#endif
    return PMPI_Allreduce(args.sendbuf, args.recvbuf, static_cast<int>(args.count), args.datatype, op, args.comm);
}

// The run table: one function per path row (policy/path_rows.h), indexed by the path's code.
using Runner = PathOutcome (*)(const Call&);
constexpr Runner kRunners[] = {
#define ARSHIM_PATH_RUNNER(name, Params) &serve_##name,
    ARSHIM_PATH_ROWS(ARSHIM_PATH_RUNNER)
#undef ARSHIM_PATH_RUNNER
};
static_assert(std::size(kRunners) == vocab::kPathCount, "one run function per path");

PathOutcome run_path(const Call& call) { return kRunners[static_cast<std::size_t>(call.decision.path())](call); }

// The library runs the call, with `reason` counted (and ARShim's op for a known library bug).
Routed native_because(const CallArgs& args, vocab::Reason reason, Routed r) {
    r.rc = r.library_bug ? run_native(args, r.library_op) : run_native(args);
    r.path = policy::Path::native;
    r.reason = reason;
    return r;
}

// ---- the route cache (shim/core/route_cache.h) -------------------------------------------------------------------

// Initial-exec TLS (the library is preloaded): no __tls_get_addr call on the hot path. Every member is constant-
// initialized (no MPI handle constants as defaults), so no TLS initialization check either.
thread_local RouteCache t_routes __attribute__((tls_model("initial-exec")));

// ---- replay: a settled route ------------------------------------------------------------------------------------

// Runs the route settled for the call's key: the library's allreduce with the user's op (`served` null: the library
// entry; a route with a known library bug is never settled), or the served path with its resolution. A path that
// declines (its state changed: SHARP disabled after an error) hands the call to the library and unsettles its slot,
// so that the key's next call is routed again.
[[gnu::always_inline]] inline Routed replay(const CallArgs& args, const CachedRoute& cached, Resolution* served) {
    Routed r;
    if (served == nullptr) {
        r.rc = library_allreduce(args, args.op);
        r.row.bytes = static_cast<uint64_t>(args.count) * cached.memo.element_size;
        r.reason = cached.reason;
        return r;
    }
    r = served->routed;
    r.row.bytes = static_cast<uint64_t>(args.count) * served->type.size;
    const Call call{args,           *served->ctx,      served->type, served->kop, r.row.bytes, r.row.bucket,
                    served->binary, served->nary, served->library_op, served->decision};
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        served->ctx = nullptr;  // route the next call again: a path's state may have changed
        r.replayable = false;
        return native_because(args, outcome.reason, r);
    }
    r.rc = outcome.rc;
    r.path = call.decision.path();
    r.sharp = outcome.sharp;
    return r;
}

// ---- classify ---------------------------------------------------------------------------------------------------

// Erroneous calls go to the library untouched so that it reports them with the user's error handler: null handles,
// a negative count, send and receive buffers aliased without MPI_IN_PLACE (which ARShim's paths would quietly compute),
// NULL buffers with elements to reduce (a path would dereference them; with a predefined datatype MPI_BOTTOM is NULL
// and erroneous too).
bool erroneous(const CallArgs& args) {
    return args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL ||
           args.op == MPI_OP_NULL || (args.sendbuf == args.recvbuf && args.count > 0 && args.sendbuf != nullptr) ||
           (args.count > 0 && (args.sendbuf == nullptr || args.recvbuf == nullptr));
}

// Bytes of a call with a derived datatype (only on the library's route, for the statistics).
uint64_t derived_bytes(const CallArgs& args) {
    int size = 0;
    if (PMPI_Type_size(args.datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return static_cast<uint64_t>(args.count) * static_cast<uint64_t>(size);
}

// Classification's MPI half: what the call's handles say (the (datatype, op) pair's class `cls`, memoized per
// communicator, and the communicator's context), with the library's answers where the class is not enough (a derived
// datatype's size, whether a user op commutes). classifier::classify makes the traits and the row of it.
classifier::Classified classify_call(const CallArgs& args, const CommContext& ctx, const CallClass& cls,
                                     const Runtime& rt) {
    classifier::Facts f;
    f.intercommunicator = ctx.inter;
    f.comm_size = ctx.size;
    f.comm_id = ctx.stats_id;
    f.device_check = ctx.device_check;
    f.count = static_cast<int64_t>(args.count);
    f.predefined_type = cls.type.predefined;
    f.type = cls.type.type;
    f.element_size = cls.type.size;
    f.dclass = cls.type.dclass;
    if (!f.predefined_type) f.derived_bytes = derived_bytes(args);
    f.kernel_op = cls.has_kernel_op;
    f.op = cls.kop;
    f.user_op = cls.user_op;
    f.supported = cls.supported;
    f.library_bug = cls.library_bug >= 0 && rt.avoid_library_bugs;
    if (classifier::asks_commutative(f)) {
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        f.commutative = commute != 0;
    }
    return classifier::classify(f);
}

// ---- look up: what the router may ask ----------------------------------------------------------------------------

// Whether a rank of the call's communicator passed a device buffer (shim/base/device.h), agreed by its ranks. A
// failed agreement counts as device memory (the library's call then reports the communicator's trouble).
bool any_device_buffer(const CallArgs& args) {
    const int mine = (args.sendbuf != MPI_IN_PLACE && device::is_device(args.sendbuf)) || device::is_device(args.recvbuf)
                         ? 1
                         : 0;
    int any = mine;
    if (PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, args.comm) != MPI_SUCCESS) return true;
    return any != 0;
}

// The router's questions (route::Questions), answered from the call's communicator context.
class CommQuestions final : public route::Questions {
public:
    CommQuestions(const CallArgs& args, CommContext& ctx, const CallClass& cls, const classifier::Row& row)
        : args_(args), ctx_(ctx), cls_(cls), row_(row) {}

    bool device_buffers() override { return any_device_buffer(args_); }
    bool warm() override { return ctx_.warm() || ctx_.count_cold_call(); }
    const policy::Decision& decision(bool library_bug, bool reproducible) override {
        return ctx_.decide(row_.bytes, row_.bucket, args_.datatype, args_.op, cls_.type, cls_.kop, library_bug,
                           reproducible);
    }
    KeyBook* book() override { return book_ = &ctx_.book(row_.bucket, cls_.type.type, cls_.kop); }
    policy::tune::KeyFacts key_facts() override { return tune::key_facts(ctx_, row_.bytes); }

    KeyBook* asked_book() const { return book_; }  // the key's book, when the router asked for it

private:
    const CallArgs& args_;
    CommContext& ctx_;
    const CallClass& cls_;
    const classifier::Row& row_;
    KeyBook* book_ = nullptr;
};

// ---- run ---------------------------------------------------------------------------------------------------------

// The MPI_Op a path hands the library for this call: a known library bug's ARShim op, ARShim's SIMD op where the
// decision says kernel = simd, else the user's (in the SMPI build with reductions charged, ARShim's op that charges:
// simd_ops.h charged_library_op).
MPI_Op library_op_for(const CallArgs& args, kernels::Op kop, const Routed& r, const policy::Decision& d) {
    if (r.library_bug) return r.library_op;
    if (d.kernel == policy::KernelChoice::simd)
        if (const MPI_Op simd = simd_op(kop); simd != MPI_OP_NULL) return simd;
    return charged_library_op(args.op, args.datatype);
}

// Runs the route: the library, or the path from the run table with everything it reads resolved once (a Call), and
// around it the modes the route names: tuning's report of the candidate tried, verify's check. A path that declines
// hands the call to the library, with its reason. `book`: the key's, when the router asked for it (always when the
// route tries a candidate or verifies). `settle`: filled with the resolution of a served route the key's next calls
// may replay.
Routed run(const CallArgs& args, const route::Route& route, const classifier::Row& row, const CallClass& cls,
           CommContext& ctx, KeyBook* book, Resolution& settle) {
    Routed r;
    r.row = row;
    r.replayable = route.replayable;
    r.library_bug = route.library_bug;
    if (route.library_bug) r.library_op = simd_op(cls.kop);

    const double started = route.candidate >= 0 ? tune::candidate_clock() : 0.0;
    auto report_candidate = [&](bool declined) {
        if (route.candidate < 0) return;
        const double took = tune::candidate_clock() - started;
        tune::report(ctx, *book, route.candidate, took, declined, row.bucket, cls.type.dclass, cls.kop, args.datatype,
                     args.op, row.bytes);
    };
    if (route.library) {
        Routed routed = native_because(args, route.reason, r);
        report_candidate(false);
        return routed;
    }
    const kernels::KernelTable& kernels = kernels::active();
    const auto op_index = static_cast<std::size_t>(cls.kop);
    const auto type_index = static_cast<std::size_t>(cls.type.type);
    const Call call{args, ctx, cls.type, cls.kop, row.bytes, row.bucket, kernels.binary[op_index][type_index],
                    kernels.nary[op_index][type_index], library_op_for(args, cls.kop, r, route.decision),
                    route.decision};
    std::optional<verify::Check> check;
    if (route.verify) check.emplace(call);
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        r.replayable = false;  // a path's state may change (SHARP disabled after an error): route every call
        Routed routed = native_because(args, route::declined(route, outcome.reason), r);
        report_candidate(true);
        return routed;
    }
    r.rc = outcome.rc;
    r.path = route.decision.path();
    r.sharp = outcome.sharp;
    report_candidate(false);
    if (check) check->finish(call, outcome.rc, *book, route.library_bug);
    if (r.replayable) settle = {&ctx, call.type, call.kop, call.binary, call.nary, call.library_op, route.decision, r};
    return r;
}

// A call no settled route replays: classify, look up, run. Every input of the route depends only on values identical
// on all ranks of the communicator, so all ranks route alike.
Routed route_call(const CallArgs& args, CommContext* ctx, const Runtime& rt, Resolution& settle) {
    if (ctx == nullptr || erroneous(args)) {  // (a communicator handle the library rejects has no context)
        Routed r;
        r.rc = run_native(args);
        return r;
    }
    const CallClass cls = ctx->call_class(args.datatype, args.op);
    const classifier::Classified classified = classify_call(args, *ctx, cls, rt);
    CommQuestions questions(args, *ctx, cls, classified.row);
    const route::Route route = route::look_up(classified.traits, *ctx->settings, questions);
    if (route.library_bug) bugs::count(cls.library_bug);
    return run(args, route, classified.row, cls, *ctx, questions.asked_book(), settle);
}

// ---- record ------------------------------------------------------------------------------------------------------

// How a call was timed. `wanted`: a log or summary wants times (stats::kTimed); `read`: the clock was read around the
// call (`ticks`); `not_due`: a replay found its row not due before the call (the row's countdown advances). A time
// wanted but not read otherwise is the guess that the row, known only once the call is routed, was not due (it
// stays due if it was after all).
struct Timing {
    bool wanted = false;
    bool read = false;
    bool not_due = false;
    bool callsites = false;  // a log lists call sites: a call whose time is used records its own
    double ticks = 0;
};

// Counts the call in its statistics row (`cell` when a replay knows it, else found from the row key), with its time
// when it is the row's turn and its call site when a log lists it. Returns the row (nullptr: the overflow cells).
[[gnu::always_inline]] inline stats::Cell* record(const CallArgs& args, const Routed& r, stats::Cell* cell,
                                                  const Timing& t) {
    if (cell == nullptr) {
        stats::ThreadCounters& counters = stats::local();
        const stats::Recorded recorded =
            stats::record(counters, {r.row.comm_id, r.row.bytes, t.ticks,
                                     {r.path, r.row.bucket, r.row.dtype, r.row.op, r.reason, r.sharp}, t.read,
                                     t.wanted && !t.read});
        if (t.callsites && recorded.weight > 0)
            callsites::record(counters, args.caller, {r.row.bytes, t.ticks, recorded.weight});
        return recorded.cell;
    }
    if (r.reason != vocab::kServed) ++stats::local().reasons[static_cast<std::size_t>(r.reason)];
    if (t.read && cell->due()) {
        const uint64_t weight = cell->sample(r.row.bytes, t.ticks);
        if (t.callsites) callsites::record(stats::local(), args.caller, {r.row.bytes, t.ticks, weight});
    } else {
        cell->pass(r.row.bytes, t.wanted && (t.not_due || t.read || !cell->due()));
    }
    return cell;
}

// A settled route replayed and counted in the row its cache knows, untimed: no time is wanted, or it is not the row's
// turn (`timed`: times are wanted). A served path that declined is counted in the library's row.
[[gnu::always_inline]] inline int replay_untimed(const CallArgs& args, const CachedRoute& cached, Resolution* served,
                                                 stats::Cell* cell, bool timed) {
    Routed routed;
    {
        ReentryGuard guard;
        routed = replay(args, cached, served);
    }
    const bool declined = served != nullptr && routed.path == policy::Path::native;
    record(args, routed, declined ? nullptr : cell, {timed, false, true});
    return routed.rc;
}

// ---- the call ----------------------------------------------------------------------------------------------------

// Everything but the fast path of allreduce() below: re-entry, disabled, the argument check, the replays the fast
// path leaves (paused, timed), the stages, statistics.
[[gnu::noinline]] int allreduce_classified(const CallArgs& args) {
    const Key key = key_of(args);  // again: passing the fast path's would store it on every call
    RouteCache& cache = t_routes;
    const unsigned slot = RouteCache::index(key);
    CachedRoute& library = cache.library;   // the last library route (a replay when it is this key's)
    CachedRoute& served = cache.slot[slot];  // this key's served route, when it has one
    Resolution& resolved = cache.resolution[slot];
    if (ReentryGuard::active()) {
        ++stats::local().reentrant;
        return run_native(args);
    }
    const Runtime& rt = runtime();  // initializes everything once (shim/core/runtime.cpp)
    if (rt.disabled) return run_native(args);

    ReentryGuard guard;
    // The communicator's context, looked up once and only when needed: a replayed route does not need it.
    CommContext* ctx = nullptr;
    bool looked_up = false;
    auto context = [&]() {
        if (!looked_up) ctx = erroneous(args) ? nullptr : CommContext::get(args.comm), looked_up = true;
        return ctx;
    };
    // ARSHIM_CHECK_ARGS (and verify mode): all ranks passed the same arguments, or every rank returns an error. As
    // this communicator's ranks agreed: when MPI_Init was not intercepted each rank read its own environment, and
    // only the context's settings (agreed when it was built, at once then) are the same on every rank; a rank that
    // checked alone would send the others a message they never receive (issue 56 item 3).
    const bool check_args = rt.config_agreed ? rt.settings.agreed.check_args
                                             : context() != nullptr && context()->settings->check_args;
    if (check_args) {
        int rc = MPI_SUCCESS;
        if (!argcheck::agree(args, context(), context() != nullptr && context()->warm(), &rc)) return rc;
    }
    // Statistics: per-path and per-reason counts always (the query API); when a log or summary will report times,
    // the clock pair (TSC) on the calls whose turn it is (ARSHIM_STATS_SAMPLE), and their call site when a log will
    // list it; nothing when paused.
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    if (!(flags & stats::kCollect)) {
        ++stats::local().paused;
        if (library.matches(key)) return replay(args, library, nullptr).rc;
        Resolution settle;  // a served route the stages settled for the key
        const Routed routed = replays_served(served, resolved, args, key) ? replay(args, served, &resolved)
                                                                          : route_call(args, context(), rt, settle);
        // Remembered without a cell: a paused call counts nothing, and the next counted call classifies again.
        remember(cache, key, routed, nullptr, settle);
        return routed.rc;
    }
    Timing timing{(flags & stats::kTimed) != 0, false, false, (flags & stats::kCallsites) != 0};
    // The timed replay (an untimed one, or one whose turn to be timed has not come, took the fast path in
    // allreduce() unless every call must be classified): same route and row, no classification.
    if (timing.wanted && library.cell != nullptr && library.matches(key)) {
        stats::Cell* const cell = library.cell;
        timing.read = cell->due();
        timing.not_due = !timing.read;
        const uint64_t start = timing.read ? stats::ticks() : 0;
        const Routed routed = replay(args, library, nullptr);
        if (timing.read) timing.ticks = static_cast<double>(stats::ticks() - start);
        record(args, routed, cell, timing);
        return routed.rc;
    }
    // A routed call is timed whenever times are wanted, unless it repeats a served call of this key whose row is not
    // due: its row, and so whether it is the row's turn, is known only once it has been routed (a new row's first
    // calls are timed anyway). The time of a call whose turn it is not is dropped.
    const bool unclocked =
        timing.wanted && served.served && served.cell != nullptr && !served.cell->due() && served.matches(key);
    timing.read = timing.wanted && !unclocked;
    Resolution settle;
    const uint64_t start = timing.read ? stats::ticks() : 0;
    const Routed routed = replays_served(served, resolved, args, key) ? replay(args, served, &resolved)
                                                                      : route_call(args, context(), rt, settle);
    if (timing.read) timing.ticks = static_cast<double>(stats::ticks() - start);  // ticks, seconds at finalize
    stats::Cell* const cell = record(args, routed, nullptr, timing);
    if (cell != nullptr || settle.ctx != nullptr) remember(cache, key, routed, cell, settle);
    return routed.rc;
}

// The fast path's second half (allreduce() below): a path's route settled in the key's slot (the latency path's small
// calls are where the instructions around a path count: issue 43). Out of line, so that the library's fast path
// keeps its registers.
[[gnu::noinline]] int allreduce_served(const CallArgs& args, bool timed) {
    const Key key = key_of(args);  // again: passing the caller's would store it on the library's fast path
    const unsigned slot = RouteCache::index(key);
    const CachedRoute& served = t_routes.slot[slot];
    Resolution& resolved = t_routes.resolution[slot];
    if (stats::Cell* const cell = served.cell;
        cell != nullptr && replays_served(served, resolved, args, key) && (!timed || !cell->due()))
        return replay_untimed(args, served, &resolved, cell, timed);
    return allreduce_classified(args);
}

}  // namespace

int allreduce(const CallArgs& args) {
    // Fast path, kept small so that a replayed call pays only for it: counted, not paused, not re-entrant, not timed
    // (no log or summary wants times, or it is not this row's turn: ARSHIM_STATS_SAMPLE), and the key's route settled
    // in this thread's route cache with its row. The library's route first, inline here (one fixed entry: its cost is
    // a few compares); a path's in allreduce_served. A cached route's cell is set only after the runtime was ready and
    // not disabled.
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    if ((flags & ~(stats::kTimed | stats::kCallsites)) == stats::kCollect && !ReentryGuard::active()) {
        const Key key = key_of(args);
        const bool timed = flags & stats::kTimed;
        const CachedRoute& library = t_routes.library;
        if (stats::Cell* const cell = library.cell; cell != nullptr && library.matches(key) && (!timed || !cell->due()))
            return replay_untimed(args, library, nullptr, cell, timed);
        return allreduce_served(args, timed);
    }
    return allreduce_classified(args);
}

}  // namespace arshim::engine

namespace arshim {

int run_native(const CallArgs& args) { return run_native(args, args.op); }

int run_native(const CallArgs& args, MPI_Op op) { return engine::library_allreduce(args, op); }

}  // namespace arshim
