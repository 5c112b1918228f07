// Fortran entry points, built into the Open MPI library only.
//
// Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_Allreduce / PMPI_Init directly, so a C
// MPI_Allreduce wrapper never sees Fortran calls: ARShim must export the Fortran symbols themselves. MPICH's Fortran
// bindings call the C MPI_Allreduce, so the MPICH library must not define these names (each call would be
// intercepted twice); test/mpi checks both facts.
#include <mpi.h>

#include "shim/core/engine.h"
#include "shim/entry/export.h"

// Open MPI's Fortran MPI_IN_PLACE / MPI_BOTTOM are the addresses of common blocks; which mangling exists depends on
// the Fortran compiler Open MPI was built with, so all are weak references (nullptr when absent).
extern "C" {
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
}

namespace {

bool is_in_place(const void* buffer) {
    return buffer != nullptr && (buffer == &mpi_fortran_in_place || buffer == &mpi_fortran_in_place_ ||
                                 buffer == &mpi_fortran_in_place__ || buffer == &MPI_FORTRAN_IN_PLACE);
}

bool is_bottom(const void* buffer) {
    return buffer != nullptr && (buffer == &mpi_fortran_bottom || buffer == &mpi_fortran_bottom_ ||
                                 buffer == &mpi_fortran_bottom__ || buffer == &MPI_FORTRAN_BOTTOM);
}

// Fortran sentinel addresses to their C values. Getting this wrong silently corrupts results (mpiP #46,
// MPItrampoline #53).
void* c_buffer(void* buffer) {
    if (is_in_place(buffer)) return MPI_IN_PLACE;
    if (is_bottom(buffer)) return MPI_BOTTOM;
    return buffer;
}

// `caller`: the exported symbol's return address, in the user's Fortran code (Open MPI's bindings are these
// entry points themselves, so no binding frame sits in between).
void fortran_allreduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                       const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr, const void* caller) {
    const int rc = arshim::engine::allreduce({c_buffer(sendbuf), c_buffer(recvbuf), *count,
                                              PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm),
                                              false, caller});
    if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);  // `ierror` is OPTIONAL in mpi_f08
}

}  // namespace

#define ARSHIM_FORTRAN_ALLREDUCE(name)                                                                            \
    ARSHIM_EXPORT void name(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op,      \
                            MPI_Fint* comm, MPI_Fint* ierr) {                                                     \
        fortran_allreduce(sendbuf, recvbuf, count, datatype, op, comm, ierr, __builtin_return_address(0));       \
    }

ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce_)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce__)
ARSHIM_FORTRAN_ALLREDUCE(MPI_ALLREDUCE)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce_f08_)  // `use mpi_f08` (libmpi_usempif08: buffers passed by address)
