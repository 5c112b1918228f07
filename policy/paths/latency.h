// The latency path: small calls (up to kLatencyMaxBytes) through cache-line slots in node shared memory
// (shim/paths/latency.cpp; docs/paths.md "`latency`"). Each rank writes its vector and a sequence number into
// its own slot (a vector of up to 56 bytes shares the sequence number's cache line), and on one node every rank
// reduces all slots itself, in node-rank order: one wait per remote rank, no broadcast step. Across nodes node rank 0
// reduces the node's slots, combines the result with the other nodes' first ranks (ARShim's recursive doubling under
// ARSHIM_INTERNODE=auto, shim/paths/internode.h) and publishes it in a slot of its own, which the node's other ranks
// copy out; with one rank per node there is no window, only that step. No parameters.
#pragma once

#include "policy/model_types.h"
#include "policy/path_spec.h"

namespace arshim::policy {

// The largest call the path serves (larger calls decline with buffer_too_large): its slots are sized for it, so a
// node's window is 2 x (ppn + 1) x (64 + 4096) bytes.
constexpr uint64_t kLatencyMaxBytes = 4096;

struct LatencyParams {
    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/true, /*sums_in_rank_order=*/false};
    // Node slots; at one rank per node across nodes only the inter-node step (ARShim's recursive doubling, not the
    // library's own behind a copy), so the tuner weighs it there too.
    static constexpr Applies kApplies = [] {
        Applies a;
        a.max_bytes = kLatencyMaxBytes;
        a.shared_memory = true;
        return a;
    }();
    static constexpr std::array<ParamKey<LatencyParams>, 0> kKeys{};
};

// One node: one copy in, one flag wait per remote rank (a' each, the cache line moving between cores), every rank
// reducing the whole vector. Across nodes: the node step twice (in and out; none at one rank per node) around the
// inter-node step among one rank per node (policy/cost_model.cpp latency_internode_time).
inline double path_cost(const model::MachineParams& m, const model::Shape& s, const LatencyParams&, Flavor flavor) {
    const double n = static_cast<double>(s.bytes);
    const double node = m.intra_latency * (s.ppn > 1 ? 1.0 : 0.0) + n / m.copy_bw + (s.ppn - 1) * n / m.gamma;
    if (s.nodes <= 1) return node;
    return (s.ppn > 1 ? 2 * node : n / m.copy_bw) + model::internode_time(m, s.nodes, s.bytes, flavor);
}
inline int tune_neighbours(const LatencyParams&, const TuneFacts&, LatencyParams*) { return 0; }

}  // namespace arshim::policy
