#include "shim/core/mpi_util.h"

namespace arshim {

int bcast_string(std::string& text, int root, MPI_Comm comm) {
    long long length = static_cast<long long>(text.size());
    int rc = PMPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm);
    if (rc != MPI_SUCCESS) return rc;
    text.resize(static_cast<std::size_t>(length));
    // Strings here are settings and policy files (kilobytes), far below INT_MAX.
    if (length > 0) rc = PMPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, comm);
    return rc;
}

}  // namespace arshim
