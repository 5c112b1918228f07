// C entry points. Each only converts its arguments and forwards to the engine or the runtime (heaptrack model).
#include <mpi.h>

#include "shim/core/engine.h"
#include "shim/entry/export.h"
#include "shim/core/runtime.h"
#include "shim/stats/counters.h"

ARSHIM_EXPORT int MPI_Init(int* argc, char*** argv) {
    const int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) arshim::after_mpi_init();
    return rc;
}

ARSHIM_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
    const int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) arshim::after_mpi_init();
    return rc;
}

ARSHIM_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm) {
    return arshim::engine::allreduce(
        {sendbuf, recvbuf, count, datatype, op, comm, false, __builtin_return_address(0)});
}

#if MPI_VERSION >= 4
ARSHIM_EXPORT int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                                  MPI_Op op, MPI_Comm comm) {
    return arshim::engine::allreduce(
        {sendbuf, recvbuf, count, datatype, op, comm, true, __builtin_return_address(0)});
}
#endif

// mpiP convention: MPI_Pcontrol(0) pauses statistics collection (counters and call sites), any other level
// resumes it. Paused calls are still routed, and counted as "paused" in the log.
ARSHIM_EXPORT int MPI_Pcontrol(const int level, ...) {
    arshim::stats::set_enabled(level != 0);
    return PMPI_Pcontrol(level);
}
