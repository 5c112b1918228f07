// Mapping of MPI handles to ARShim kernel types and ops. Built once at init (build_type_map) so the per-call
// lookups are a few loads, with no allocation and no lock.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "kernels/kernels.h"

namespace arshim {

struct TypeInfo {
    bool predefined = false;      // a named (predefined) datatype ARShim knows
    kernels::Type type{};         // valid when predefined
    uint32_t size = 0;            // bytes per element
    vocab::DtypeClass dclass = vocab::DtypeClass::other;  // the policy's class ("float", "int", "other")
};

// Fills the tables; call once after MPI is initialized (MPI_Type_size etc. are needed for MPI_LONG, MPI_AINT,
// Fortran types).
void build_type_map();

// Info about a datatype handle; predefined == false for derived or unknown types.
TypeInfo type_info(MPI_Datatype datatype);

// The kernel op for a predefined MPI op; false for user-defined ops, MPI_REPLACE, MPI_NO_OP.
bool kernel_op(MPI_Op op, kernels::Op* out);

// True when the MPI standard allows `op` on `datatype` AND ARShim's kernels implement it.
bool kernel_supports(MPI_Op op, MPI_Datatype datatype);

// Everything the engine needs to know about a (datatype, op) pair, from one lookup in each table. Depends only on
// the handles, so it is identical on every rank; contexts memoize it (CommContext::call_class).
struct CallClass {
    TypeInfo type;                // type.predefined == false: a derived (or unknown) datatype
    kernels::Op kop{};            // valid when has_kernel_op
    bool has_kernel_op = false;   // a predefined reduction ARShim's kernels compute
    bool user_op = false;         // not a predefined op (MPI_Op_create)
    bool supported = false;       // has_kernel_op and the standard allows it on this datatype (kernel_supports)
    int library_bug = -1;         // index of the known library bug this (datatype, op) hits (policy/library_bugs.h)
};
CallClass classify(MPI_Datatype datatype, MPI_Op op);

// Marks the predefined datatype `datatype_name` ("MPI_UINT8_T") as computed wrong by the library for `ops` (bit
// per kernels::Op), entry `entry` of policy::library_bugs(); after build_type_map(). False when this MPI has no such
// datatype.
bool mark_library_bug(const char* datatype_name, uint32_t ops, int entry);

const char* datatype_name(MPI_Datatype datatype);  // "MPI_INT", ... or "derived"
const char* mpi_op_name(MPI_Op op);                // "MPI_SUM", ... or "user"

}  // namespace arshim
