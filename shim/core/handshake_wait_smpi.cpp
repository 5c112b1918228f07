// The start-up check's waits in the SMPI build (SimGrid's simulated MPI), compiled instead of handshake_wait.cpp
// (docs/architecture.md "The SMPI build: where it differs"). The check itself is the real one (its messages and
// their simulated cost too); only its timeouts are gone: every rank of a simulation has ARShim linked in.
#include "shim/core/handshake_wait.h"

namespace arshim::handshake_wait {

double now_s() { return PMPI_Wtime(); }

bool all_complete(int count, MPI_Request* requests, double /*deadline_s*/) {
    return PMPI_Waitall(count, requests, MPI_STATUSES_IGNORE) == MPI_SUCCESS;
}

}  // namespace arshim::handshake_wait
