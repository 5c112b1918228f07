// One MPI_Allreduce call: as the entry point received it (CallArgs), and as the engine resolved it, once, for the
// path that serves it (Call). Paths read a Call and resolve nothing again: the size bucket, the kernel op, the
// kernels of the active ISA and the MPI_Op to hand the library are all in it.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "kernels/kernels.h"
#include "policy/policy.h"
#include "shim/base/mpi_types.h"
#include "shim/stats/counters.h"

namespace arshim {

class PathContext;

// The call as the entry point received it (Fortran sentinels already converted).
struct CallArgs {
    const void* sendbuf;
    void* recvbuf;
    MPI_Count count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    bool large_count;  // arrived through MPI_Allreduce_c
    const void* caller = nullptr;  // the entry point's return address: the call site (shim/stats/callsites.h)
};

// A call the engine classified as servable by ARShim's own paths, resolved once (shim/core/engine.cpp).
struct Call {
    const CallArgs& args;
    PathContext& ctx;
    TypeInfo type;                     // predefined element type, its size and class
    kernels::Op kop;                   // the reduction
    uint64_t bytes;                    // count * element size
    uint32_t bucket;                   // vocab::bucket_of(bytes)
    kernels::BinaryFn binary;          // the active ISA's kernels for (kop, type); never null for a served call
    kernels::NaryFn nary;
    MPI_Op library_op;                 // the op a path hands the library: the predefined op, or ARShim's SIMD op
                                       // when the decision says kernel = simd (shim/core/simd_ops.h)
    const policy::Decision& decision;  // the path and its parameters
};

// What a path did with a call: served it (rc is the call's result), or declined with a reason (the engine then
// runs it natively and counts the reason). Declining must be decided from values identical on every rank of the
// communicator, so that all ranks decline together.
struct PathOutcome {
    bool served = false;
    int rc = MPI_SUCCESS;
    vocab::Reason reason = vocab::Reason::path_unavailable;  // why it declined, when !served
    stats::SharpRun sharp = stats::SharpRun::none;           // the SHARP path: how it served the call

    static PathOutcome done(int rc, stats::SharpRun sharp = stats::SharpRun::none) {
        return {true, rc, vocab::Reason::policy, sharp};
    }
    static PathOutcome decline(vocab::Reason why) { return {false, MPI_SUCCESS, why, stats::SharpRun::none}; }
};

// The library's own allreduce for these arguments (with `op` instead of args.op: a known library bug).
int run_native(const CallArgs& args);
int run_native(const CallArgs& args, MPI_Op op);

}  // namespace arshim
