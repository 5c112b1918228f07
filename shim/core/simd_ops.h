// ARShim's SIMD kernels registered as MPI ops (MPI_Op_create, commute = 1), one per predefined op. The function
// of each dispatches on the datatype handle to the active kernel table.
#pragma once

#include <mpi.h>

#include "kernels/kernels.h"

namespace arshim {

void create_simd_ops();           // once, after MPI init and build_type_map()
void free_simd_ops();             // at finalize
// The ARShim op standing for the predefined reduction `op` (MPI_OP_NULL when it could not be created): one indexed
// load, for the engine, which has resolved the op already.
MPI_Op simd_op(kernels::Op op);
// The same for an MPI op handle, or MPI_OP_NULL when there is none (user op, MPI_REPLACE): for tests and tools.
// Contract: use the returned op only with a datatype for which kernel_supports(op, datatype) is true. An MPI user
// function cannot hand an element type it does not know back to the library, so the op's function reports any
// other datatype as an internal error and aborts (shim/core/simd_ops.cpp).
MPI_Op simd_op_for(MPI_Op op);

// The op to hand the library for `op` on `datatype` (the engine's native route, the paths' library calls). In the
// SMPI build, while reductions are charged (shim/base/sim_charge.h), ARShim's SIMD op wherever it reduces this pair:
// its function charges the simulated time of the bytes it reduces, then reduces, so the library's reductions cost
// what ARShim's own do. SMPI's collective selectors look only at whether an op commutes, and the SIMD ops do, so
// the library's algorithm stays the one it picks for the predefined op. Everywhere else `op` itself.
#if defined(ARSHIM_FLAVOR_SMPI)
MPI_Op charged_library_op(MPI_Op op, MPI_Datatype datatype);
#else
inline MPI_Op charged_library_op(MPI_Op op, MPI_Datatype) { return op; }
#endif

}  // namespace arshim
