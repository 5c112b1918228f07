// The pipelined path (seed 000, Castello et al.): the buffer in segments, one MPI_Iallreduce each, at most `window`
// in flight (shim/paths/pipelined.cpp; docs/paths.md).
#pragma once

#include <algorithm>

#include "policy/path_spec.h"

namespace arshim::policy {

struct PipelinedParams {
    // A rule that sets neither segments nor segment_bytes gets 1 MiB segments.
    static constexpr uint64_t kDefaultSegmentBytes = uint64_t{1} << 20;
    static constexpr uint32_t kDefaultWindow = 8;

    uint32_t segments = 0;                       // a fixed number of segments (0: segment_bytes)
    uint64_t segment_bytes = kDefaultSegmentBytes;  // a fixed segment size (wins over segments)
    uint32_t window = kDefaultWindow;            // requests in flight (0: all)

    static constexpr PathTraits kTraits{/*hands_ops_to_library=*/true, /*sums_in_rank_order=*/false,
                                        /*pieces_across_nodes=*/true};
    static constexpr Applies kApplies{};  // the library's MPI_Iallreduce takes every call
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
// The whole message as one MPI_Iallreduce (a fixed count of segments: the tuner's "pipelined-one") is there for one
// rank per node, where MPICH's blocking allreduce takes twice the rounds below 2 KiB (docs/tuning.md). With several
// ranks per node the model would weigh it against the node paths with its weakest part (the library's shared-memory
// steps): on one node it predicted it well ahead of native where the multi-leader path measures further ahead still
// (docs/tuning.md "One rank per node, small sizes").
inline bool serves_layout(const PipelinedParams& p, uint32_t ppn) {
    return p.segment_bytes == 0 && p.segments > 0 ? ppn == 1 : true;
}
// Segmenting a message smaller than one segment is the library's allreduce with extra steps, which the model does not
// know. A fixed count of segments applies at every size.
inline bool sensible_at(const PipelinedParams& p, uint64_t bytes) {
    return p.segment_bytes == 0 || bytes >= p.segment_bytes;
}

// Guard's small segments across nodes, per library: the smallest segments each library's MPI_Iallreduce still
// reduce-scatters, 256 KiB in flight (docs/cluster.md "Small segments across nodes" has the measurements). Indexed by
// Flavor: mpich, openmpi.
struct SmallSegments {
    uint64_t bytes;
    uint32_t window;
};
inline constexpr SmallSegments kSmallSegments[] = {{32 * 1024, 8} /* mpich */, {64 * 1024, 4} /* openmpi */};
inline constexpr uint64_t kSmallSegmentsFromBytes = uint64_t{1} << 20;

inline uint64_t pow2_at_least(uint64_t v) {
    uint64_t p = 1;
    while (p < v && p < (uint64_t{1} << 40)) p <<= 1;
    return p;
}

// Online tuning's first stage (docs/tuning.md).
inline const std::array<CandidateRow<PipelinedParams>, 2> kPipelinedCandidates{{
    // How small the pieces in flight across nodes should be depends on the links too (docs/cluster.md "Small segments
    // across nodes"): against a choice that moves pieces across nodes (PathTraits::pieces_across_nodes).
    {"each library's small segments, across nodes, from 1 MiB", true, false, 2, false,
     [](const Chosen<PipelinedParams>& c, const TuneFacts& f) {
         return c.traits.pieces_across_nodes && f.nodes > 1 && f.bytes >= kSmallSegmentsFromBytes;
     },
     [](const Chosen<PipelinedParams>&, const TuneFacts& f) {
         PipelinedParams p;
         p.segments = 0;
         p.segment_bytes = kSmallSegments[static_cast<std::size_t>(f.flavor)].bytes;
         p.window = kSmallSegments[static_cast<std::size_t>(f.flavor)].window;
         return p;
     }},
    {"segments of a quarter of the call (64 KiB..1 MiB), from 64 KiB", false, true, 4, false,
     [](const Chosen<PipelinedParams>&, const TuneFacts& f) { return f.bytes >= 64 * 1024; },
     [](const Chosen<PipelinedParams>&, const TuneFacts& f) {
         PipelinedParams p;
         p.segments = 0;
         p.segment_bytes = std::clamp<uint64_t>(pow2_at_least(f.bytes / 4), 64 * 1024, uint64_t{1} << 20);
         p.window = 8;
         return p;
     }},
}};
inline const auto& candidate_rows(const PipelinedParams*) { return kPipelinedCandidates; }

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
