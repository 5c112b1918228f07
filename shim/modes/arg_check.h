// Argument check (ARSHIM_CHECK_ARGS=1, docs/verify.md): MPI requires every rank of a communicator to pass the
// same count, datatype and op to a reduction (MPI 4.0 §6.9.1; unlike point-to-point, an equal type signature built
// from another count is not enough) and MPI_IN_PLACE on all ranks or none. A program
// that breaks the rule can hang or compute garbage on any path, the library's own included. With the check on,
// every call first makes one small allreduce (MAX of a digest and of its complement: the MPICH MPIX_EQUAL idea), so
// ranks learn whether they all agree; on a mismatch they exchange their arguments (one allgather, only then), each
// reports, and the call returns MPI_ERR_ARG through the communicator's error handler instead of hanging
// (ARSHIM_STRICT=1 aborts).
//
// Handles of derived datatypes cannot be compared across processes, so a datatype is compared by its type
// signature, taken as the multiset of its basic elements (decoded with MPI_Type_get_envelope/contents): the same
// datatype built on each rank always agrees (whatever constructor each rank used), so a legal program is never
// stopped; a datatype with another element type or another number of elements is caught.
#pragma once

#include "shim/stats/mode_counts.h"

#include <atomic>
#include <cstdint>

#include "shim/paths/call.h"
#include "shim/paths/path_context.h"

namespace arshim::argcheck {

// Its counts for the statistics are in shim/stats/mode_counts.h.

// Checks `args` against the other ranks of its communicator. Returns true when they agree (or the call cannot be
// checked: erroneous handles, intercommunicators, a single rank); false when they do not, with *rc the error the
// call must return (the communicator's error handler has been called).
// `ctx`: the communicator's (nullptr for a handle the library rejects); `laid_out`: its layout is known (the check may
// then reduce through node memory).
bool agree(const CallArgs& args, PathContext* ctx, bool laid_out, int* rc);

}  // namespace arshim::argcheck
