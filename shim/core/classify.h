// Classification, the engine's first stage: what a call is, from what its MPI handles said (shim/core/engine.cpp reads
// them: the (datatype, op) pair's class, memoized per communicator, and the communicator's context), turned into what
// the router routes on (route::Traits) and the statistics row it is counted in. MPI-free, so that it is unit-tested
// without mpirun (test/shim/test_router.cpp, "[classify]"). Every fact depends only on values MPI requires to be
// identical on all ranks of the communicator (count, datatype, op, communicator) or on facts its ranks agreed on (the
// library's bugs, whether some rank has a GPU runtime), so every rank classifies a call alike.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "policy/routing_words.h"
#include "shim/core/router.h"

namespace arshim::classifier {

// What the handles say, as the engine read them.
struct Facts {
    // The communicator.
    bool intercommunicator = false;
    int comm_size = 1;
    uint64_t comm_id = 0;       // its statistics id
    bool device_check = false;  // some rank of it has a GPU runtime
    int64_t count = 0;
    // The datatype.
    bool predefined_type = false;  // a predefined datatype ARShim knows
    kernels::Type type{};          // of a predefined type
    uint32_t element_size = 0;     // of a predefined type
    vocab::DtypeClass dclass = vocab::DtypeClass::other;
    uint64_t derived_bytes = 0;    // count * size of a derived datatype (the library's answer)
    // The op.
    bool kernel_op = false;    // a predefined reduction ARShim's kernels compute (`op`)
    kernels::Op op = kernels::Op::sum;
    bool user_op = false;      // MPI_Op_create
    bool commutative = true;   // of a user op, when asks_commutative()
    bool supported = false;    // kernel_op, and the standard defines it on the type
    bool library_bug = false;  // the library computes this pair wrong, and the run routes around the library's bugs
};

// Whether the engine must ask the library if a user op commutes: only where it decides the call's reason (unservable()
// checks the communicator, the count and the datatype first). Asked per call: a freed op's handle may come back.
constexpr bool asks_commutative(const Facts& f) {
    return f.user_op && !f.intercommunicator && f.comm_size > 1 && f.count != 0 && f.predefined_type;
}

// The statistics row a call is counted in (with its path, reason and SHARP run: stats::RowKey), and its size.
struct Row {
    uint64_t comm_id = 0;
    uint64_t bytes = 0;
    uint32_t bucket = 0;
    vocab::DtypeClass dtype = vocab::DtypeClass::other;  // `derived` for a derived datatype
    uint8_t op = vocab::kRowOpOther;                      // the kernel op, or kRowOpUser / kRowOpOther
    uint32_t element_size = 0;
};

struct Classified {
    route::Traits traits;
    Row row;
};

constexpr Classified classify(const Facts& f) {
    Classified c;
    Row& row = c.row;
    row.comm_id = f.comm_id;
    row.bytes = f.predefined_type ? static_cast<uint64_t>(f.count) * f.element_size : f.derived_bytes;
    row.bucket = vocab::bucket_of(row.bytes);
    row.dtype = f.predefined_type ? f.dclass : vocab::DtypeClass::derived;
    row.op = f.kernel_op ? static_cast<uint8_t>(f.op) : f.user_op ? vocab::kRowOpUser : vocab::kRowOpOther;
    row.element_size = f.element_size;

    route::Traits& t = c.traits;
    t.intercommunicator = f.intercommunicator;
    t.comm_size = f.comm_size;
    t.count = f.count;
    t.predefined_type = f.predefined_type;
    t.user_op = f.user_op;
    t.commutative = f.commutative;
    t.supported = f.supported;
    t.dclass = f.dclass;
    t.op = f.op;
    t.bytes = row.bytes;
    t.library_bug = f.library_bug;
    t.device_check = f.device_check;
    t.complex_type = f.predefined_type && vocab::is_complex(f.type);
    t.floating_values = f.predefined_type && vocab::has_floating_values(f.type);
    return c;
}

}  // namespace arshim::classifier
