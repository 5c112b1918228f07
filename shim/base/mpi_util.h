// Small helpers over PMPI_* shared by the shim's modules.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace arshim {

// `comm`'s error handler set to MPI_ERRORS_RETURN for the lifetime of this object, then restored: a communicator
// ARShim fails to make (MPICH out of context ids) must come back as an error code, not abort the job through the
// user's handler. Only around ARShim's own collective set-up calls on `comm` (another thread's point-to-point
// error on `comm` in that instant would be returned instead of handled).
class ErrorsReturn {
public:
    explicit ErrorsReturn(MPI_Comm comm) : comm_(comm) {
        if (PMPI_Comm_get_errhandler(comm_, &saved_) == MPI_SUCCESS) PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    }
    ~ErrorsReturn() {
        if (saved_ == MPI_ERRHANDLER_NULL) return;
        PMPI_Comm_set_errhandler(comm_, saved_);
        PMPI_Errhandler_free(&saved_);
    }
    ErrorsReturn(const ErrorsReturn&) = delete;
    ErrorsReturn& operator=(const ErrorsReturn&) = delete;

private:
    MPI_Comm comm_;
    MPI_Errhandler saved_ = MPI_ERRHANDLER_NULL;
};

// ARShim's own start-up broadcasts (settings, policy text, a communicator's node index) are each made twice. Under
// Open MPI 4.1.4's shared-memory transport the steady-state latency of small messages between two ranks depends on
// the parity of the messages each has sent the other before: a small MPI_Allreduce is markedly slower after an odd
// than after an even number of one-int broadcasts (also on another communicator; balanced exchanges such as an
// allreduce leave it unchanged; docs/stats.md "Overhead"). An application must not get slower because ARShim was
// loaded, or because one more ARSHIM_* variable was set, so every one-way exchange ARShim starts is repeated: the
// library sends the same messages twice, whatever algorithm it picks, and every pair's count of them stays even.
// The data are a few bytes to a few KiB, once per process or communicator.
int bcast_twice(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);

// Broadcasts a string of any length from `root` (every rank passes its own; non-roots receive root's), twice (above).
int bcast_string(std::string& text, int root, MPI_Comm comm);

// The same for a string that may be absent (`*present` is root's on return), in the same two broadcasts per pass.
int bcast_optional_string(std::string& text, bool* present, int root, MPI_Comm comm);

// ARShim's communicators are made the same way, twice, the first freed at once: Open MPI 4.1.4's MPI_Comm_split and
// MPI_Comm_split_type are not balanced per pair (at np 4 on one node, counted with its pml monitoring: ranks 1 and 3
// exchange 4 messages one way and 1 the other in either), which would change the parity above for the rest of the
// job. Once per communicator ARShim makes; `*out` as from the one call (MPI_COMM_NULL for MPI_UNDEFINED). A failure
// (MPICH: no context id left) returns its error code with `*out` MPI_COMM_NULL instead of calling the parent's error
// handler, which is the user's and may abort: every caller declines then. MPICH agrees a new communicator's context
// id over the whole parent, so the failure is the same on every rank of it.
int comm_split_twice(MPI_Comm comm, int color, int key, MPI_Comm* out);
int comm_split_type_twice(MPI_Comm comm, int split_type, int key, MPI_Comm* out);

// Whether every rank of `comm` passed the same `count` values (at most 8), in one allreduce: the MAX of each value
// and of its complement (~v), equal exactly when the values agree (independent of the library's unsigned MIN/MAX
// handling, pmodels/mpich#6083). Collective over `comm`; false also when the allreduce fails.
bool same_on_all_ranks(const long long* values, int count, MPI_Comm comm);

// The same allreduce, also answering whether `mine` holds on every rank. ok is false when the allreduce failed
// (then neither answer is given).
struct Agreement {
    bool ok = false;
    bool all = false;   // `mine` on every rank
    bool same = false;  // every rank passed the same values
};
Agreement agree_on_all_ranks(bool mine, const long long* values, int count, MPI_Comm comm);

// After ARShim made a communicator (`rc` its call's result, `*made` what it made): whether every rank of `comm` made
// its own. When not (no communicator id left somewhere), `*made` is freed and MPI_COMM_NULL on every rank, and the
// caller declines alike everywhere. Collective over `comm` (one allreduce).
bool made_on_all_ranks(int rc, MPI_Comm* made, MPI_Comm comm);

// A handle as an integer, for hashing and cache keys (MPICH handles are ints, Open MPI's are pointers).
template <typename Handle>
inline uintptr_t handle_bits(Handle handle) {
    if constexpr (std::is_pointer_v<Handle>)
        return reinterpret_cast<uintptr_t>(handle);
    else
        return static_cast<uintptr_t>(static_cast<unsigned int>(handle));
}

// ARSHIM_STRICT=1, after every rank of `comm` learned of a problem (verify mismatch, argument mismatch): give the
// launcher time to forward the lines, then abort the job.
[[noreturn]] void abort_after_logging(MPI_Comm comm);
// Collective over `comm`: every rank has logged what it had to say; waits until the launcher can have forwarded it
// (before something ends the job: an abort, a fatal error handler).
void wait_for_forwarding(MPI_Comm comm);

}  // namespace arshim
