#include "policy/tune_candidates.h"

#include <algorithm>
#include <iterator>

namespace arshim::policy::tune {

namespace {

// A decision on another path with the chosen decision's kernel (the op handed to MPI is the policy's choice too).
Decision on_path(const Decision& chosen, Path path) {
    Decision d = decision_for(path);
    d.kernel = chosen.kernel;
    return d;
}

uint64_t pow2_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v && p < (uint64_t{1} << 40)) p <<= 1;
    return p;
}

// Guard's small segments across nodes, per library: the smallest segments each library's MPI_Iallreduce still
// reduce-scatters, 256 KiB in flight (docs/cluster.md "Small segments across nodes" has the measurements).
struct SmallSegments {
    uint64_t bytes;
    uint32_t window;
};
constexpr SmallSegments kSmallSegments[] = {{32 * 1024, 8} /* mpich */, {64 * 1024, 4} /* openmpi */};
static_assert(std::size(kSmallSegments) == kFlavorCount, "one row per flavor");
constexpr uint64_t kSmallSegmentsFromBytes = uint64_t{1} << 20;

// One kind of candidate: when it applies to the policy's choice, and what it is.
struct Row {
    CandidateInfo info;
    bool (*applies)(const Decision& chosen, const KeyFacts& facts);
    Decision (*make)(const Decision& chosen, const KeyFacts& facts);
};

const Row kRows[] = {
    {{"the library's allreduce", true, true},
     [](const Decision&, const KeyFacts&) { return true; },
     [](const Decision& chosen, const KeyFacts&) { return on_path(chosen, Path::native); }},
    // How many leaders pay depends on the links, which no rule sees (docs/cluster.md "The MTU", docs/tuning.md).
    {{"half the policy's leaders, across nodes", true, false},
     [](const Decision& chosen, const KeyFacts& f) {
         return chosen.path() == Path::multileader && f.nodes > 1 &&
                std::min<int>(static_cast<int>(chosen.get<MultileaderParams>().leaders), f.ppn_min) >= 2;
     },
     [](const Decision& chosen, const KeyFacts& f) {
         Decision d = chosen;
         auto& leaders = d.get<MultileaderParams>().leaders;
         leaders = static_cast<uint32_t>(std::min<int>(static_cast<int>(leaders), f.ppn_min)) / 2;
         return d;
     }},
    // How small the pieces in flight across nodes should be depends on the links too (docs/cluster.md "Small segments
    // across nodes").
    {{"each library's small segments, across nodes, from 1 MiB", true, false},
     [](const Decision& chosen, const KeyFacts& f) {
         return (chosen.path() == Path::pipelined || chosen.path() == Path::multileader) && f.nodes > 1 &&
                f.bytes >= kSmallSegmentsFromBytes;
     },
     [](const Decision& chosen, const KeyFacts& f) {
         Decision d = on_path(chosen, Path::pipelined);
         auto& p = d.get<PipelinedParams>();
         p.segments = 0;
         p.segment_bytes = kSmallSegments[static_cast<std::size_t>(f.flavor)].bytes;
         p.window = kSmallSegments[static_cast<std::size_t>(f.flavor)].window;
         return d;
     }},
    // Online: both host paths at the parameters the default table uses for the size, the policy's own path included,
    // so that a policy far off in its parameters does not hide its path's merit.
    {{"node shared memory: one leader below 16 KiB, two from there", false, true},
     [](const Decision&, const KeyFacts& f) { return f.ppn_max > 1; },
     [](const Decision& chosen, const KeyFacts& f) {
         Decision d = on_path(chosen, Path::multileader);
         d.get<MultileaderParams>().leaders = f.bytes < 16 * 1024 ? 1 : 2;
         return d;
     }},
    {{"segments of a quarter of the call (64 KiB..1 MiB), from 64 KiB", false, true},
     [](const Decision&, const KeyFacts& f) { return f.bytes >= 64 * 1024; },
     [](const Decision& chosen, const KeyFacts& f) {
         Decision d = on_path(chosen, Path::pipelined);
         auto& p = d.get<PipelinedParams>();
         p.segments = 0;
         p.segment_bytes = std::clamp<uint64_t>(pow2_at_least(f.bytes / 4), 64 * 1024, uint64_t{1} << 20);
         p.window = 8;
         return d;
     }},
};

const CandidateInfo kInfos[] = {kRows[0].info, kRows[1].info, kRows[2].info, kRows[3].info, kRows[4].info};
static_assert(std::size(kInfos) == std::size(kRows), "one name per row");

// Adds `d` unless an equal choice is there already (or, for an order-sensitive key under guard, unless it folds in
// another order than the policy's choice); multi-leader leader counts are clamped to what every node has.
void add(Decision d, const KeyFacts& f, bool same_bits_only, Decision (&out)[kMaxCandidates], int& n) {
    if (n == kMaxCandidates) return;
    if (d.path() == Path::multileader) {
        auto& leaders = d.get<MultileaderParams>().leaders;
        leaders = static_cast<uint32_t>(std::clamp<int>(static_cast<int>(leaders), 1, std::max(1, f.ppn_min)));
    }
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
    for (const Row& row : kRows) {
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
                const int count = tune_neighbours(p, TuneFacts{facts.bytes, facts.ppn_min, facts.nodes}, neighbours);
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
    *count = static_cast<int>(std::size(kInfos));
    return kInfos;
}

}  // namespace arshim::policy::tune
