// The library's non-blocking allreduce, as the paths call it (the pipelined path's segments, the multi-leader
// path's pipelined inter-node pieces). On a real machine it is MPI_Iallreduce (library_nb.cpp). The SMPI build has
// its own (library_nb_smpi.cpp): SimGrid 3.32's MPI_Iallreduce follows none of the collective selectors' algorithms
// and took 3-5x its blocking allreduce, so there the library's blocking allreduce under the selector stands in for
// it (docs/architecture.md "The SMPI build: where it differs").
#pragma once

#include <mpi.h>

namespace arshim {

int library_iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request* request);

}  // namespace arshim
