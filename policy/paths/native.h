// The library's own MPI_Allreduce, untouched: the path every call can take (docs/paths.md). No parameters.
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

struct NativeParams {
    static constexpr PathTraits kTraits{};
    static constexpr std::array<ParamKey<NativeParams>, 0> kKeys{};
};

// The library's own allreduce as the algorithms it picks by size (policy/cost_model.cpp).
double path_cost(const model::MachineParams& m, const model::Shape& shape, const NativeParams& p, Flavor flavor);
inline int tune_neighbours(const NativeParams&, const TuneFacts&, NativeParams*) { return 0; }

}  // namespace arshim::policy
