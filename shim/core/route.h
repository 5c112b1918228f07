// The engine's routing rules and its replay memo, MPI-free so that they are unit-tested without mpirun
// (test/shim/test_core.cpp). shim/core/engine.cpp feeds them what it learned from the MPI handles.
#pragma once

#include <cstdint>

#include "policy/routing_words.h"

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
};

// Why a call must go to the library whatever the policy says, in the order docs/architecture.md gives (communicator,
// datatype, op); kServed when one of ARShim's paths may serve it (then the policy decides).
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

// A native route whose reason is fixed by (communicator, predefined datatype, predefined op, size bucket) may be
// replayed: the next such call skips classification. Derived datatypes and user ops are never replayed (their
// handles may change meaning when freed and reused).
constexpr bool replayable(const Traits& t) { return t.predefined_type && !t.user_op; }

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
