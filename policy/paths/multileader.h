// The multi-leader path (DPML, seed 001): node shared memory, `leaders` leaders per node each reduce a partition,
// concurrent inter-node allreduces, each in `pipeline_k` pieces (shim/paths/multileader.cpp; docs/paths.md).
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

struct MultileaderParams {
    uint32_t leaders = 1;     // leaders per node (the shim clamps it to 1..ppn)
    uint32_t pipeline_k = 1;  // pieces each inter-node allreduce is cut into

    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/true, /*sums_in_rank_order=*/false};
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
