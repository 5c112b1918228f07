#include "shim/core/handshake.h"

#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arshim_config.h"
#include "policy/routing_words.h"
#include "shim/core/handshake_tree.h"
#include "shim/core/handshake_wait.h"
#include "shim/core/runtime.h"

namespace arshim {

namespace {

namespace tree = handshake_tree;

// Tags on MPI_COMM_WORLD's point-to-point traffic (collectives never see them). Below 32767, the least MPI_TAG_UB.
// Not the tags of the check before the tree (29311, 29312: one word each way), so a rank of an older ARShim never
// matches a report of another size (a truncated receive is fatal under the default error handler); such a rank is
// reported as not loaded.
constexpr int kReportTag = 29313;
constexpr int kVerdictTag = 29314;

uint64_t identity() {
    return vocab::Fnv1a().text(ARSHIM_VERSION).text("/").text(mpi_flavor()).value();
}

// Cancels a request that did not complete; a send the library cannot cancel is left to complete on its own.
void abandon(MPI_Request* request) {
    if (*request == MPI_REQUEST_NULL) return;
    PMPI_Cancel(request);
    int done = 0;
    for (int i = 0; i < 1000 && !done; ++i) PMPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (!done) PMPI_Request_free(request);
}

// "ranks 3, 9 and 5 more (7 of 64 ranks)" from a report's count and listed ranks.
std::string rank_list(const tree::Report& report, int count_word, int list_word, int world_size) {
    const uint64_t total = report[count_word];
    const uint64_t shown = total < tree::kListed ? total : tree::kListed;
    std::string out = "ranks ";
    for (uint64_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(report[list_word + i]);
    if (total > shown) out += " and " + std::to_string(total - shown) + " more";
    return out + " (" + std::to_string(total) + " of " + std::to_string(world_size) + " ranks)";
}

// The listed ranks of a report's list (the lowest kListed of its count).
std::vector<int> listed_ranks(const tree::Report& report, int count_word, int list_word) {
    std::vector<int> ranks;
    for (uint64_t i = 0; i < report[count_word] && i < tree::kListed; ++i)
        ranks.push_back(static_cast<int>(report[list_word + i]));
    return ranks;
}

// Rank 0's verdict and warning from the whole job's report, and the same as data.
Handshake decide(const tree::Report& all, int world_size, int timeout_s) {
    Handshake result;
    result.all_loaded = all[tree::kMissingCount] == 0 && all[tree::kForeignCount] == 0;
    result.found.knows_ranks = true;
    result.found.without_arshim = listed_ranks(all, tree::kMissingCount, tree::kMissingList);
    result.found.without_arshim_count = all[tree::kMissingCount];
    result.found.other_build = listed_ranks(all, tree::kForeignCount, tree::kForeignList);
    result.found.other_build_count = all[tree::kForeignCount];
    if (all[tree::kMissingCount] != 0)
        result.problem = "ARShim is not loaded on " + rank_list(all, tree::kMissingCount, tree::kMissingList, world_size) +
                         " (no answer within " + std::to_string(timeout_s) + " s, ARSHIM_INIT_TIMEOUT)";
    if (all[tree::kForeignCount] != 0)
        result.problem += std::string(result.problem.empty() ? "" : "; ") +
                          rank_list(all, tree::kForeignCount, tree::kForeignList, world_size) +
                          " loaded another ARShim build than rank 0's " ARSHIM_VERSION;
    if (!result.all_loaded)
        result.problem += ": ARShim is disabled on every rank (every MPI_Allreduce goes to the MPI library); preload "
                          "the same libarshim on all ranks (arshim run does)";
    return result;
}

}  // namespace

// Buffers of requests that may outlive the call (a send the library cannot cancel) are static: the check runs once
// per process. Every message is synchronous (Issend), so each edge of the tree carries the same messages both ways
// (a report and the verdict's acknowledgement up, the verdict and the report's acknowledgement down: the parity of
// shim/base/mpi_util.h), and a message that was not received can be cancelled.
Handshake check_every_rank_loaded(int world_rank, int world_size, int timeout_s) {
    Handshake result;
    result.found.checked = true;
    result.found.timeout_s = timeout_s;
    result.found.knows_ranks = world_rank == 0;
    if (world_size <= 1) return result;
    const double start = handshake_wait::now_s();
    const int children = tree::child_count(world_rank, world_size);
    const int first = static_cast<int>(tree::first_child(world_rank));
    static std::array<tree::Report, tree::kFanOut> child_reports;
    static tree::Report report;
    static uint64_t verdict;
    std::array<MPI_Request, tree::kFanOut> requests;
    requests.fill(MPI_REQUEST_NULL);

    // Up: the children's reports, then this rank's to its parent.
    for (int c = 0; c < children; ++c)
        PMPI_Irecv(child_reports[c].data(), tree::kReportWords, MPI_UINT64_T, first + c, kReportTag, MPI_COMM_WORLD,
                   &requests[c]);
    handshake_wait::all_complete(children, requests.data(),
                                 start + tree::children_wait_s(world_rank, world_size, timeout_s));
    report = tree::fresh_report(identity());
    std::array<bool, tree::kFanOut> answered{};
    for (int c = 0; c < children; ++c) {
        int done = requests[c] == MPI_REQUEST_NULL;
        if (!done) PMPI_Test(&requests[c], &done, MPI_STATUS_IGNORE);
        if (!done) {
            abandon(&requests[c]);
            tree::add_missing(report, first + c);
            continue;
        }
        answered[c] = true;
        if (child_reports[c][tree::kIdentity] != report[tree::kIdentity]) tree::add_foreign(report, first + c);
        tree::merge(report, child_reports[c]);
    }

    if (world_rank == 0) {
        const stats::StartupCheck asked = result.found;
        result = decide(report, world_size, timeout_s);
        result.found.checked = asked.checked;
        result.found.timeout_s = asked.timeout_s;
        verdict = result.all_loaded ? 1 : 0;
    } else {
        const int parent = tree::parent(world_rank);
        result.found.parent = parent;
        MPI_Request up[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // the verdict first: it is what ends the wait
        verdict = 0;
        PMPI_Irecv(&verdict, 1, MPI_UINT64_T, parent, kVerdictTag, MPI_COMM_WORLD, &up[0]);
        PMPI_Issend(report.data(), tree::kReportWords, MPI_UINT64_T, parent, kReportTag, MPI_COMM_WORLD, &up[1]);
        const double wait_s = tree::verdict_wait_s(world_rank, world_size, timeout_s);
        if (handshake_wait::all_complete(1, &up[0], start + wait_s)) {
            PMPI_Wait(&up[1], MPI_STATUS_IGNORE);  // the parent answered, so it received the report
            result.all_loaded = verdict == 1;      // rank 0 names the ranks; the others stay quiet
        } else {
            abandon(&up[0]);
            abandon(&up[1]);
            verdict = 0;
            result.all_loaded = false;
            result.found.parent_answered = false;
            result.problem = "rank " + std::to_string(parent) + " (this rank's parent in the ARShim start-up check) " +
                             "did not answer within " + std::to_string(static_cast<int>(wait_s)) +
                             " s (ARShim not loaded there? ARSHIM_INIT_TIMEOUT): ARShim is disabled on this rank";
        }
    }

    // Down: the verdict to every child that reported (one that gave up meanwhile has cancelled its receive, so the
    // wait is bounded and what did not complete is cancelled). A rank that gave up on its parent passes "disabled"
    // on at once, so only the children of a rank without ARShim wait out their timeout.
    std::array<MPI_Request, tree::kFanOut> down;
    down.fill(MPI_REQUEST_NULL);
    for (int c = 0; c < children; ++c)
        if (answered[c])
            PMPI_Issend(&verdict, 1, MPI_UINT64_T, first + c, kVerdictTag, MPI_COMM_WORLD, &down[c]);
    handshake_wait::all_complete(children, down.data(), handshake_wait::now_s() + timeout_s + 5);
    for (int c = 0; c < children; ++c) abandon(&down[c]);
    result.found.all_loaded = result.all_loaded;
    return result;
}

}  // namespace arshim
