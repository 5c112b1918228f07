// The allreduce paths. Each runs with PMPI_* only and either serves the call or declines with a reason (the
// engine then runs native, counting the reason). Declining must be decided from values identical on every rank of
// the communicator, so that all ranks decline together.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "policy/policy.h"
#include "shim/comm_context.h"
#include "shim/mpi_types.h"
#include "shim/stats.h"

namespace arshim {

// One MPI_Allreduce call as the entry point received it (Fortran sentinels already converted).
struct CallArgs {
    const void* sendbuf;
    void* recvbuf;
    MPI_Count count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
    bool large_count;  // arrived through MPI_Allreduce_c
    const void* caller = nullptr;  // the entry point's return address: the call site (stats, callsites.h)
};

// A call the engine classified as servable by ARShim's own paths.
struct PathCall {
    const CallArgs& args;
    CommContext& ctx;
    const TypeInfo& type;
    kernels::Op kop;
    uint64_t bytes;
    const policy::Decision& decision;
};

struct PathOutcome {
    bool served = false;
    int rc = MPI_SUCCESS;
    stats::Reason reason = stats::Reason::path_unavailable;  // why it declined, when !served
    stats::SharpRun sharp = stats::SharpRun::none;           // the SHARP path: how it served the call

    static PathOutcome done(int rc, stats::SharpRun sharp = stats::SharpRun::none) {
        return {true, rc, stats::Reason::policy, sharp};
    }
    static PathOutcome decline(stats::Reason why) { return {false, MPI_SUCCESS, why, stats::SharpRun::none}; }
};

int run_native(const CallArgs& args);
PathOutcome run_pipelined(const PathCall& call);
PathOutcome run_multileader(const PathCall& call);
PathOutcome run_sharp(const PathCall& call);

// Release of the lazily created per-communicator state of each path (called from the context's release).
void release_multileader(CommContext& ctx);
void release_sharp(CommContext& ctx);

}  // namespace arshim
