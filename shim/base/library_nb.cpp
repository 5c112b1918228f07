// The library's non-blocking allreduce on a real machine: MPI_Iallreduce itself (library_nb.h).
#include "shim/base/library_nb.h"

namespace arshim {

int library_iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request* request) {
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

}  // namespace arshim
