// The library's own MPI_Allreduce, untouched: the path every call can take (docs/paths.md). No parameters.
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

struct NativeParams {
    static constexpr PathTraits kTraits{};
    static constexpr Applies kApplies{};  // every call the library takes
    static constexpr std::array<ParamKey<NativeParams>, 0> kKeys{};
};

// The library's own allreduce as the algorithms it picks by size (policy/cost_model.cpp).
double path_cost(const model::MachineParams& m, const model::Shape& shape, const NativeParams& p, Flavor flavor);
inline int tune_neighbours(const NativeParams&, const TuneFacts&, NativeParams*) { return 0; }
// Online tuning's first stage: the library's allreduce against every choice (guard: against each of ARShim's paths).
inline const std::array<CandidateRow<NativeParams>, 1> kNativeCandidates{{
    {"the library's allreduce", true, true, 0, false,
     [](const Chosen<NativeParams>&, const TuneFacts&) { return true; },
     [](const Chosen<NativeParams>&, const TuneFacts&) { return NativeParams{}; }},
}};
inline const auto& candidate_rows(const NativeParams*) { return kNativeCandidates; }

}  // namespace arshim::policy
