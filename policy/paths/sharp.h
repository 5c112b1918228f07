// The SHARP path: in-network reduction through NVIDIA's SHARP collective library, low-latency (LLT) or streaming
// aggregation (SAT), with node or socket leaders (shim/sharp/path.cpp; docs/sharp.md).
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

enum class SharpMode : uint8_t { automatic, llt, sat };
enum class SharpLeaders : uint8_t { node, socket };
inline constexpr const char* kSharpModeNames[] = {"auto", "llt", "sat"};
inline constexpr const char* kSharpLeadersNames[] = {"node", "socket"};
inline constexpr vocab::Words kSharpModeWords{kSharpModeNames};
inline constexpr vocab::Words kSharpLeadersWords{kSharpLeadersNames};
inline const char* sharp_mode_name(SharpMode mode) { return vocab::name_of(kSharpModeNames, mode); }
inline const char* sharp_leaders_name(SharpLeaders l) { return vocab::name_of(kSharpLeadersNames, l); }

struct SharpParams {
    SharpMode mode = SharpMode::automatic;  // auto: by ARSHIM_SHARP_SAT_THRESHOLD
    SharpLeaders leaders = SharpLeaders::node;

    static constexpr PathTraits kTraits{};
    // The switches reduce across nodes (one node: nothing to reduce), through NVIDIA's library loaded at run time; the
    // node step uses node shared memory.
    static constexpr Applies kApplies = [] {
        Applies a;
        a.nodes = Need::several;
        a.shared_memory = true;
        a.library = true;
        return a;
    }();
    static const std::array<ParamKey<SharpParams>, 2> kKeys;  // below: the lambdas need the whole struct
};

inline const std::array<ParamKey<SharpParams>, 2> SharpParams::kKeys{{
    {"sharp_mode", KeyKind::choice, 0, 2, OptionId::count, &kSharpModeWords,
     [](const SharpParams& p) { return static_cast<int64_t>(p.mode); },
     [](SharpParams& p, int64_t v) { p.mode = static_cast<SharpMode>(v); }},
    {"sharp_leaders", KeyKind::choice, 0, 1, OptionId::count, &kSharpLeadersWords,
     [](const SharpParams& p) { return static_cast<int64_t>(p.leaders); },
     [](SharpParams& p, int64_t v) { p.leaders = static_cast<SharpLeaders>(v); }},
}};

// No model: NaN.
double path_cost(const model::MachineParams& m, const model::Shape& shape, const SharpParams& p, Flavor flavor);
inline int tune_neighbours(const SharpParams&, const TuneFacts&, SharpParams*) { return 0; }

}  // namespace arshim::policy
