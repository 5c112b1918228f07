// The reproducible path: floating-point sums in communicator rank order (ARSHIM_REPRODUCIBLE), by gathering every
// contribution, an exchange, the node window, or the chain of node leaders (shim/paths/reproducible.cpp;
// docs/reproducible.md).
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

enum class ReproAlgorithm : uint8_t { automatic, gather, exchange, node };
inline constexpr const char* kReproAlgorithmNames[] = {"auto", "gather", "exchange", "node"};
inline constexpr vocab::Words kReproAlgorithmWords{kReproAlgorithmNames};
inline const char* repro_algorithm_name(ReproAlgorithm a) { return vocab::name_of(kReproAlgorithmNames, a); }

struct ReproducibleParams {
    ReproAlgorithm algorithm = ReproAlgorithm::automatic;
    uint32_t leaders = 1;  // the node algorithm's leaders per node

    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/false, /*sums_in_rank_order=*/true};
    // Floating-point SUM and PROD (ARSHIM_REPRODUCIBLE's calls: the router's in_rank_order, checked against this by
    // test/shim/test_path_golden.cpp). Its node algorithm and the chain of node leaders need contiguous nodes and use
    // node shared memory where the communicator has it; elsewhere it gathers or exchanges, so it never declines.
    static constexpr Applies kApplies = [] {
        Applies a;
        a.ops = op_bit(vocab::Op::sum) | op_bit(vocab::Op::prod);
        a.classes = class_bit(vocab::DtypeClass::floating);
        a.contiguous_nodes = true;
        return a;
    }();
    static const std::array<ParamKey<ReproducibleParams>, 2> kKeys;  // below: the lambdas need the whole struct
};

inline const std::array<ParamKey<ReproducibleParams>, 2> ReproducibleParams::kKeys{{
    {"algorithm", KeyKind::choice, 0, 3, OptionId::count, &kReproAlgorithmWords,
     [](const ReproducibleParams& p) { return static_cast<int64_t>(p.algorithm); },
     [](ReproducibleParams& p, int64_t v) { p.algorithm = static_cast<ReproAlgorithm>(v); }},
    {"leaders", KeyKind::count, 1, 4096, OptionId::leaders, nullptr,
     [](const ReproducibleParams& p) { return static_cast<int64_t>(p.leaders); },
     [](ReproducibleParams& p, int64_t v) { p.leaders = static_cast<uint32_t>(v); },
     [](const ReproducibleParams& p) {
         return p.algorithm == ReproAlgorithm::node || p.algorithm == ReproAlgorithm::automatic;
     }},
}};

// No model: NaN.
double path_cost(const model::MachineParams& m, const model::Shape& shape, const ReproducibleParams& p, Flavor flavor);
inline int tune_neighbours(const ReproducibleParams&, const TuneFacts&, ReproducibleParams*) { return 0; }

}  // namespace arshim::policy
