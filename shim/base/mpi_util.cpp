#include "shim/base/mpi_util.h"

#include <chrono>
#include <cstdlib>
#include <thread>

namespace arshim {

namespace {

// One pass: the length (-1: absent) as 64 bits, then the text in pieces of at most 1 GiB, so no count is ever cast
// to a negative int (the policy reader also caps what rank 0 reads: ARSHIM_POLICY_MAX_BYTES).
int bcast_text_once(std::string& text, bool* present, int root, MPI_Comm comm) {
    long long length = *present ? static_cast<long long>(text.size()) : -1;
    int rc = PMPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm);
    if (rc != MPI_SUCCESS) return rc;
    if (length < -1) return MPI_ERR_COUNT;
    *present = length >= 0;
    text.resize(length > 0 ? static_cast<std::size_t>(length) : 0);
    constexpr long long kPiece = 1ll << 30;
    for (long long at = 0; at < length && rc == MPI_SUCCESS; at += kPiece) {
        const long long n = length - at < kPiece ? length - at : kPiece;
        rc = PMPI_Bcast(text.data() + at, static_cast<int>(n), MPI_CHAR, root, comm);
    }
    return rc;
}

// Runs `make` (which creates *out), frees what it made, runs it again: shim/base/mpi_util.h, comm_split_twice.
template <typename Make>
int make_comm_twice(MPI_Comm parent, Make make, MPI_Comm* out) {
    const ErrorsReturn errors_return(parent);
    *out = MPI_COMM_NULL;
    int rc = make();
    if (rc == MPI_SUCCESS) {
        if (*out != MPI_COMM_NULL) PMPI_Comm_free(out);
        rc = make();
    }
    if (rc != MPI_SUCCESS) *out = MPI_COMM_NULL;
    return rc;
}

}  // namespace

int bcast_twice(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    int rc = PMPI_Bcast(buffer, count, datatype, root, comm);
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(buffer, count, datatype, root, comm);
    return rc;
}

bool same_on_all_ranks(const long long* values, int count, MPI_Comm comm) {
    const Agreement agreed = agree_on_all_ranks(true, values, count, comm);
    return agreed.ok && agreed.same;
}

Agreement agree_on_all_ranks(bool mine, const long long* values, int count, MPI_Comm comm) {
    constexpr int kMax = 8;
    Agreement agreed;
    if (count < 0 || count > kMax) return agreed;
    // [values, ~values, 1 where `mine` does not hold]: one MAX answers all three questions.
    long long local[2 * kMax + 1] = {}, maxima[2 * kMax + 1] = {};
    for (int i = 0; i < count; ++i) local[i] = values[i], local[count + i] = ~values[i];
    local[2 * count] = mine ? 0 : 1;
    if (PMPI_Allreduce(local, maxima, 2 * count + 1, MPI_LONG_LONG, MPI_MAX, comm) != MPI_SUCCESS) return agreed;
    agreed.ok = true;
    agreed.all = maxima[2 * count] == 0;
    agreed.same = true;
    for (int i = 0; i < count; ++i)
        if (maxima[i] != ~maxima[count + i]) agreed.same = false;
    return agreed;
}

bool made_on_all_ranks(int rc, MPI_Comm* made, MPI_Comm comm) {
    const Agreement agreed = agree_on_all_ranks(rc == MPI_SUCCESS, nullptr, 0, comm);
    if (agreed.ok && agreed.all) return true;
    if (*made != MPI_COMM_NULL) PMPI_Comm_free(made);
    *made = MPI_COMM_NULL;
    return false;
}

int comm_split_twice(MPI_Comm comm, int color, int key, MPI_Comm* out) {
    return make_comm_twice(comm, [&] { return PMPI_Comm_split(comm, color, key, out); }, out);
}

int comm_split_type_twice(MPI_Comm comm, int split_type, int key, MPI_Comm* out) {
    return make_comm_twice(comm, [&] { return PMPI_Comm_split_type(comm, split_type, key, MPI_INFO_NULL, out); }, out);
}

int bcast_optional_string(std::string& text, bool* present, int root, MPI_Comm comm) {
    int rc = bcast_text_once(text, present, root, comm);
    if (rc == MPI_SUCCESS) rc = bcast_text_once(text, present, root, comm);  // the repeat: see bcast_twice
    return rc;
}

int bcast_string(std::string& text, int root, MPI_Comm comm) {
    bool present = true;
    return bcast_optional_string(text, &present, root, comm);
}

void wait_for_forwarding(MPI_Comm comm) {
    PMPI_Barrier(comm);
    // Hydra drops output it has not forwarded when a rank aborts (shim/core/runtime.cpp abort_if_any_problem).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

void abort_after_logging(MPI_Comm comm) {
    wait_for_forwarding(comm);
    PMPI_Abort(comm, 1);
    std::abort();
}

}  // namespace arshim
