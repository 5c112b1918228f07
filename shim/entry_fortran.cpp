// Fortran entry points, built into the Open MPI library only.
//
// Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_Allreduce / PMPI_Init directly, so a C
// MPI_Allreduce wrapper never sees Fortran calls: ARShim must export the Fortran symbols themselves. MPICH's Fortran
// bindings call the C MPI_Allreduce, so the MPICH library must not define these names (each call would be
// intercepted twice); test/mpi checks both facts.
#include <mpi.h>

#include "shim/engine.h"
#include "shim/export.h"
#include "shim/runtime.h"

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

void fortran_allreduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                       const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
    const int rc = arshim::engine::allreduce({c_buffer(sendbuf), c_buffer(recvbuf), *count,
                                              PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm),
                                              false});
    if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);  // `ierror` is OPTIONAL in mpi_f08
}

void fortran_init(MPI_Fint* ierr) {
    int argc = 0;
    char** argv = nullptr;
    const int rc = PMPI_Init(&argc, &argv);
    if (rc == MPI_SUCCESS) arshim::after_mpi_init();
    if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
}

void fortran_init_thread(const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
    int argc = 0;
    char** argv = nullptr;
    int c_provided = 0;
    const int rc = PMPI_Init_thread(&argc, &argv, static_cast<int>(*required), &c_provided);
    if (rc == MPI_SUCCESS) arshim::after_mpi_init();
    if (provided != nullptr) *provided = static_cast<MPI_Fint>(c_provided);
    if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
}

}  // namespace

#define ARSHIM_FORTRAN_ALLREDUCE(name)                                                                            \
    ARSHIM_EXPORT void name(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op,      \
                            MPI_Fint* comm, MPI_Fint* ierr) {                                                     \
        fortran_allreduce(sendbuf, recvbuf, count, datatype, op, comm, ierr);                                     \
    }
#define ARSHIM_FORTRAN_INIT(name) \
    ARSHIM_EXPORT void name(MPI_Fint* ierr) { fortran_init(ierr); }
#define ARSHIM_FORTRAN_INIT_THREAD(name)                                             \
    ARSHIM_EXPORT void name(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) { \
        fortran_init_thread(required, provided, ierr);                               \
    }

ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce_)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce__)
ARSHIM_FORTRAN_ALLREDUCE(MPI_ALLREDUCE)
ARSHIM_FORTRAN_ALLREDUCE(mpi_allreduce_f08_)  // `use mpi_f08` (libmpi_usempif08: buffers passed by address)

ARSHIM_FORTRAN_INIT(mpi_init)
ARSHIM_FORTRAN_INIT(mpi_init_)
ARSHIM_FORTRAN_INIT(mpi_init__)
ARSHIM_FORTRAN_INIT(MPI_INIT)
ARSHIM_FORTRAN_INIT(mpi_init_f08_)

ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread_)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread__)
ARSHIM_FORTRAN_INIT_THREAD(MPI_INIT_THREAD)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread_f08_)
