// The engine: one MPI_Allreduce, top to bottom. It builds the call's route key once, replays a route this thread
// cached for the key when it can, and otherwise classifies the call from its MPI handles, asks the router
// (shim/core/router.h, MPI-free) for its route, runs it (the library, or a path from the run table made from the path
// rows), runs the modes the route names around it (tuning's report, verify's check), and records the statistics.
#include "shim/core/engine.h"

#include <optional>

#include "shim/base/device.h"
#include "shim/base/guard.h"
#include "shim/base/library_bugs.h"
#include "shim/core/context.h"
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

// What a call's statistics row needs, and how it ended.
struct Routed {
    int rc = MPI_SUCCESS;
    policy::Path path = policy::Path::native;
    uint64_t bytes = 0;
    uint32_t bucket = 0;
    uint64_t comm_id = 0;  // the communicator's statistics id
    vocab::DtypeClass dtype = vocab::DtypeClass::other;
    uint8_t op = vocab::kRowOpOther;
    vocab::Reason reason = vocab::kServed;           // why the library ran it (kServed: a path did)
    stats::SharpRun sharp = stats::SharpRun::none;  // how the SHARP path ran it
    bool replayable = false;  // the next call with the same key may replay this route
    uint32_t element_size = 0;
    // A known library bug: the library gets ARShim's SIMD op instead. (No MPI_OP_NULL default: under Open MPI it is
    // the address of a symbol in libmpi, which a thread-local cache of Routed values could not be constant-initialized
    // with, and the hot path would pay a TLS initialization check on every call.)
    bool library_bug = false;
    MPI_Op library_op{};
};

int run_library(const CallArgs& args, const Routed& r) {
    return r.library_bug ? run_native(args, r.library_op) : run_native(args);
}

Routed native_because(const CallArgs& args, vocab::Reason reason, Routed r) {
    r.rc = run_library(args, r);
    r.path = policy::Path::native;
    r.reason = reason;
    return r;
}

// The route key, built once per call: the handles as integers, the generation of the communicator contexts (a freed
// communicator's handle may come back for a new one), the count, and whether the buffers alias without MPI_IN_PLACE.
struct Key {
    uintptr_t comm, datatype, op;
    uint64_t generation;
    int64_t count;
    bool aliased;
};
Key key_of(const CallArgs& args) {
    return {handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op), CommContext::generation(),
            static_cast<int64_t>(args.count), args.sendbuf == args.recvbuf};
}

// A route this thread took for a key, kept for the next call with the same key: the library's (with the reason to
// count) or a path's. `cell`: the key's statistics row, also for guessing whether a served call's turn to be timed has
// come (a loop's calls share it). One cache line: what the fast path reads.
struct alignas(64) CachedRoute {
    route::Memo memo;
    stats::Cell* cell = nullptr;
    bool served = false;
    vocab::Reason reason = vocab::kServed;

    bool matches(const Key& k) const {
        return memo.matches(k.comm, k.datatype, k.op, k.generation, k.count, k.aliased);
    }
};

// A served route's resolution, beside its cached route (settled: ctx != nullptr): what the path reads.
struct Resolution {
    CommContext* ctx = nullptr;
    TypeInfo type{};
    kernels::Op kop{};
    kernels::BinaryFn binary = nullptr;
    kernels::NaryFn nary = nullptr;
    MPI_Op library_op{};  // set with ctx (no MPI_OP_NULL: see Routed)
    policy::Decision decision;
    Routed routed;
};

// This thread's route cache. `library`: the last replayable library route, the only entry the fast path reads (one
// fixed place: its cost is a few compares, as without the cache). `slot`: a few keys of served routes, each in the
// slot its handles hash to, so that a loop alternating between keys (a dot product and a convergence check) replays
// every one of them, with their resolutions beside.
struct RouteCache {
    static constexpr unsigned kSlots = 4;
    CachedRoute library;
    CachedRoute slot[kSlots];
    Resolution resolution[kSlots];
    // The handles' low bits are aligned zeros under Open MPI (addresses) and small indices under MPICH: one shift
    // and mask spreads both well enough for a handful of keys.
    static unsigned index(uintptr_t comm, uintptr_t datatype, uintptr_t op) {
        return static_cast<unsigned>((comm ^ datatype ^ op) >> 4) & (kSlots - 1);
    }
    static unsigned index(const Key& k) { return index(k.comm, k.datatype, k.op); }
};
// Initial-exec TLS (the library is preloaded): no __tls_get_addr call on the hot path. Every member is constant-
// initialized (no MPI handle constants as defaults), so no TLS initialization check either.
thread_local RouteCache t_routes __attribute__((tls_model("initial-exec")));

// Bytes of a call with a derived datatype (only on the library's route, for the statistics).
uint64_t derived_bytes(const CallArgs& args) {
    int size = 0;
    if (PMPI_Type_size(args.datatype, &size) != MPI_SUCCESS || size < 0) return 0;
    return static_cast<uint64_t>(args.count) * static_cast<uint64_t>(size);
}

// The MPI_Op a path hands the library for this call: a known library bug's ARShim op, ARShim's SIMD op where the
// decision says kernel = simd, else the user's (in the SMPI build with reductions charged, ARShim's op that charges:
// simd_ops.h charged_library_op).
MPI_Op library_op_for(const CallArgs& args, kernels::Op kop, const Routed& r, const policy::Decision& d) {
    if (r.library_bug) return r.library_op;
    if (d.kernel == policy::KernelChoice::simd)
        if (const MPI_Op simd = simd_op(kop); simd != MPI_OP_NULL) return simd;
    return charged_library_op(args.op, args.datatype);
}

Routed replay_served(const CallArgs& args, Resolution& c) {
    Routed r = c.routed;
    r.bytes = static_cast<uint64_t>(args.count) * c.type.size;
    const Call call{args, *c.ctx, c.type, c.kop, r.bytes, r.bucket, c.binary, c.nary, c.library_op, c.decision};
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        c.ctx = nullptr;       // route the next call again: a path's state may have changed
        r.replayable = false;
        return native_because(args, outcome.reason, r);
    }
    r.rc = outcome.rc;
    r.path = call.decision.path();
    r.sharp = outcome.sharp;
    return r;
}

// Erroneous calls go to the library untouched so that it reports them with the user's error handler: null handles,
// a negative count, send and receive buffers aliased without MPI_IN_PLACE (which ARShim's paths would quietly compute),
// NULL buffers with elements to reduce (a path would dereference them; with a predefined datatype MPI_BOTTOM is NULL
// and erroneous too).
bool erroneous(const CallArgs& args) {
    return args.comm == MPI_COMM_NULL || args.count < 0 || args.datatype == MPI_DATATYPE_NULL ||
           args.op == MPI_OP_NULL || (args.sendbuf == args.recvbuf && args.count > 0 && args.sendbuf != nullptr) ||
           (args.count > 0 && (args.sendbuf == nullptr || args.recvbuf == nullptr));
}

// Whether a rank of the call's communicator passed a device buffer (shim/base/device.h), agreed by its ranks: one
// rank's device buffer sends the call to the library on every rank. A failed agreement counts as device memory (the
// library's call then reports the communicator's trouble).
bool any_device_buffer(const CallArgs& args) {
    const int mine = (args.sendbuf != MPI_IN_PLACE && device::is_device(args.sendbuf)) || device::is_device(args.recvbuf)
                         ? 1
                         : 0;
    int any = mine;
    if (PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, args.comm) != MPI_SUCCESS) return true;
    return any != 0;
}

// Classifies the call from its handles, asks the router for its route and runs it. Every input of the route depends
// only on values identical on all ranks of the communicator, so all ranks route alike.
template <typename Context>
Routed route_call(const CallArgs& args, const Key& key, CachedRoute& cached, Resolution& resolved, Context&& context) {
    if (cached.served && resolved.ctx != nullptr && (args.count == 0 || (args.sendbuf && args.recvbuf)) &&
        cached.matches(key))
        return replay_served(args, resolved);
    Routed r;
    CommContext* const ctx = context();
    if (ctx == nullptr || erroneous(args)) {  // (a communicator handle the library rejects has no context)
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
    traits.count = key.count;
    traits.predefined_type = cls.type.predefined;
    traits.user_op = cls.user_op;
    traits.supported = cls.supported;
    traits.dclass = cls.type.dclass;
    traits.op = cls.kop;
    traits.bytes = r.bytes;
    traits.complex_type = cls.type.predefined && vocab::is_complex(cls.type.type);
    traits.floating_values = cls.type.predefined && vocab::has_floating_values(cls.type.type);
    if (cls.user_op && !ctx->inter && ctx->size > 1 && args.count != 0 && cls.type.predefined) {
        int commute = 0;
        PMPI_Op_commutative(args.op, &commute);
        traits.commutative = commute != 0;
    }
    const Runtime& rt = runtime();
    // Whether some rank passed device memory, asked (collectively) at most once per call and only in a GPU job.
    int device = -1;
    auto device_buffers = [&] {
        if (device < 0) device = any_device_buffer(args) ? 1 : 0;
        return device == 1;
    };
    if (cls.library_bug >= 0 && rt.avoid_library_bugs) {
        if (ctx->device_check && (ctx->inter || device_buffers())) {
            // ARShim's op is host code: a call with device buffers keeps the user's op. (An intercommunicator's
            // groups cannot agree on that with one allreduce, so in a GPU job its calls always keep it.)
            if (!ctx->inter) return native_because(args, vocab::Reason::device_memory, r);
        } else {
            // Right at every size and on every route: wherever the library reduces, it reduces with ARShim's op.
            traits.library_bug = true;
            r.library_bug = true;
            r.library_op = simd_op(cls.kop);
            bugs::count(cls.library_bug);
        }
    }
    r.replayable = route::replayable(traits);
    const Settings& settings = *ctx->settings;
    if (const vocab::Reason why = route::unservable(traits, settings); why != vocab::kServed)
        return native_because(args, why, r);

    const bool warm = ctx->warm() || ctx->count_cold_call();
    const policy::Decision* policy_decision =
        warm ? &ctx->decide(r.bytes, r.bucket, args.datatype, args.op, cls.type, cls.kop, traits.library_bug,
                            route::in_rank_order(traits, settings))
             : nullptr;
    KeyBook* book = policy_decision != nullptr && route::needs_book(settings, *policy_decision)
                        ? &ctx->book(r.bucket, cls.type.type, cls.kop)
                        : nullptr;
    policy::tune::KeyFacts facts;
    if (book != nullptr) facts = tune::key_facts(*ctx, r.bytes);
    const route::Route route = route::choose(traits, settings, warm, policy_decision, book, facts);
    r.replayable = route.replayable;

    const double started = route.candidate >= 0 ? tune::candidate_clock() : 0.0;
    auto report_candidate = [&](bool declined) {
        if (route.candidate < 0) return;
        const double took = tune::candidate_clock() - started;
        tune::report(*ctx, *book, route.candidate, took, declined, r.bucket, cls.type.dclass, cls.kop,
                     args.datatype, args.op, r.bytes);
    };
    // A call with device buffers is no sample of the key's candidates: its time says nothing of the key's host
    // calls, and a candidate declined for it would be excluded for good (a key whose first calls carried device
    // buffers was decided native and stayed so for its host calls). It goes to the library, the exploration waits.
    if (ctx->device_check && route.candidate >= 0 && device_buffers())
        return native_because(args, vocab::Reason::device_memory, r);
    if (route.library) {
        Routed routed = native_because(args, route.reason, r);
        report_candidate(false);
        return routed;
    }
    // A GPU job: ARShim's paths never touch device memory. Served routes are then never replayed, so every served
    // call is classified (its buffers may change from call to call).
    if (ctx->device_check) {
        r.replayable = false;
        if (device_buffers()) return native_because(args, vocab::Reason::device_memory, r);
    }
    const kernels::KernelTable& kernels = kernels::active();
    const auto op_index = static_cast<std::size_t>(cls.kop);
    const auto type_index = static_cast<std::size_t>(cls.type.type);
    const Call call{args, *ctx, cls.type, cls.kop, r.bytes, r.bucket, kernels.binary[op_index][type_index],
                    kernels.nary[op_index][type_index], library_op_for(args, cls.kop, r, route.decision),
                    route.decision};
    std::optional<verify::Check> check;
    if (route.verify) check.emplace(call);
    const PathOutcome outcome = run_path(call);
    if (!outcome.served) {
        r.replayable = false;  // a path's state may change (SHARP disabled after an error): route every call
        Routed routed = native_because(
            args, route::in_rank_order(traits, settings) ? vocab::Reason::not_reproducible : outcome.reason, r);
        report_candidate(true);
        return routed;
    }
    r.rc = outcome.rc;
    r.path = route.decision.path();
    r.sharp = outcome.sharp;
    report_candidate(false);
    if (check) check->finish(call, outcome.rc, *book, traits.library_bug);
    if (r.replayable) {
        cached.memo = {key.comm, key.datatype, key.op, key.generation, r.element_size, r.bucket};
        cached.served = true;
        cached.cell = nullptr;  // set once the call is counted
        resolved = {ctx, call.type, call.kop, call.binary, call.nary, call.library_op, route.decision, r};
    }
    return r;
}

// Remembers how the call went, for the next one with the same key: a replayable library route with its row, or the
// row of a served call (for the guess whether to read the clock).
void remember(RouteCache& cache, const Key& key, const Routed& routed, stats::Cell* cell) {
    if (routed.path == policy::Path::native) {
        if (!routed.replayable) return;
        CachedRoute& c = cache.library;
        c = CachedRoute{};
        c.memo = {key.comm, key.datatype, key.op, key.generation, routed.element_size, routed.bucket};
        c.reason = routed.reason;
        c.cell = cell;
        return;
    }
    if (cache.library.matches(key)) cache.library = CachedRoute{};  // never a library replay of a served key
    const unsigned slot = RouteCache::index(key);
    CachedRoute& c = cache.slot[slot];
    if (!c.served || !c.matches(key)) {  // served but not replayable: keep its row for the clock's guess only
        c = CachedRoute{};
        cache.resolution[slot].ctx = nullptr;
        c.memo = {key.comm, key.datatype, key.op, key.generation, routed.element_size, routed.bucket};
        c.served = true;
    }
    c.cell = cell;
}

// Everything but the fast path of allreduce() below: re-entry, disabled, the argument check, routing, statistics.
[[gnu::noinline]] int allreduce_classified(const CallArgs& args) {
    const Key key = key_of(args);  // built once per call, here: the fast path only compared the handles
    RouteCache& cache = t_routes;
    const unsigned slot = RouteCache::index(key);
    CachedRoute& library = cache.library;   // the last library route (a replay when it is this key's)
    CachedRoute& cached = cache.slot[slot];  // this key's served route, when it has one
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
        if (library.matches(key)) return run_native(args);
        const Routed routed = route_call(args, key, cached, resolved, context);
        // Remembered without a cell: a paused call counts nothing, and the next counted call classifies again.
        remember(cache, key, routed, nullptr);
        return routed.rc;
    }
    const bool timed = flags & stats::kTimed;
    // The timed replay (an untimed one, or one whose turn to be timed has not come, took the fast path in
    // allreduce() unless every call must be classified): same route and row, no classification.
    if (timed && library.cell != nullptr && library.matches(key)) {
        stats::Cell& cell = *library.cell;
        const uint64_t bytes = static_cast<uint64_t>(args.count) * library.memo.element_size;
        stats::ThreadCounters& counters = stats::local();
        if (library.reason != vocab::kServed) ++counters.reasons[static_cast<std::size_t>(library.reason)];
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
    // A routed call is timed whenever times are wanted, unless it repeats a served call of this key whose row is not
    // due: its row, and so whether it is the row's turn, is known only once it has been routed (a new row's first
    // calls are timed anyway). The time of a call whose turn it is not is dropped.
    const bool unclocked = timed && cached.served && cached.cell != nullptr && !cached.cell->due() && cached.matches(key);
    const bool clocked = timed && !unclocked;
    const uint64_t start = clocked ? stats::ticks() : 0;
    const Routed routed = route_call(args, key, cached, resolved, context);
    const auto elapsed = clocked ? static_cast<double>(stats::ticks() - start) : 0.0;  // ticks, seconds at finalize
    stats::ThreadCounters& counters = stats::local();
    const stats::Recorded recorded =
        stats::record(counters, {routed.comm_id, routed.bytes, elapsed,
                                 {routed.path, routed.bucket, routed.dtype, routed.op, routed.reason, routed.sharp},
                                 clocked, unclocked});
    if ((flags & stats::kCallsites) && recorded.weight > 0)
        callsites::record(counters, args.caller, {routed.bytes, elapsed, recorded.weight});
    if (recorded.cell != nullptr) remember(cache, key, routed, recorded.cell);
    return routed.rc;
}

}  // namespace

int allreduce(const CallArgs& args) {
    // Fast path, kept small so that a library-routed call pays only for it: counted, not paused, not re-entrant, not
    // timed (no log or summary wants times, or it is not this row's turn: ARSHIM_STATS_SAMPLE), and the same
    // communicator, datatype, op and size bucket as a replayable library route this thread cached. A cached route's
    // cell is set only after the runtime was ready and not disabled. The handles are compared as they come; the
    // route key is built only when the call goes further.
    const CachedRoute& cached = t_routes.library;
    const uint8_t flags = stats::g_flags.load(std::memory_order_relaxed);
    if ((flags & ~(stats::kTimed | stats::kCallsites)) == stats::kCollect && !ReentryGuard::active() &&
        cached.cell != nullptr &&
        cached.memo.matches(handle_bits(args.comm), handle_bits(args.datatype), handle_bits(args.op),
                            CommContext::generation(), static_cast<int64_t>(args.count), args.sendbuf == args.recvbuf)) {
        stats::Cell& cell = *cached.cell;
        const bool timed = flags & stats::kTimed;
        if (!timed || !cell.due()) {
            int rc;
            {
                ReentryGuard guard;
                rc = library_allreduce(args, args.op);
            }
            cell.pass(static_cast<uint64_t>(args.count) * cached.memo.element_size, timed);
            if (cached.reason != vocab::kServed) ++stats::local().reasons[static_cast<std::size_t>(cached.reason)];
            return rc;
        }
    }
    // The served fast path: the same conditions, and this key's served route settled in its slot (the latency path's
    // small calls are where the instructions around a path count: issue 43).
    const uintptr_t comm = handle_bits(args.comm), datatype = handle_bits(args.datatype), op = handle_bits(args.op);
    const unsigned slot = RouteCache::index(comm, datatype, op);
    const CachedRoute& served = t_routes.slot[slot];
    Resolution& resolved = t_routes.resolution[slot];
    if ((flags & ~(stats::kTimed | stats::kCallsites)) == stats::kCollect && !ReentryGuard::active() &&
        served.served && served.cell != nullptr && resolved.ctx != nullptr &&
        (args.count == 0 || (args.sendbuf != nullptr && args.recvbuf != nullptr)) &&
        served.memo.matches(comm, datatype, op, CommContext::generation(), static_cast<int64_t>(args.count),
                            args.sendbuf == args.recvbuf)) {
        stats::Cell& cell = *served.cell;
        const bool timed = flags & stats::kTimed;
        if (!timed || !cell.due()) {
            Routed routed;
            {
                ReentryGuard guard;
                routed = replay_served(args, resolved);
            }
            if (routed.path != policy::Path::native) {
                cell.pass(routed.bytes, timed);
                return routed.rc;
            }
            // The path declined (its state changed): counted as the routed calls are, and routed again next time.
            stats::record(stats::local(), {routed.comm_id, routed.bytes, 0.0,
                                           {routed.path, routed.bucket, routed.dtype, routed.op, routed.reason,
                                            routed.sharp},
                                           false, timed});
            return routed.rc;
        }
    }
    return allreduce_classified(args);
}

}  // namespace arshim::engine

namespace arshim {

int run_native(const CallArgs& args) { return run_native(args, args.op); }

int run_native(const CallArgs& args, MPI_Op op) { return engine::library_allreduce(args, op); }

}  // namespace arshim
