// A test-only MPI (issue 55 item 4): the PMPI_* functions the shim calls, of the MPICH ABI (integer handles, MPICH's
// mpi.h), for unit tests that link the shim's core without an MPI library or mpirun. A world of a few ranks is a few
// processes forked by run() (the shim keeps per-process state, so ranks cannot be threads); they talk through one
// shared anonymous mapping made before the fork: every collective is an exchange of each rank's bytes through its
// slot of the communicator (then every rank reduces, in rank order, the same bytes: the same bits on every rank),
// point-to-point messages go through one ring per (sender, receiver) pair, eagerly. Non-blocking collectives
// complete when posted (every rank posts them in the same order, as MPI requires). Shared memory the shim makes
// itself (shm_open) is real: the ranks are processes of one machine, one node (ARSHIM_VIRTUAL_PPN splits it).
//
// What it does not do: intercommunicators, attribute copy functions (MPI_Comm_dup copies no attribute), derived
// datatypes other than contiguous and vector (and reductions only over contiguous layouts), more than kMaxRanks
// ranks. Whatever it cannot do ends the rank with a line saying so (never a wrong answer).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fake_mpi {

constexpr int kMaxRanks = 8;

// What a rank found wrong, sent back to the test process (a forked rank cannot use Catch2's assertions).
class Checks {
public:
    explicit Checks(int rank) : rank_(rank) {}
    // Records `what` unless `ok`; returns ok.
    bool check(bool ok, const std::string& what);
    template <typename A, typename B>
    bool equal(const A& got, const B& want, const std::string& what) {
        return check(got == want, what + ": got " + std::to_string(got) + ", want " + std::to_string(want));
    }
    void note(const std::string& line) { notes_ += line + "\n"; }  // returned as Outcome::notes
    int rank() const { return rank_; }
    const std::string& failures() const { return failures_; }
    const std::string& notes() const { return notes_; }
    int failed() const { return failed_; }

private:
    int rank_;
    int failed_ = 0;
    std::string failures_, notes_;
};

struct Outcome {
    int exit_status = -1;     // the rank's exit status (0: its body returned); -1: killed (timeout) or a signal
    bool timed_out = false;
    std::string failures;     // Checks::check lines that failed ("" when none)
    std::string notes;        // Checks::note lines
};

// Runs body(rank, checks) in `ranks` forked processes, a fake MPI world of that size, with the environment `env`
// (every inherited ARSHIM_* variable removed first); returns when all have ended, or kills them after timeout_s.
// The body calls MPI_Init (the shim's entry point) and MPI_Finalize itself, or neither.
using Body = std::function<void(int rank, Checks& checks)>;
std::vector<Outcome> run(int ranks, const std::map<std::string, std::string>& env, const Body& body,
                         double timeout_s = 60);

// One line per rank that failed, exited with an error or timed out ("" when every rank passed).
std::string summary(const std::vector<Outcome>& outcomes);

// Counters of the fake library in this rank, for tests that check what the shim asked of MPI.
struct Calls {
    long allreduce = 0;      // PMPI_Allreduce and PMPI_Allreduce_c
    long iallreduce = 0;
    long user_op_calls = 0;  // user-defined op functions the library ran (e.g. ARShim's SIMD ops)
    long comms_created = 0;
    long sends = 0;
};
const Calls& calls();

}  // namespace fake_mpi
