// The library's non-blocking allreduce, as the paths call it (the pipelined path's segments, the multi-leader
// path's pipelined inter-node pieces), and the waits that complete its requests. On a real machine it is
// MPI_Iallreduce and the waits are MPI_Waitall / MPI_Waitany (library_nb.cpp, and the inlines below). The SMPI build
// has its own (library_nb_smpi.cpp): SimGrid 3.32's MPI_Iallreduce sends every rank's whole vector to every other
// rank, so there the allreduce is an explicit point-to-point schedule (recursive doubling, or Rabenseifner's
// reduce-scatter and allgather, as MPICH runs its non-blocking allreduce), which library_waitall and library_waitany
// advance, every schedule in flight at once, as a real library's progress does (docs/architecture.md "The SMPI build:
// where it differs").
//
// A request library_iallreduce returns is completed only by library_waitall or library_waitany (in the SMPI build
// nothing else advances its schedule).
#pragma once

#include <mpi.h>

namespace arshim {

int library_iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request* request);

#if defined(ARSHIM_FLAVOR_SMPI)
// Completes every request of `requests` (MPI_REQUEST_NULL ones are skipped); each becomes MPI_REQUEST_NULL.
int library_waitall(int count, MPI_Request* requests);
// Completes one request of `requests`: *index is its position (the lowest of those complete), MPI_UNDEFINED when
// every request is MPI_REQUEST_NULL.
int library_waitany(int count, MPI_Request* requests, int* index);
#else
inline int library_waitall(int count, MPI_Request* requests) {
    return PMPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
}
inline int library_waitany(int count, MPI_Request* requests, int* index) {
    return PMPI_Waitany(count, requests, index, MPI_STATUS_IGNORE);
}
#endif

}  // namespace arshim
