// The pipelined path (seed 000, Castello et al.): the buffer in segments, one MPI_Iallreduce each, at most `window`
// in flight (shim/paths/pipelined.cpp; docs/paths.md).
#pragma once

#include "policy/path_spec.h"

namespace arshim::policy {

struct PipelinedParams {
    // A rule that sets neither segments nor segment_bytes gets 1 MiB segments.
    static constexpr uint64_t kDefaultSegmentBytes = uint64_t{1} << 20;
    static constexpr uint32_t kDefaultWindow = 8;

    uint32_t segments = 0;                       // a fixed number of segments (0: segment_bytes)
    uint64_t segment_bytes = kDefaultSegmentBytes;  // a fixed segment size (wins over segments)
    uint32_t window = kDefaultWindow;            // requests in flight (0: all)

    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/true, /*sums_in_rank_order=*/false};
    static const std::array<ParamKey<PipelinedParams>, 3> kKeys;  // below: the lambdas need the whole struct
    // Keys 0 and 1 exclude each other: a size written wins over a count (the reader warns when a rule sets both).
    static void finish(PipelinedParams& p, KeyMask written) {
        if (written & 1u) p.segments = 0;
        else if (written & 2u) p.segment_bytes = 0;
    }
};

inline const std::array<ParamKey<PipelinedParams>, 3> PipelinedParams::kKeys{{
    {"segment_bytes", KeyKind::size, 1, int64_t{1} << 40, OptionId::segment_bytes, nullptr,
     [](const PipelinedParams& p) { return static_cast<int64_t>(p.segment_bytes); },
     [](PipelinedParams& p, int64_t v) { p.segment_bytes = static_cast<uint64_t>(v); },
     [](const PipelinedParams& p) { return p.segment_bytes > 0; }},
    {"segments", KeyKind::count, 1, 65536, OptionId::segments, nullptr,
     [](const PipelinedParams& p) { return static_cast<int64_t>(p.segments); },
     [](PipelinedParams& p, int64_t v) { p.segments = static_cast<uint32_t>(v); },
     [](const PipelinedParams& p) { return p.segment_bytes == 0; }},
    {"window", KeyKind::count, 1, 4096, OptionId::window, nullptr,
     [](const PipelinedParams& p) { return static_cast<int64_t>(p.window); },
     [](PipelinedParams& p, int64_t v) { p.window = static_cast<uint32_t>(v); }},
}};

// Seed 000 Table 1's segmented MPI_Iallreduce (policy/cost_model.cpp).
double path_cost(const model::MachineParams& m, const model::Shape& shape, const PipelinedParams& p, Flavor flavor);
// Online tuning's second stage (docs/tuning.md): a quarter and four times the winner's segment, within 16 KiB..64 MiB.
inline int tune_neighbours(const PipelinedParams& winner, const TuneFacts&, PipelinedParams* out) {
    const uint64_t seg = winner.segment_bytes > 0 ? winner.segment_bytes : PipelinedParams::kDefaultSegmentBytes;
    PipelinedParams larger = winner, smaller = winner;
    larger.segments = smaller.segments = 0;
    larger.segment_bytes = seg * 4 < (uint64_t{64} << 20) ? seg * 4 : uint64_t{64} << 20;
    smaller.segment_bytes = seg / 4 > 16 * 1024 ? seg / 4 : 16 * 1024;
    out[0] = larger;
    out[1] = smaller;
    return 2;
}

}  // namespace arshim::policy
