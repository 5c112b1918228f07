// The engine's route cache (shim/core/engine.cpp): per thread, the routes settled for the keys of recent calls, so that
// the next call of a key replays its route without classification or routing. Read only by the engine.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "policy/policy.h"
#include "shim/core/classify.h"
#include "shim/core/context.h"
#include "shim/core/router.h"
#include "shim/paths/call.h"
#include "shim/stats/counters.h"

namespace arshim::engine {

// How a call ended, and what its statistics row and the route cache need.
struct Routed {
    int rc = MPI_SUCCESS;
    policy::Path path = policy::Path::native;
    vocab::Reason reason = vocab::kServed;           // why the library ran it (kServed: a path did)
    stats::SharpRun sharp = stats::SharpRun::none;  // how the SHARP path ran it
    bool replayable = false;  // the next call with the same key may replay this route
    classifier::Row row;      // a library replay fills only row.bytes: its statistics row is known
    // A known library bug: the library gets ARShim's SIMD op instead. (No MPI_OP_NULL default: under Open MPI it is
    // the address of a symbol in libmpi, which a thread-local cache of Routed values could not be constant-initialized
    // with, and the hot path would pay a TLS initialization check on every call.)
    bool library_bug = false;
    MPI_Op library_op{};
};

// The route key, built once per call: the handles as integers, the generation of the communicator contexts (a freed
// communicator's handle may come back for a new one), the count, and whether the buffers alias without MPI_IN_PLACE.
struct Key {
    uintptr_t comm, datatype, op;
    uint64_t generation;
    int64_t count;
    bool aliased;
};
inline Key key_of(const CallArgs& args) {
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

// This thread's route cache. `library`: the last replayable library route, the only entry the fast path reads for
// the library (one fixed place: its cost is a few compares, as without the cache). `slot`: a few keys of served
// routes, each in the slot its handles hash to, so that a loop alternating between keys (a dot product and a
// convergence check) replays every one of them, with their resolutions beside.
struct RouteCache {
    static constexpr unsigned kSlots = 4;
    CachedRoute library;
    CachedRoute slot[kSlots];
    Resolution resolution[kSlots];
    // The handles' low bits are aligned zeros under Open MPI (addresses) and small indices under MPICH: one shift
    // and mask spreads both well enough for a handful of keys.
    static unsigned index(const Key& k) { return static_cast<unsigned>((k.comm ^ k.datatype ^ k.op) >> 4) & (kSlots - 1); }
};

// Whether a served route `c` with its resolution `r` replays for this call: its key, settled, and buffers a path may
// read (NULL buffers with elements to reduce are an error the library reports). A library route replays whenever
// its key matches (CachedRoute::matches).
inline bool replays_served(const CachedRoute& c, const Resolution& r, const CallArgs& args, const Key& k) {
    return c.served && r.ctx != nullptr && (args.count == 0 || (args.sendbuf != nullptr && args.recvbuf != nullptr)) &&
           c.matches(k);
}

// Remembers how the call went, for the next one with the same key: a replayable library route with its row, a
// served route to settle (`settle.ctx` set: the resolution the key's next calls replay), or the row of a served call
// (for the guess whether to read the clock).
inline void remember(RouteCache& cache, const Key& key, const Routed& routed, stats::Cell* cell, const Resolution& settle) {
    const route::Memo memo{key.comm, key.datatype, key.op, key.generation, routed.row.element_size, routed.row.bucket};
    if (routed.path == policy::Path::native) {
        if (!routed.replayable) return;
        CachedRoute& c = cache.library;
        c = CachedRoute{};
        c.memo = memo;
        c.reason = routed.reason;
        c.cell = cell;
        return;
    }
    if (cache.library.matches(key)) cache.library = CachedRoute{};  // never a library replay of a served key
    const unsigned slot = RouteCache::index(key);
    CachedRoute& c = cache.slot[slot];
    if (settle.ctx != nullptr) {
        c = CachedRoute{};
        c.memo = memo;
        c.served = true;
        cache.resolution[slot] = settle;
    } else if (!c.served || !c.matches(key)) {  // served but not replayable: keep its row for the clock's guess only
        c = CachedRoute{};
        cache.resolution[slot].ctx = nullptr;
        c.memo = memo;
        c.served = true;
    }
    c.cell = cell;
}

}  // namespace arshim::engine
