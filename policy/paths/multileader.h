// The multi-leader path (DPML, seed 001): node shared memory, `leaders` leaders per node each reduce a partition,
// concurrent inter-node allreduces, each in `pipeline_k` pieces (shim/paths/multileader.cpp; docs/paths.md).
#pragma once

#include <algorithm>

#include "policy/path_spec.h"

namespace arshim::policy {

struct MultileaderParams {
    uint32_t leaders = 1;     // leaders per node (the shim clamps it to 1..ppn)
    uint32_t pipeline_k = 1;  // pieces each inter-node allreduce is cut into

    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/true, /*sums_in_rank_order=*/false,
                                        /*pieces_across_nodes=*/true};
    // Node shared memory; at one rank per node, one leader is ARShim's ring over the nodes (serves_layout).
    static constexpr Applies kApplies = [] {
        Applies a;
        a.shared_memory = true;
        return a;
    }();
    static const std::array<ParamKey<MultileaderParams>, 2> kKeys;  // below: the lambdas need the whole struct
};

inline const std::array<ParamKey<MultileaderParams>, 2> MultileaderParams::kKeys{{
    {"leaders", KeyKind::count, 1, 4096, OptionId::leaders, nullptr,
     [](const MultileaderParams& p) { return static_cast<int64_t>(p.leaders); },
     [](MultileaderParams& p, int64_t v) { p.leaders = static_cast<uint32_t>(v); }},
    {"pipeline_k", KeyKind::count, 1, 1024, OptionId::pipeline_k, nullptr,
     [](const MultileaderParams& p) { return static_cast<int64_t>(p.pipeline_k); },
     [](MultileaderParams& p, int64_t v) { p.pipeline_k = static_cast<uint32_t>(v); }},
}};

// Seed 001 Eq. 7 and Eq. 5 (policy/cost_model.cpp).
double path_cost(const model::MachineParams& m, const model::Shape& shape, const MultileaderParams& p, Flavor flavor);
// At one rank per node, one leader is ARShim's ring over the ranks where the inter-node step takes it (3, 5, 6 or 7
// nodes, from 64 KiB: shim/paths/multileader.cpp); elsewhere the path declines to the library's own, which the model
// predicts no faster than native (the library's allreduce among the nodes plus the copies). More leaders than ranks
// on a node: the shim clamps them, so the tuner does not weigh such a decision.
inline bool serves_layout(const MultileaderParams& p, uint32_t ppn) {
    return ppn > 1 ? p.leaders <= ppn : p.leaders == 1;
}
// The inter-node step: ARShim's ring where the node count is not a power of two, the library's allreduce elsewhere
// (model::internode_ring_auto, policy/cost_model.cpp).
bool internode_step_changes(const MultileaderParams& p, uint32_t from_nodes, uint32_t to_nodes, uint32_t ppn,
                            uint64_t bytes);
// Candidates are clamped to the leaders every node has.
inline void fit_to_layout(MultileaderParams& p, const TuneFacts& f) {
    const int most = f.ppn_min > 1 ? f.ppn_min : 1;
    const int leaders = static_cast<int>(p.leaders);
    p.leaders = static_cast<uint32_t>(leaders < 1 ? 1 : leaders > most ? most : leaders);
}
// Online tuning's first stage (docs/tuning.md).
inline const std::array<CandidateRow<MultileaderParams>, 2> kMultileaderCandidates{{
    // How many leaders pay depends on the links, which no rule sees (docs/cluster.md "The MTU", docs/tuning.md).
    {"half the policy's leaders, across nodes", true, false, 1, true,
     [](const Chosen<MultileaderParams>& c, const TuneFacts& f) {
         return c.own != nullptr && f.nodes > 1 &&
                std::min<int>(static_cast<int>(c.own->leaders), f.ppn_min) >= 2;
     },
     [](const Chosen<MultileaderParams>& c, const TuneFacts& f) {
         MultileaderParams p = *c.own;
         p.leaders = static_cast<uint32_t>(std::min<int>(static_cast<int>(p.leaders), f.ppn_min)) / 2;
         return p;
     }},
    // Online: both host paths at the parameters the default table uses for the size, the policy's own path included,
    // so that a policy far off in its parameters does not hide its path's merit.
    {"node shared memory: one leader below 16 KiB, two from there", false, true, 3, false,
     [](const Chosen<MultileaderParams>&, const TuneFacts& f) { return f.ppn_max > 1; },
     [](const Chosen<MultileaderParams>&, const TuneFacts& f) {
         MultileaderParams p;
         p.leaders = f.bytes < 16 * 1024 ? 1 : 2;
         return p;
     }},
}};
inline const auto& candidate_rows(const MultileaderParams*) { return kMultileaderCandidates; }
// Online tuning's second stage (docs/tuning.md): twice and half the winner's leaders (clamped to the smallest node
// by the tuner).
inline int tune_neighbours(const MultileaderParams& winner, const TuneFacts&, MultileaderParams* out) {
    MultileaderParams more = winner, fewer = winner;
    more.leaders = winner.leaders * 2;
    fewer.leaders = winner.leaders / 2 > 1 ? winner.leaders / 2 : 1;
    out[0] = more;
    out[1] = fewer;
    return 2;
}

}  // namespace arshim::policy
