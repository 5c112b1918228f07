// MPI_Finalize in the SMPI build (SimGrid's simulated MPI) only: ARShim's finalize report runs here, before
// PMPI_Finalize. Under SMPI the MPI_COMM_SELF delete callback that runs it on a real MPI fires only after the rank is
// marked finalized, when every MPI call (the report's reductions) fails.
#include <mpi.h>

#include "shim/core/runtime.h"
#include "shim/entry/export.h"

ARSHIM_EXPORT int MPI_Finalize() {
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) arshim::finalize_now();
    return PMPI_Finalize();
}
