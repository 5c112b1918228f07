#include "shim/core/handshake.h"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "arshim_config.h"
#include "policy/routing_words.h"
#include "shim/core/runtime.h"

namespace arshim {

namespace {

// Tags on MPI_COMM_WORLD's point-to-point traffic (collectives never see them). Below 32767, the least MPI_TAG_UB.
constexpr int kHelloTag = 29311;
constexpr int kVerdictTag = 29312;

using Clock = std::chrono::steady_clock;

uint64_t identity() {
    return vocab::Fnv1a().text(ARSHIM_VERSION).text("/").text(mpi_flavor()).value();
}

// Polls until `done()` or `deadline`, yielding the CPU between polls (ranks may outnumber cores).
template <typename Done>
bool wait_until(Done&& done, Clock::time_point deadline) {
    for (int spins = 0;; ++spins) {
        if (done()) return true;
        if (Clock::now() >= deadline) return false;
        if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
        else std::this_thread::yield();
    }
}

// Cancels a request that did not complete; a send the library cannot cancel is left to complete on its own.
void abandon(MPI_Request* request) {
    if (*request == MPI_REQUEST_NULL) return;
    PMPI_Cancel(request);
    int done = 0;
    for (int i = 0; i < 1000 && !done; ++i) PMPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (!done) PMPI_Request_free(request);
}

std::string rank_list(const std::vector<int>& ranks, int world_size) {
    std::string out;
    const std::size_t shown = ranks.size() < 8 ? ranks.size() : 8;
    for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
    if (ranks.size() > shown) out += " and " + std::to_string(ranks.size() - shown) + " more";
    return out + " (" + std::to_string(ranks.size()) + " of " + std::to_string(world_size) + " ranks)";
}

// Buffers of requests that may outlive the call (a send the library cannot cancel) are static: the handshake runs
// once per process.
Handshake as_root(int world_size, int timeout_s) {
    const uint64_t mine = identity();
    static std::vector<uint64_t> hellos;
    hellos.assign(static_cast<std::size_t>(world_size), 0);
    std::vector<MPI_Request> requests(static_cast<std::size_t>(world_size), MPI_REQUEST_NULL);
    for (int r = 1; r < world_size; ++r)
        PMPI_Irecv(&hellos[r], 1, MPI_UINT64_T, r, kHelloTag, MPI_COMM_WORLD, &requests[r]);
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    wait_until(
        [&] {
            int all = 0;
            PMPI_Testall(world_size, requests.data(), &all, MPI_STATUSES_IGNORE);
            return all != 0;
        },
        deadline);
    std::vector<int> missing, foreign, answered;
    for (int r = 1; r < world_size; ++r) {
        int done = requests[r] == MPI_REQUEST_NULL;
        if (!done) PMPI_Test(&requests[r], &done, MPI_STATUS_IGNORE);
        if (!done) {
            abandon(&requests[r]);
            missing.push_back(r);
        } else {
            answered.push_back(r);
            if (hellos[r] != mine) foreign.push_back(r);
        }
    }
    Handshake result;
    result.all_loaded = missing.empty() && foreign.empty();
    if (!missing.empty())
        result.problem = "ARShim is not loaded on ranks " + rank_list(missing, world_size) + " (no answer within " +
                         std::to_string(timeout_s) + " s, ARSHIM_INIT_TIMEOUT)";
    if (!foreign.empty())
        result.problem += std::string(result.problem.empty() ? "" : "; ") + "ranks " + rank_list(foreign, world_size) +
                          " loaded another ARShim build than rank 0's " ARSHIM_VERSION;
    if (!result.all_loaded)
        result.problem += ": ARShim is disabled on every rank (every MPI_Allreduce goes to the MPI library); preload "
                          "the same libarshim on all ranks (arshim run does)";
    // Every rank that said hello waits for the verdict. Synchronous like the hello, so each pair exchanges the same
    // messages both ways (a hello and the verdict's acknowledgement one way, the verdict and the hello's the other:
    // shim/base/mpi_util.h says why the parity matters); a member that gave up meanwhile has cancelled its receive,
    // so the wait is bounded and what did not complete is cancelled.
    static uint64_t verdict;
    verdict = result.all_loaded ? 1 : 0;
    std::vector<MPI_Request> sends(answered.size(), MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < answered.size(); ++i)
        PMPI_Issend(&verdict, 1, MPI_UINT64_T, answered[i], kVerdictTag, MPI_COMM_WORLD, &sends[i]);
    const int pending = static_cast<int>(sends.size());
    wait_until(
        [&] {
            int all = 0;
            PMPI_Testall(pending, sends.data(), &all, MPI_STATUSES_IGNORE);
            return all != 0;
        },
        Clock::now() + std::chrono::seconds(timeout_s + 5));
    for (MPI_Request& send : sends) abandon(&send);
    return result;
}

Handshake as_member(int timeout_s) {
    static uint64_t mine, verdict;
    mine = identity();
    verdict = 0;
    MPI_Request hello = MPI_REQUEST_NULL, answer = MPI_REQUEST_NULL;
    // Synchronous: it completes only when rank 0 received it, so an unanswered hello can be cancelled.
    PMPI_Issend(&mine, 1, MPI_UINT64_T, 0, kHelloTag, MPI_COMM_WORLD, &hello);
    PMPI_Irecv(&verdict, 1, MPI_UINT64_T, 0, kVerdictTag, MPI_COMM_WORLD, &answer);
    const auto deadline = Clock::now() + std::chrono::seconds(2 * timeout_s + 5);
    const bool answered = wait_until(
        [&] {
            int done = 0;
            PMPI_Test(&answer, &done, MPI_STATUS_IGNORE);
            return done != 0;
        },
        deadline);
    Handshake result;
    if (answered) {
        PMPI_Wait(&hello, MPI_STATUS_IGNORE);  // rank 0 answered, so it received the hello
        result.all_loaded = verdict == 1;
        // Rank 0 names the ranks; the others stay quiet.
        return result;
    }
    abandon(&answer);
    abandon(&hello);
    result.all_loaded = false;
    result.problem = "rank 0 did not answer the ARShim start-up check within " + std::to_string(2 * timeout_s + 5) +
                     " s (ARShim not loaded there? ARSHIM_INIT_TIMEOUT): ARShim is disabled on this rank";
    return result;
}

}  // namespace

Handshake check_every_rank_loaded(int world_rank, int world_size, int timeout_s) {
    if (world_size <= 1) return {};
    return world_rank == 0 ? as_root(world_size, timeout_s) : as_member(timeout_s);
}

}  // namespace arshim
