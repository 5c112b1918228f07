#include "policy/tune_candidates.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace arshim::policy::tune {

namespace {

// One row of some path's candidates (its spec's candidate_rows), as the stages call it.
struct Row {
    CandidateInfo info;
    int place;
    bool (*applies)(const Decision& chosen, const KeyFacts& facts);
    Decision (*make)(const Decision& chosen, const KeyFacts& facts);
};

template <typename P>
Chosen<P> chosen_as(const Decision& chosen) {
    return {std::get_if<P>(&chosen.params), traits_of(chosen.path())};
}

// Row `i` of path P's rows, with the decision around its parameters: the choice itself changed (a variant), or a new
// decision with the choice's kernel (the op handed to MPI is the policy's choice too).
template <typename P, std::size_t i>
Row row_of() {
    const auto& r = candidate_rows(static_cast<const P*>(nullptr))[i];
    return {{r.name, r.guard, r.online}, r.place,
            [](const Decision& chosen, const KeyFacts& f) {
                return candidate_rows(static_cast<const P*>(nullptr))[i].applies(chosen_as<P>(chosen), f);
            },
            [](const Decision& chosen, const KeyFacts& f) {
                const auto& row = candidate_rows(static_cast<const P*>(nullptr))[i];
                Decision d;
                if (row.variant) d = chosen;
                else d.kernel = chosen.kernel;
                d.params = row.make(chosen_as<P>(chosen), f);
                return d;
            }};
}

template <typename P, std::size_t... i>
void add_rows(std::vector<Row>& out, std::index_sequence<i...>) {
    (out.push_back(row_of<P, i>()), ...);
}

// Every path's rows, in their places.
const std::vector<Row>& rows() {
    static const std::vector<Row> all = [] {
        std::vector<Row> out;
#define ARSHIM_PATH_CANDIDATES(name, P)                                                                     \
    add_rows<P>(out, std::make_index_sequence<std::tuple_size_v<std::decay_t<decltype(candidate_rows(        \
                         static_cast<const P*>(nullptr)))>>>{});
        ARSHIM_PATH_ROWS(ARSHIM_PATH_CANDIDATES)
#undef ARSHIM_PATH_CANDIDATES
        std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.place < b.place; });
        return out;
    }();
    return all;
}

// Adds `d` unless an equal choice is there already (or, for an order-sensitive key under guard, unless it folds in
// another order than the policy's choice), after its path brought it to the key's layout (fit_to_layout).
void add(Decision d, const KeyFacts& f, bool same_bits_only, Decision (&out)[kMaxCandidates], int& n) {
    if (n == kMaxCandidates) return;
    std::visit(
        [&](auto& p) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) fit_to_layout(p, f);
        },
        d.params);
    if (same_bits_only && n > 0 && !same_fold_order(out[0], d)) return;
    for (int i = 0; i < n; ++i)
        if (same_action(out[i], d)) return;
    out[n++] = d;
}

}  // namespace

bool same_fold_order(const Decision& a, const Decision& b) {
    if (same_action(a, b)) return true;
    return traits_of(a.path()).sums_in_rank_order && traits_of(b.path()).sums_in_rank_order;
}

int first_stage(const Decision& chosen, const KeyFacts& facts, Mode mode, Decision (&out)[kMaxCandidates]) {
    int n = 0;
    const bool same_bits_only = mode == Mode::guard && facts.order_sensitive;
    add(chosen, facts, false, out, n);
    for (const Row& row : rows()) {
        if (!(mode == Mode::online ? row.info.online : row.info.guard)) continue;
        if (row.applies(chosen, facts)) add(row.make(chosen, facts), facts, same_bits_only, out, n);
    }
    return n;
}

int second_stage(const Decision& winner, const KeyFacts& facts, Decision (&out)[kMaxCandidates]) {
    int n = 0;
    add(winner, facts, false, out, n);
    std::visit(
        [&](const auto& p) {
            using P = std::decay_t<decltype(p)>;
            if constexpr (!std::is_same_v<P, std::monostate>) {
                P neighbours[kMaxNeighbours];
                const int count = tune_neighbours(p, facts, neighbours);
                for (int i = 0; i < count; ++i) {
                    Decision d = winner;
                    d.params = neighbours[i];
                    add(d, facts, false, out, n);
                }
            }
        },
        winner.params);
    return n;
}

const CandidateInfo* candidate_rows(int* count) {
    static const std::vector<CandidateInfo> infos = [] {
        std::vector<CandidateInfo> out;
        for (const Row& row : rows()) out.push_back(row.info);
        return out;
    }();
    *count = static_cast<int>(infos.size());
    return infos.data();
}

}  // namespace arshim::policy::tune
