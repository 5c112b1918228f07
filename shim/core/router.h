// The router: from a call's traits, the communicator's agreed settings and what it may ask of the communicator (its
// warmth, the policy's decision, the key's book, whether some rank passed device memory), the route the call takes:
// the library with a reason (and with ARShim's op for a known library bug), or a path with its decision, whether a
// tuning candidate is being tried, whether verify mode checks it, and whether the next call of the same key may replay
// the route. MPI-free, so that every routing rule is unit-tested without mpirun (test/shim/test_router.cpp).
// shim/core/engine.cpp feeds it what classification learned (shim/core/classify.h), answers its questions and runs
// what it returns; nothing else routes.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "policy/decision.h"
#include "policy/routing_words.h"
#include "policy/settings.h"
#include "policy/tune_candidates.h"
#include "shim/modes/key_book.h"

namespace arshim::route {

// What classification learned about a call that the library accepts. Every field depends only on values that MPI
// requires to be identical on all ranks of the communicator (count, datatype, op, communicator), so every rank
// routes alike.
struct Traits {
    bool intercommunicator = false;
    int comm_size = 1;
    int64_t count = 0;
    bool predefined_type = false;  // a predefined datatype ARShim knows
    bool user_op = false;          // MPI_Op_create
    bool commutative = true;       // for user ops (asked per call: a freed op's handle may come back)
    bool supported = false;        // ARShim's kernels compute this op on this type, as the standard defines it
    vocab::DtypeClass dclass = vocab::DtypeClass::other;  // of a predefined type
    kernels::Op op = kernels::Op::sum;                     // of a predefined op
    uint64_t bytes = 0;
    // The library computes this (datatype, op) wrong (policy/library_bugs.h) and the run routes around its bugs. Given
    // to look_up(), which decides whether the library's reductions then use ARShim's op; what choose() and replayable()
    // are given is that decision: the library's reductions use ARShim's op.
    bool library_bug = false;
    bool device_check = false;     // some rank of the communicator has a GPU runtime: buffers may be device memory
    bool complex_type = false;     // a predefined complex type (its PROD's formula differs between implementations)
    bool floating_values = false;  // IEEE values (vocab::has_floating_values): signed zeros and NaNs
};

// Why a call must go to the library whatever the policy says, in the order docs/architecture.md gives (communicator,
// datatype, op); kServed when one of ARShim's paths may serve it (then the policy decides). Under
// ARSHIM_REPRODUCIBLE a derived datatype or user op is counted as not_reproducible (no path can sum it in rank order).
constexpr vocab::Reason unservable(const Traits& t) {
    using vocab::Reason;
    if (t.intercommunicator) return Reason::intercommunicator;
    if (t.comm_size == 1) return Reason::single_rank;
    if (t.count == 0) return Reason::zero_count;
    if (!t.predefined_type) return Reason::derived_datatype;
    if (t.user_op) return t.commutative ? Reason::user_op : Reason::noncommutative_op;
    if (!t.supported) return Reason::unsupported_op_type;
    return vocab::kServed;
}

vocab::Reason unservable(const Traits& t, const Settings& s);

// A route whose reason is fixed by (communicator, predefined datatype, predefined op, size bucket) may be replayed:
// the next such call skips classification. Derived datatypes and user ops are never replayed (their handles may
// change meaning when freed and reused), nor are calls that hit a known library bug (the replay would hand the library
// the predefined op).
constexpr bool replayable(const Traits& t) { return t.predefined_type && !t.user_op && !t.library_bug; }

// ARSHIM_REPRODUCIBLE covers the call: a floating-point SUM or PROD, which the reproducible path sums in rank order
// whatever the policy or ARSHIM_PATH say, warm communicator or not.
constexpr bool in_rank_order(const Traits& t, const Settings& s) {
    return s.reproducible != ReproducibleMode::off && t.dclass == vocab::DtypeClass::floating &&
           (t.op == kernels::Op::sum || t.op == kernels::Op::prod);
}

// Whether the call's result bits may depend on the order its values are combined in, so that routes folding in
// different orders (the library's, ARShim's paths) may give different bits, and timing noise must not choose between
// them (same job, same bits). A rule over IEEE 754 values, not a list of ops:
//  - integer, logical and bitwise ops: exact, associative and commutative: never;
//  - floating SUM/PROD: the rounding depends on the association from three values on. Of two values, IEEE addition
//    and multiplication are commutative, so a communicator of two ranks gets the same bits in either order (apart from
//    which of two NaNs' payloads survives, on which the libraries' own two ranks differ as well); not a complex PROD,
//    whose formula differs between the library's op and ARShim's kernel (fused multiply-adds or not);
//  - floating MIN/MAX and MINLOC/MAXLOC, at any size: max(-0, +0), min(+0, -0) and a NaN against a number return
//    whichever operand the implementation looks at first, so the operand order shows in the bits (issue 56 item 1).
constexpr bool order_sensitive(const Traits& t) {
    if (!t.floating_values && t.dclass != vocab::DtypeClass::floating) return false;
    switch (t.op) {
    case kernels::Op::sum:
    case kernels::Op::prod: return t.comm_size != 2 || (t.complex_type && t.op == kernels::Op::prod);
    case kernels::Op::min:
    case kernels::Op::max:
    case kernels::Op::minloc:
    case kernels::Op::maxloc: return true;
    default: return false;
    }
}

// Where a call goes.
struct Route {
    bool library = true;                        // the library's allreduce runs it, with `reason`
    vocab::Reason reason = vocab::Reason::policy;
    policy::Decision decision;                  // the path that runs it (when !library), with its parameters
    int candidate = -1;   // online tuning tries candidate `candidate` with this call: time it and report it
    bool verify = false;  // verify mode checks this call against the library's result
    bool replayable = false;  // the next call with the same key may take this route without routing
    bool library_bug = false;   // wherever the library reduces this call, it gets ARShim's op (a known library bug)
    bool in_rank_order = false;  // ARSHIM_REPRODUCIBLE covers the call: a path's decline counts as not_reproducible
};

// The route of a servable call (unservable() said kServed). `warm`: the communicator's layout is known (a cold one's
// calls go to the library); `policy_decision`: the policy's for the key (nullptr when cold); `book`: the key's (may be
// nullptr when neither tuning nor verify mode can apply: then it is not needed); `facts`: the tuner's view of the key.
// Updates the book (verify count, tuning state): call it once per call, in call order, on every rank alike.
Route choose(const Traits& t, const Settings& s, bool warm, const policy::Decision* policy_decision, KeyBook* book,
             const policy::tune::KeyFacts& facts);

// What the router may ask of the call's communicator. Each answer costs a table lookup or a collective call over the
// communicator, so look_up() asks only when a rule needs the answer, at most once per call, and in an order that
// depends only on values identical on every rank (every rank asks the same questions, and so makes the same
// collective calls).
class Questions {
public:
    // Whether some rank of the communicator passed a device buffer (shim/base/device.h), agreed by its ranks: one
    // rank's device buffer sends the call to the library on every rank. Collective; asked only where some rank has a
    // GPU runtime (Traits::device_check).
    virtual bool device_buffers() = 0;
    // Whether the communicator's layout is known; counts a cold communicator's call (it warms, collectively, at its
    // ARSHIM_CONTEXT_AFTER-th).
    virtual bool warm() = 0;
    // The policy's decision for the call's key (once warm): with the library bug routed around, or reproducible.
    virtual const policy::Decision& decision(bool library_bug, bool reproducible) = 0;
    // The key's book (verify count, tuning state); when needs_book() says so.
    virtual KeyBook* book() = 0;
    // The tuner's view of the key (with its book).
    virtual policy::tune::KeyFacts key_facts() = 0;

protected:
    ~Questions() = default;
};

// The route of a call the library accepts: every routing rule, in order.
//  - A known library bug (Traits::library_bug): wherever the library reduces the call it gets ARShim's op, at every
//    size and on every route; but ARShim's op is host code, so a call with device buffers keeps the user's op and goes
//    to the library (device_memory). An intercommunicator's groups cannot agree on device buffers with one allreduce:
//    in a GPU job its calls keep the user's op (and go to the library: intercommunicator).
//  - unservable(): the reasons the library must serve the call, whatever the policy says.
//  - The communicator's warmth, the policy's decision and the key's book, asked as needed, then choose().
//  - A GPU job (Traits::device_check): a served call or a tuning candidate with device buffers goes to the library
//    (device_memory); served routes are never replayed there (a key's next call may carry other buffers). A call with
//    device buffers is no sample of the key's candidates: the exploration waits for a host call.
// Updates the key's book through choose(): call it once per call, in call order, on every rank alike.
Route look_up(const Traits& t, const Settings& s, Questions& ask);

// The reason to count when the path of `route` declined with `why`: under ARSHIM_REPRODUCIBLE a call the library
// then serves is not reproducible, whatever the path's own reason.
constexpr vocab::Reason declined(const Route& route, vocab::Reason why) {
    return route.in_rank_order ? vocab::Reason::not_reproducible : why;
}

// Whether choose() needs the key's book for this decision: online tuning may explore it, or verify mode is on.
bool needs_book(const Settings& s, const policy::Decision& policy_decision);

// This thread's last replayable native call. Handles as integers, zero when empty. Valid while no communicator
// context was freed since (the generation: a freed communicator's handle may be reused for a new one; generations
// start at 1, so an empty memo never matches).
struct Memo {
    uintptr_t comm = 0, datatype = 0, op = 0;
    uint64_t generation = 0;
    uint32_t element_size = 0;
    uint32_t bucket = 0;

    // Whether a call with these arguments takes the remembered route. `aliased`: sendbuf == recvbuf without
    // MPI_IN_PLACE (an error the library must report, never replayed).
    bool matches(uintptr_t c, uintptr_t d, uintptr_t o, uint64_t current_generation, int64_t count,
                 bool aliased) const {
        return generation == current_generation && comm == c && datatype == d && op == o && count >= 0 &&
               !aliased && vocab::bucket_of(static_cast<uint64_t>(count) * element_size) == bucket;
    }
};

}  // namespace arshim::route
