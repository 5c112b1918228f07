#include "shim/core/mpi_util.h"

namespace arshim {

int bcast_string(std::string& text, int root, MPI_Comm comm) {
    long long length = static_cast<long long>(text.size());
    int rc = PMPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (length < 0) return MPI_ERR_COUNT;
    text.resize(static_cast<std::size_t>(length));
    // The length travels as 64 bits and the text in pieces of at most 1 GiB, so no count is ever cast to a
    // negative int (the policy reader also caps what rank 0 reads: ARSHIM_POLICY_MAX_BYTES).
    constexpr long long kPiece = 1ll << 30;
    for (long long at = 0; at < length && rc == MPI_SUCCESS; at += kPiece) {
        const long long n = length - at < kPiece ? length - at : kPiece;
        rc = PMPI_Bcast(text.data() + at, static_cast<int>(n), MPI_CHAR, root, comm);
    }
    return rc;
}

}  // namespace arshim
