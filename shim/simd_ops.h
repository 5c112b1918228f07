// ARShim's SIMD kernels registered as MPI ops (MPI_Op_create, commute = 1), one per predefined op. The function
// of each dispatches on the datatype handle to the active kernel table.
#pragma once

#include <mpi.h>

namespace arshim {

void create_simd_ops();           // once, after MPI init and build_type_map()
void free_simd_ops();             // at finalize
// The ARShim op standing for predefined `op`, or MPI_OP_NULL when there is none (user op, unsupported).
// Contract: use the returned op only with a datatype for which kernel_supports(op, datatype) is true. An MPI user
// function cannot hand an element type it does not know back to the library, so the op's function reports any
// other datatype as an internal error and aborts (shim/simd_ops.cpp).
MPI_Op simd_op_for(MPI_Op op);

}  // namespace arshim
