// The shape of ARShim's start-up check (shim/core/handshake.h), MPI-free so that unit tests check it.
//
// Ranks of MPI_COMM_WORLD form a complete tree of fan-out kFanOut rooted at rank 0 (rank r's children are r*k+1 ..
// r*k+k). Each rank waits for its children's reports, adds itself and sends one report to its parent; rank 0 decides
// and the verdict goes back down the same edges. Every rank handles at most kFanOut + 1 messages each way and the
// check takes O(log p) message times (it was every rank to rank 0: p - 1 messages at rank 0, and a Testall over p
// requests per poll there).
//
// A report is a fixed array of words (one message, no size exchange): the sender's identity (version and flavor),
// how many ranks of its subtree did not answer and how many answered with another identity, and the lowest
// kListed ranks of each, for rank 0's warning.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace arshim::handshake_tree {

constexpr int kFanOut = 4;
constexpr int kListed = 8;

inline int parent(int rank) { return rank <= 0 ? -1 : (rank - 1) / kFanOut; }

// Children of `rank` among `size` ranks: [first_child, first_child + child_count).
inline int64_t first_child(int rank) { return int64_t{rank} * kFanOut + 1; }
inline int child_count(int rank, int size) {
    const int64_t first = first_child(rank);
    if (first >= size) return 0;
    return static_cast<int>(std::min<int64_t>(kFanOut, size - first));
}

// Edges from rank 0 down to `rank`.
inline int depth(int rank) {
    int d = 0;
    for (int r = rank; r > 0; r = parent(r)) ++d;
    return d;
}

// Edges from `rank` down to its deepest descendant (its leftmost chain is the deepest in a complete tree).
inline int height(int rank, int size) {
    int h = 0;
    for (int64_t r = rank; r * kFanOut + 1 < size; r = r * kFanOut + 1) ++h;
    return h;
}

// Timeouts, in seconds from the moment a rank enters the check, for `timeout_s` (ARSHIM_INIT_TIMEOUT). They only
// matter when some rank has no ARShim (or another one); then the job goes on without ARShim after them.
// A rank whose child has no ARShim gives up on it after timeout_s and reports it; each level above waits one step
// longer than the level below (the step covers how much later a rank may enter the check than its parent), so a
// report that says "missing" arrives before its parent gives up on the whole subtree.
inline double level_step_s(int timeout_s) { return std::max(2.0, timeout_s / 4.0); }
inline double children_wait_s(int rank, int size, int timeout_s) {
    return timeout_s + std::max(0, height(rank, size) - 1) * level_step_s(timeout_s);
}
// A rank waits for the verdict longer than rank 0 waits for its children, plus one step per edge between them,
// deeper ranks longest: a rank that gives up tells its children at once, before they give up themselves.
inline double verdict_wait_s(int rank, int size, int timeout_s) {
    return children_wait_s(0, size, timeout_s) + timeout_s + (depth(rank) + 1) * level_step_s(timeout_s) + 5;
}

// Word layout of a report.
enum Word : int { kIdentity = 0, kMissingCount, kForeignCount, kMissingList, kForeignList = kMissingList + kListed };
constexpr int kReportWords = kForeignList + kListed;
using Report = std::array<uint64_t, kReportWords>;

inline Report fresh_report(uint64_t identity) {
    Report report{};
    report[kIdentity] = identity;
    return report;
}

using Listed = std::array<uint64_t, kListed>;

namespace detail {
// Adds `total` ranks, of which the lowest min(total, kListed) are `ranks` (sorted), to the list at `list_word` whose
// count is at `count_word`, keeping the lowest kListed ranks in ascending order. `ranks` is a whole list, not a
// pointer and a count, so that every read of it is visibly within its kListed words (GCC 14's -Warray-bounds could
// not see that a single rank passed by address was read once only).
inline void add_ranks(Report& into, int count_word, int list_word, const Listed& ranks, uint64_t total) {
    const uint64_t have = std::min<uint64_t>(into[count_word], kListed);
    const uint64_t more = std::min<uint64_t>(total, kListed);
    std::array<uint64_t, 2 * kListed> merged{};
    std::merge(into.begin() + list_word, into.begin() + list_word + have, ranks.begin(), ranks.begin() + more,
               merged.begin());
    const uint64_t kept = std::min<uint64_t>(have + more, kListed);
    std::copy(merged.begin(), merged.begin() + kept, into.begin() + list_word);
    into[count_word] += total;
}
}  // namespace detail

inline void add_missing(Report& into, int rank) {
    detail::add_ranks(into, kMissingCount, kMissingList, Listed{static_cast<uint64_t>(rank)}, 1);
}
inline void add_foreign(Report& into, int rank) {
    detail::add_ranks(into, kForeignCount, kForeignList, Listed{static_cast<uint64_t>(rank)}, 1);
}

// Adds a child's report (its subtree's findings) to `into`. A report from a broken peer cannot overflow the lists
// (at most kListed ranks are read from it, sorted first) or the counts (capped far above any job size).
inline void merge(Report& into, const Report& child) {
    for (const auto [count_word, list_word] : {std::array<int, 2>{kMissingCount, kMissingList},
                                                std::array<int, 2>{kForeignCount, kForeignList}}) {
        Listed listed{};
        std::copy(child.begin() + list_word, child.begin() + list_word + kListed, listed.begin());
        const uint64_t total = std::min<uint64_t>(child[count_word], uint64_t{1} << 40);
        const uint64_t n = std::min<uint64_t>(total, kListed);
        for (uint64_t i = 1; i < n; ++i)  // insertion sort of at most kListed ranks
            for (uint64_t j = i; j > 0 && listed[j - 1] > listed[j]; --j) std::swap(listed[j - 1], listed[j]);
        detail::add_ranks(into, count_word, list_word, listed, total);
    }
}

}  // namespace arshim::handshake_tree
