// Cost models: predicted time of one MPI_Allreduce on each path, from a few machine parameters (issue 12). Pure
// arithmetic, no MPI. A model predicts; a measurement decides (DESIGN.md): the tuner fits MachineParams to what it
// measured (policy/model_fit.h) and uses the model to reach shapes nobody measured, marking those rules "predicted".
//
// Sources: seed 000 Table 1 (alpha-beta-gamma cost of RDB, RSA, RNG, BIN, and the segmented MPI_Iallreduce),
// seed 001 Eq. 7 and Eq. 5 (DPML with l leaders and k pipeline pieces), seed 004 Eq. 1 (ring allreduce, used in a
// training-step model where communication overlaps computation).
#pragma once

#include <cstdint>

#include "policy/box.h"
#include "policy/model_types.h"
#include "policy/policy.h"

namespace arshim::policy::model {

// The models assume this element size where a library's choice depends on the element count (count < pof2 tests):
// the benches and the tuner reduce MPI_FLOAT.
constexpr uint64_t kModelElementBytes = 4;

// Aggregate inter-node bandwidth of one node with l concurrent streams (seed 001 §3, Fig. 1: concurrency raises
// throughput near-linearly for small messages and saturates for large ones). A saturating form with one parameter:
// B(1) = net_bw, B(l) grows with l and tends to net_bw * stream_gain. Each stream gets B(l) / l.
double node_bandwidth(const MachineParams& m, double streams);

// native_time(): policy/model_types.h

// ARShim's pipelined path (seed 000 §5, Listings 1 and 2, costs from Table 1): one MPI_Iallreduce per segment, at most
// `window` in flight. Uses d.segment_bytes (wins) or d.segments, and d.window (0 = all).
double pipelined_time(const MachineParams& m, const Shape& shape, const PipelinedParams& d, Flavor flavor);

// ARSHIM_INTERNODE=auto (shim/paths/multileader.cpp): whether the multi-leader path's inter-node step on a partition
// of `partition_bytes` among `nodes` leaders goes round ARShim's ring rather than the library's allreduce. Here so
// that the model predicts the step the shim runs. Only node counts that are not a power of two (where both
// libraries first fold the extra ranks' whole vectors in and out) and at most 7 of them: the ring pays 2(h-1)
// latencies per chunk against the library's 2 + 2 log2 h, which at hundreds of nodes would cost more than the bytes
// it saves; measured on 3 nodes (docs/cluster.md "Three nodes").
inline constexpr uint64_t kInternodeRingMinBytes = 64 * 1024;
// With one rank per node the multi-leader path runs the whole call round the ring in chunks of h blocks of at most
// this many bytes (shim/paths/multileader.cpp run_one_rank_ring; its scratch buffer is one block).
inline constexpr uint64_t kOneRankRingBlockBytes = uint64_t{1} << 20;
inline constexpr uint32_t kInternodeRingMaxNodes = 7;
inline bool internode_ring_auto(uint32_t nodes, uint64_t partition_bytes) {
    return (nodes & (nodes - 1)) != 0 && nodes <= kInternodeRingMaxNodes && partition_bytes >= kInternodeRingMinBytes;
}

// The inter-node step a partition takes (shim/paths/internode.h).
enum class InternodeStep : uint8_t { library, ring, doubling, rabenseifner };
// ARSHIM_INTERNODE=auto takes ARShim's recursive doubling while a node sends at most this many bytes per exchange
// (its partition times the leaders of the node that send theirs at once): log2 h latencies, where MPICH 4.0.2's
// blocking allreduce takes 2 log2 h from 16 bytes (reduce-scatter + allgather once the count reaches the power of
// two) and Open MPI 4.1's 2 log2 h in a row from 256 ranks (a reduce, then a broadcast). Sending the whole vector
// log2 h times costs more bytes than those algorithms' 2n, which pays while the node's n stays below about its link's
// latency-bandwidth product (alpha / beta: ~12 KB on an EDR link, docs/scale.md): 4 KiB, the latency path's largest
// vector, stays below it. Counted per node, not per leader: sixteen leaders of 4 KiB each share one link, and
// there the library's fewer bytes won (the cost model at 16-1 024 nodes x 28 on `edr`, 64 KiB: 1.3-2.5x).
inline constexpr uint64_t kInternodeDoublingMaxBytes = 4096;
// Open MPI 4.1.4's allreduce algorithm for p ranks and a vector of `bytes` (coll/tuned's fixed rules,
// ompi_coll_tuned_allreduce_intra_dec_fixed): 2 a binomial reduce then a broadcast, 3 recursive doubling, 4 ring,
// 5 segmented ring, 6 Rabenseifner (reduce-scatter + allgather).
int ompi_algorithm(int p, uint64_t bytes);
// Whether the library's allreduce on `nodes` ranks (one leader per node) sends the whole partition at every step:
// Open MPI 4.1's fixed rules take recursive doubling (8-15 ranks below 8 KiB, 16-31 below 4 KiB, 64-127 below
// 256 KiB, 128-255 at 128-256 KiB, 512-2 047 at 2-16 KiB) or a reduce then a broadcast (128-255 ranks below 128 KiB,
// 256-511 below 4 KiB, 512 and more below 2 KiB), log2 h whole vectors through each node's link where MPICH 4.0.2
// reduce-scatters and allgathers, 2n(h-1)/h in all. Only from 8 nodes (below, either is a step or two).
inline bool library_sends_whole_vectors(Flavor flavor, uint32_t nodes, uint64_t partition_bytes) {
    if (flavor != Flavor::openmpi || nodes < 8) return false;
    const int algorithm = ompi_algorithm(static_cast<int>(nodes), partition_bytes);
    return algorithm == 2 || algorithm == 3;
}
// There ARSHIM_INTERNODE=auto takes ARShim's reduce-scatter + allgather once a node sends this much per step (its
// leaders' partitions together): log2 h whole vectors cost (log2 h - 2) n / B more bytes against log2 h more
// latencies, which pays from about log2 h alpha B / (log2 h - 2), 16-25 KB for 16-1 024 nodes on an EDR link
// (alpha B ~ 12 KB). At 64 x 28 on `edr`, 64 KiB, sixteen leaders of 4 KiB on Open MPI's step simulated 181.5 us
// against MPICH's own allreduce's 144.7 (docs/scale.md "Third pass").
inline constexpr uint64_t kInternodeRabenseifnerMinBytes = 32 * 1024;
// ARSHIM_INTERNODE=auto for `leaders` concurrent partitions of `partition_bytes` per node over `flavor`'s library:
// the ring where internode_ring_auto says so, doubling for small ones, ARShim's reduce-scatter + allgather where the
// library would send whole vectors, else the library.
inline InternodeStep internode_step_auto(uint32_t nodes, uint64_t partition_bytes, uint32_t leaders, Flavor flavor) {
    if (nodes < 2) return InternodeStep::library;
    if (internode_ring_auto(nodes, partition_bytes)) return InternodeStep::ring;
    const uint64_t node_bytes = partition_bytes * (leaders > 0 ? leaders : 1);
    if (node_bytes <= kInternodeDoublingMaxBytes) return InternodeStep::doubling;
    if (node_bytes >= kInternodeRabenseifnerMinBytes && library_sends_whole_vectors(flavor, nodes, partition_bytes))
        return InternodeStep::rabenseifner;
    return InternodeStep::library;
}

// The node shared-memory protocol on one node (shim/paths/node_shm.h): whether a call of `bytes` on `ppn` ranks is
// reduced by every rank from all slots (one wait per chunk) instead of by the leaders (two waits, and a copy out).
// Every rank then reads and reduces ppn x bytes, the node ppn^2 x bytes, against ~3 x ppn x bytes with the leaders,
// who also split the reduction. At ppn 2 one wait fewer won clearly from 8 B to 16 KiB, where a call is latency-bound,
// and was level at 16 KiB where cross-core transfers are fast; from 64 KiB, where the leaders' split of the reduction
// counts, it lost there (it won where they are slow). So ppn^2 x bytes <= 64 KiB: ppn 2 up to 16 KiB, ppn 4 4 KiB,
// ppn 16 256 B (docs/paths.md "One node, small calls"). Here so that the model predicts it.
inline constexpr uint64_t kNodeDirectMaxReads = 64 * 1024;
inline constexpr bool node_reduces_directly(uint64_t bytes, int ppn) {
    const auto p = static_cast<uint64_t>(ppn > 0 ? ppn : 1);
    return bytes <= kNodeDirectMaxReads / (p * p);
}

// ARShim's multi-leader path (DPML, seed 001 Eq. 7, with Eq. 5 for d.pipeline_k pieces): copy into node shared
// memory, each of d.leaders leaders reduces n/l bytes over ppn inputs, l concurrent inter-node allreduces of n/l
// bytes (on ARShim's ring where internode_ring_auto says so), copy out. On one node, where node_reduces_directly:
// one copy in, one wait, every rank reduces the whole vector.
double multileader_time(const MachineParams& m, const Shape& shape, const MultileaderParams& d, Flavor flavor);

// The cost of the decision's path (its path_cost, declared with its parameters in policy/paths/); NaN where a path
// has no model (sharp, reproducible).
double predict(const MachineParams& m, const Shape& shape, const Decision& d, Flavor flavor);

// Seed 004 Eq. 1: ring allreduce of n bytes on P processes, 2(P-1)alpha + 2(P-1)/P n beta + (P-1)/P (n/delta) gamma,
// with beta in s/byte, gamma in s/flop and delta bytes per element (one flop per element per step).
double ring_eq1(double alpha, double beta, double gamma, double delta, int processes, double bytes);

// Seed 004's training-step model runs a layer's allreduce while later layers still compute. The time the step
// spends on an allreduce of `allreduce_s` that may overlap `compute_s` of independent computation, with
// `overlap` in [0, 1] the fraction of the shorter one that is hidden (1: perfect overlap, max of the two; 0: their
// sum).
double overlapped_time(double allreduce_s, double compute_s, double overlap = 1.0);

}  // namespace arshim::policy::model
