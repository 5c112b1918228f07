// Fortran MPI_INIT / MPI_INIT_THREAD entry points, so that ARShim's collective set-up (settings broadcast from world
// rank 0, finalize hook) runs for Fortran programs too.
//
// Each wrapper calls the library's own Fortran routine (found with dlsym(RTLD_NEXT)), which may do Fortran-side
// set-up of its own, and then ARShim's set-up. Open MPI's Fortran init calls PMPI_Init directly, in every binding
// (mpif.h, `use mpi`, `use mpi_f08`); MPICH's mpif.h / `use mpi` init calls the C MPI_Init (already intercepted) but
// its `use mpi_f08` init calls PMPI_Init, so the MPICH library wraps only the f08 names. after_mpi_init() runs once,
// whichever route gets there first.
#include <mpi.h>

#include <dlfcn.h>

#include "shim/entry/export.h"
#include "shim/core/runtime.h"

namespace {

using InitFn = void (*)(MPI_Fint* ierr);
using InitThreadFn = void (*)(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr);

void finish(MPI_Fint* ierr) {
    int initialized = 0;
    PMPI_Initialized(&initialized);
    // `ierror` is OPTIONAL in mpi_f08: the real routine may have been called without it.
    if (initialized && (ierr == nullptr || *ierr == MPI_SUCCESS)) arshim::after_mpi_init();
}

void init(const char* name, MPI_Fint* ierr) {
    auto real = reinterpret_cast<InitFn>(dlsym(RTLD_NEXT, name));
    if (real != nullptr) {
        real(ierr);
    } else {  // no Fortran library below us under that name: do what it would
        int argc = 0;
        char** argv = nullptr;
        const int rc = PMPI_Init(&argc, &argv);
        if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
    }
    finish(ierr);
}

void init_thread(const char* name, MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
    auto real = reinterpret_cast<InitThreadFn>(dlsym(RTLD_NEXT, name));
    if (real != nullptr) {
        real(required, provided, ierr);
    } else {
        int argc = 0;
        char** argv = nullptr;
        int c_provided = 0;
        const int rc = PMPI_Init_thread(&argc, &argv, static_cast<int>(*required), &c_provided);
        if (provided != nullptr) *provided = static_cast<MPI_Fint>(c_provided);
        if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
    }
    finish(ierr);
}

}  // namespace

#define ARSHIM_FORTRAN_INIT(name) \
    ARSHIM_EXPORT void name(MPI_Fint* ierr) { init(#name, ierr); }
#define ARSHIM_FORTRAN_INIT_THREAD(name)                                             \
    ARSHIM_EXPORT void name(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) { \
        init_thread(#name, required, provided, ierr);                                \
    }

ARSHIM_FORTRAN_INIT(mpi_init_f08_)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread_f08_)

#if defined(ARSHIM_FLAVOR_OPENMPI)
ARSHIM_FORTRAN_INIT(mpi_init)
ARSHIM_FORTRAN_INIT(mpi_init_)
ARSHIM_FORTRAN_INIT(mpi_init__)
ARSHIM_FORTRAN_INIT(MPI_INIT)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread_)
ARSHIM_FORTRAN_INIT_THREAD(mpi_init_thread__)
ARSHIM_FORTRAN_INIT_THREAD(MPI_INIT_THREAD)
#endif
