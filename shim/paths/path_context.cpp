#include "shim/paths/path_context.h"

#include <atomic>

#include "shim/base/log.h"
#include "shim/base/mpi_util.h"

namespace arshim {

namespace {
std::atomic<int64_t> g_admitted{0};  // communicators admitted by PathContext::admit() and not released
}  // namespace

MPI_Comm PathContext::node_communicator() {
    if (node_comm_ == MPI_COMM_NULL && !node_comm_failed_) {
        // Same members and order as a split by type: the node's ranks in comm rank order.
        const int rc = comm_split_twice(comm, node_index, rank, &node_comm_);  // twice: shim/base/mpi_util.h
        // Agreed: every rank gets MPI_COMM_NULL alike when one could not make it (no communicator id left).
        node_comm_failed_ = !made_on_all_ranks(rc, &node_comm_, comm);
    }
    return node_comm_;
}

bool PathContext::admit(const long long* values, int count, bool* same) {
    if (admission_ != Admission::undecided) {
        const bool admitted = admission_ == Admission::admitted;
        if (same != nullptr) *same = admitted && same_on_all_ranks(values, count, comm);
        return admitted;
    }
    // Room is counted per process; threads admitting at once may exceed the limit by their number (a soft bound).
    const int64_t limit = settings->max_comms;
    const bool room = g_admitted.load(std::memory_order_relaxed) < limit;
    const Agreement agreed = agree_on_all_ranks(room, values, count, comm);
    if (same != nullptr) *same = agreed.ok && agreed.same;
    if (!agreed.ok || !agreed.all) {
        admission_ = Admission::refused;
        // Once per process, from a rank that has no room and is rank 0 of the world or of this communicator (not
        // from every rank of a large job).
        if (agreed.ok && !room && (rank == 0 || log::rank() == 0) && log::first_time("comm-limit"))
            log::warn("{} communicators already hold ARShim's node windows and communicators in this process "
                      "(ARSHIM_MAX_COMMS={}): allreduce calls on further communicators run native, counted as "
                      "comm_limit; raise ARSHIM_MAX_COMMS if the MPI library has communicator ids to spare",
                      g_admitted.load(std::memory_order_relaxed), limit);
        return false;
    }
    admission_ = Admission::admitted;
    g_admitted.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void PathContext::release_paths() {
    if (released_) return;
    released_ = true;
    // Reverse slot order: a path may use the state of an earlier slot (sharp uses the node window).
    for (std::size_t i = static_cast<std::size_t>(PathSlot::count); i-- > 0;) slots_[i].reset();
    if (node_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&node_comm_);
    node_comm_ = MPI_COMM_NULL;
    if (admission_ == Admission::admitted) g_admitted.fetch_sub(1, std::memory_order_relaxed);
}

PathContext::~PathContext() { release_paths(); }

}  // namespace arshim
