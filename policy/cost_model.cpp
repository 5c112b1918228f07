// Cost models of the allreduce paths (cost_model.h). Every algorithm is costed as the steps it takes; a step is
// intra-node or inter-node depending on whether its partner lives on the same node (block placement: rank r on
// node r / ppn), so the flat algorithms of seed 000 Table 1 become hierarchical without a second set of formulas.
#include "policy/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace arshim::policy::model {

namespace {

// A time split as seed 000 Table 1 splits it: latency (alpha terms), transfer (beta terms), arithmetic (gamma
// terms). The pipelined model overlaps these parts differently, so they are kept apart until the end.
// `messages` counts the messages a rank sends, for the per-message work that never overlaps (segmented()).
// `spread` is the part of `transfer` that several calls in flight hide: `transfer` sums each step's busiest node,
// but when the nodes are not alike (the fold of a node count that is not a power of two) different steps load
// different nodes' links, and calls pipelined one behind the other wait only for the busiest node's own steps.
struct Cost {
    double latency = 0, transfer = 0, reduce = 0, messages = 0, spread = 0;
    double total() const { return latency + transfer + reduce; }
    double node_transfer() const { return transfer - spread; }
    Cost& operator+=(const Cost& o) {
        latency += o.latency, transfer += o.transfer, reduce += o.reduce, messages += o.messages, spread += o.spread;
        return *this;
    }
    Cost times(double k) const { return {latency * k, transfer * k, reduce * k, messages * k, spread * k}; }
};

// One collective as the steps see it: p ranks, ppn of them per node, and `copies` identical collectives running at
// once on every node (1 for the library's allreduce on the user's communicator; l for DPML's l leader
// communicators, each with one rank per node).
struct Layout {
    int p = 1;
    int ppn = 1;
    int copies = 1;
    int nodes() const { return (p + ppn - 1) / ppn; }
};

// The size section a message of b bytes falls in (MachineParams::sections), or none: factors 1, no overhead.
const MachineParams::SizeSection& size_section(const MachineParams& m, double b) {
    static const MachineParams::SizeSection kNone{};
    const MachineParams::SizeSection* found = &kNone;
    const int n = std::clamp(m.size_sections, 0, MachineParams::kMaxSizeSections);
    for (int i = 0; i < n && m.sections[i].above < b; ++i) found = &m.sections[i];
    return *found;
}

// A message's latency part: the fixed cost `latency` x the section's factor, plus its per-message overheads.
double message_latency(const MachineParams::SizeSection& s, double latency, double b) {
    return latency * s.lat + s.overhead + s.overhead_per_byte * b;
}

// An intra-node message of b bytes through the libraries' shared-memory transport: a' plus two copies (into the
// shared buffer and out of it), or b at intra_bw where the machine gives that rate (a simulated loopback).
Cost intra_step(const MachineParams& m, double b) {
    const auto& s = size_section(m, b);
    const double moved = m.intra_bw > 0 ? b / (m.intra_bw * s.bw) : 2 * b / (m.copy_bw * s.bw);
    return {message_latency(s, m.intra_latency, b), moved, 0, 1};
}

// An inter-node message of b bytes while `streams` messages leave the node at once: alpha plus b at the per-stream
// share B(streams) / streams of the node's bandwidth.
Cost inter_step(const MachineParams& m, double b, double streams) {
    const auto& s = size_section(m, b);
    return {message_latency(s, m.alpha, b), b * streams / (node_bandwidth(m, streams) * s.bw), 0, 1};
}

Cost reduction(const MachineParams& m, double b) { return {0, 0, b / m.gamma}; }

// Where the steps of a recursive (doubling or halving) algorithm cross nodes. For p not a power of two both
// libraries first pair ranks (2i, 2i+1), i < rem = p - pof2: one of each pair hands its vector over and sits the
// algorithm out (MPICH keeps the odd rank, Open MPI's Rabenseifner the even one: the same pairs, so the same
// nodes); the survivors, renumbered 0..pof2-1, run the steps at distances 1, 2, 4, ... of the new numbering. The
// renumbering moves partners off the node: on 3 nodes x 2 the first step (distance 1) pairs ranks 1 and 3, on two
// nodes, where block placement of a power of two would keep it on the node. For each step, the most ranks of one
// node whose partner is on another node (0: the step stays on every node); `fold` is the pairing step itself.
struct Crossings {
    int p = 0, ppn = 0;
    int fold = 0;
    std::vector<int> step;  // index log2(distance)
    // The same counts node by node, kept only where the nodes differ (p not a power of two): fold_at[node],
    // step_at[log2 distance][node].
    std::vector<int> fold_at;
    std::vector<std::vector<int>> step_at;
    std::vector<char> folds_at, steps_at;  // whether node k takes part in the fold, in the steps after it
};

int floor_pof2(int p) { return p < 1 ? 1 : 1 << (31 - __builtin_clz(static_cast<unsigned>(p))); }
int ceil_log2(int v) { return v <= 1 ? 0 : 32 - __builtin_clz(static_cast<unsigned>(v - 1)); }

const Crossings& crossings(const Layout& l) {
    // The tuner predicts one layout at many sizes and candidates in a row: one layout remembered per thread keeps
    // a 512-node prediction from recounting p ranks at every call.
    thread_local Crossings memo;
    if (memo.p == l.p && memo.ppn == l.ppn) return memo;
    memo = Crossings{l.p, l.ppn, 0, {}, {}, {}, {}, {}};
    const int pof2 = floor_pof2(l.p), rem = l.p - pof2, ppn = std::max(1, l.ppn);
    const int nodes = (l.p + ppn - 1) / ppn;
    const bool keep_nodes = pof2 != l.p;
    std::vector<int> per_node(static_cast<std::size_t>(nodes));
    auto count = [&](auto crosses) {  // per_node[k]: ranks r of node k with crosses(r); returns the largest
        std::fill(per_node.begin(), per_node.end(), 0);
        int out = 0;
        for (int r = 0; r < l.p; ++r)
            if (crosses(r)) out = std::max(out, ++per_node[static_cast<std::size_t>(r / ppn)]);
        return out;
    };
    auto survivor = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };  // rank of new number v
    auto number = [&](int r) { return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem; };
    memo.fold = count([&](int r) { return r < 2 * rem && r / ppn != (r ^ 1) / ppn; });
    if (keep_nodes) {
        memo.fold_at = per_node;
        memo.folds_at.assign(static_cast<std::size_t>(nodes), 0);
        memo.steps_at.assign(static_cast<std::size_t>(nodes), 0);
        for (int r = 0; r < l.p; ++r) {
            if (r < 2 * rem) memo.folds_at[static_cast<std::size_t>(r / ppn)] = 1;
            if (number(r) >= 0) memo.steps_at[static_cast<std::size_t>(r / ppn)] = 1;
        }
    }
    for (int d = 1; d < pof2; d *= 2) {
        memo.step.push_back(count([&](int r) {
            const int v = number(r);
            return v >= 0 && r / ppn != survivor(v ^ d) / ppn;
        }));
        if (keep_nodes) memo.step_at.push_back(per_node);
    }
    return memo;
}

// A step where the busiest node sends `streams` ranks' messages off the node (times the concurrent copies): an
// inter-node step; none: an intra-node one.
Cost placed_step(const MachineParams& m, const Layout& l, int streams, double b) {
    if (l.nodes() > 1 && streams > 0) return inter_step(m, b, double(streams) * l.copies);
    return intra_step(m, b);
}

Cost recursive_step(const MachineParams& m, const Layout& l, int d, double b) {
    return placed_step(m, l, crossings(l).step[static_cast<std::size_t>(ceil_log2(d))], b);
}

// Non-power-of-two p: the p - pof2 extra ranks first hand their vector to their pair and get the result back at the
// end: two more steps of n, one reduction.
Cost fold(const MachineParams& m, const Layout& l, double n) {
    if (floor_pof2(l.p) == l.p) return {};
    Cost c = placed_step(m, l, crossings(l).fold, n).times(2);
    c += reduction(m, n);
    return c;
}

// Cost::spread of a recursive algorithm on p not a power of two: its transfer minus the busiest node's own, each
// node's steps at that node's stream count. `piece(i)` is the bytes of step i (distance 2^i) each way, `times` how
// often each step runs (2: reduce-scatter and allgather mirror each other; 1: recursive doubling).
template <class Piece>
void spread_over_nodes(const MachineParams& m, const Layout& l, double n, Piece piece, double times, Cost& c) {
    const Crossings& x = crossings(l);
    if (x.fold_at.empty() || l.nodes() <= 1) return;
    double busiest = 0;
    for (std::size_t k = 0; k < x.fold_at.size(); ++k) {
        auto own = [&](int streams, double b) {
            return placed_step(m, l, streams, b).transfer;
        };
        double t = x.folds_at[k] ? 2 * own(x.fold_at[k], n) : 0;
        if (x.steps_at[k])
            for (std::size_t i = 0; i < x.step_at.size(); ++i) t += times * own(x.step_at[i][k], piece(i));
        busiest = std::max(busiest, t);
    }
    c.spread = std::max(0.0, c.transfer - busiest);
}

// Seed 000 Table 1 RDB: log p steps, each exchanging and reducing the whole vector.
Cost recursive_doubling(const MachineParams& m, const Layout& l, double n) {
    Cost c = fold(m, l, n);
    for (int d = 1; d < floor_pof2(l.p); d *= 2) {
        c += recursive_step(m, l, d, n);
        c += reduction(m, n);
    }
    spread_over_nodes(m, l, n, [n](std::size_t) { return n; }, 1, c);
    return c;
}

// Seed 000 Table 1 RSA (Rabenseifner): reduce-scatter by recursive halving at distances 1, 2, 4, ... (the step at
// distance d moves n / 2d), then the allgather mirrors it: 2 log p latencies, 2n(pof2-1)/pof2 bytes,
// n(pof2-1)/pof2 reduced.
Cost rabenseifner(const MachineParams& m, const Layout& l, double n) {
    Cost c = fold(m, l, n);
    for (int d = 1; d < floor_pof2(l.p); d *= 2) {
        const double piece = n / (2.0 * d);
        c += recursive_step(m, l, d, piece).times(2);
        c += reduction(m, piece);
    }
    spread_over_nodes(m, l, n, [n](std::size_t i) { return n / (2.0 * double(1u << i)); }, 2, c);
    return c;
}

// Seed 000 Table 1 RNG: 2(p-1) steps of n/p to the next rank, the first p-1 reducing. With block placement one
// rank per node (per copy) sends off the node, and every step waits for that slowest link.
Cost ring(const MachineParams& m, const Layout& l, double n) {
    if (l.p <= 1) return {};
    const double piece = n / l.p;
    const Cost step = l.nodes() > 1 ? inter_step(m, piece, l.copies) : intra_step(m, piece);
    Cost c = step.times(2.0 * (l.p - 1));
    c += reduction(m, piece * (l.p - 1));
    return c;
}

// Seed 000 Table 1 BIN: binomial reduce then binomial broadcast, log p steps each, the whole vector every step.
// Crossing steps have one sender per node and copy.
Cost binomial(const MachineParams& m, const Layout& l, double n) {
    Cost c;
    for (int d = 1; d < l.p; d *= 2) {
        const Cost step = l.nodes() > 1 && d >= l.ppn ? inter_step(m, n, l.copies) : intra_step(m, n);
        c += step.times(2);
        c += reduction(m, n);
    }
    return c;
}

bool count_below_pof2(const Layout& l, double n) { return n / kModelElementBytes < floor_pof2(l.p); }

// MPICH 4.0.2, MPIR_Allreduce on a flat communicator: maint/tuning/coll/mpir/generic.json (the csel default) picks
// recursive doubling for avg_msg_size <= 8 bytes or count < pof2, Rabenseifner (reduce_scatter_allgather) otherwise.
Cost mpich_flat(const MachineParams& m, const Layout& l, double n) {
    if (n <= 8 || count_below_pof2(l, n)) return recursive_doubling(m, l, n);
    return rabenseifner(m, l, n);
}

// MPICH 4.0.2 ch4 POSIX release_gather (posix_generic.json, commutative ops): every rank copies into its shared
// cell, a tree reduces (modelled as binomial: ceil(log2 ppn) levels of a' plus one reduction of n); the broadcast
// is one copy in by the root and one copy out by every rank at once.
Cost mpich_node_reduce(const MachineParams& m, int ppn, double n) {
    if (ppn <= 1) return {};
    const int levels = ceil_log2(ppn);
    const auto& s = size_section(m, n);
    Cost c{message_latency(s, m.intra_latency, n) * levels, n / (m.copy_bw * s.bw), 0, double(levels)};
    c += reduction(m, n * levels);
    return c;
}
Cost mpich_node_bcast(const MachineParams& m, int ppn, double n) {
    if (ppn <= 1) return {};
    const auto& s = size_section(m, n);
    return {message_latency(s, m.intra_latency, n), 2 * n / (m.copy_bw * s.bw), 0, 1};
}

// MPICH 4.0.2 ch4 (maint/tuning/coll/ch4/generic.json): a communicator within one node takes composition gamma
// (the POSIX allreduce, release_gather); one spanning nodes with several ranks per node (hierarchy "parent",
// commutative op) takes composition alpha: node reduce, MPIR allreduce among the node roots, node broadcast.
Cost mpich_allreduce(const MachineParams& m, const Shape& s, double n) {
    if (s.nodes <= 1) {
        Cost c = mpich_node_reduce(m, s.ppn, n);
        c += mpich_node_bcast(m, s.ppn, n);
        return c;
    }
    Cost c = mpich_node_reduce(m, s.ppn, n);
    c += mpich_flat(m, Layout{s.nodes, 1, 1}, n);
    c += mpich_node_bcast(m, s.ppn, n);
    return c;
}

// MPICH 4.0.2 MPI_Iallreduce (mpir/generic.json "iallreduce", the same rule as mpir_coll_sched_auto.c with
// MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048): recursive doubling up to 2048 bytes or count < pof2, else
// reduce-scatter + allgather. Flat: the schedule-based algorithms know no node hierarchy.
Cost mpich_iallreduce(const MachineParams& m, const Layout& l, double n) {
    if (n <= 2048 || count_below_pof2(l, n)) return recursive_doubling(m, l, n);
    return rabenseifner(m, l, n);
}

}  // namespace

// Open MPI 4.1.4 coll/tuned, ompi_coll_tuned_allreduce_intra_dec_fixed for commutative ops (the 4.1 tables made
// with ompi-collectives-tuning): below comm size `below_size`, the algorithm for total bytes under each bound.
// Algorithms: 2 nonoverlapping (reduce + bcast), 3 recursive doubling, 4 ring, 5 segmented ring, 6 rabenseifner.
struct OmpiStep {
    uint64_t below_bytes;  // 0 = any size
    int alg;
};
struct OmpiRow {
    int below_size;  // 0 = any communicator size
    OmpiStep steps[7];
};
constexpr OmpiRow kOmpiAllreduce[] = {
    {4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}, {0, 6}}},
    {8, {{16, 4}, {8192, 3}, {0, 6}}},
    {16, {{8192, 3}, {0, 6}}},
    {32, {{64, 5}, {4096, 3}, {0, 6}}},
    {64, {{128, 5}, {0, 6}}},
    {128, {{262144, 3}, {0, 6}}},
    {256, {{131072, 2}, {262144, 3}, {0, 6}}},
    {512, {{4096, 2}, {0, 6}}},
    {2048, {{2048, 2}, {16384, 3}, {0, 6}}},
    {4096, {{2048, 2}, {4096, 5}, {16384, 3}, {0, 6}}},
    {0, {{2048, 2}, {16384, 5}, {32768, 3}, {0, 6}}},
};

int ompi_algorithm(int p, uint64_t bytes) {
    for (const OmpiRow& row : kOmpiAllreduce) {
        if (row.below_size != 0 && p >= row.below_size) continue;
        for (const OmpiStep& step : row.steps)
            if (step.below_bytes == 0 || bytes < step.below_bytes) return step.alg;
    }
    return 6;
}

namespace {

// Open MPI runs what the table picked, except that ring and Rabenseifner fall back to recursive doubling when the
// vector has fewer elements than ranks (coll_base_allreduce.c). Segmented ring is costed as ring.
Cost ompi_allreduce(const MachineParams& m, const Layout& l, double n) {
    if (l.p <= 1) return {};
    switch (ompi_algorithm(l.p, static_cast<uint64_t>(n))) {
    case 2: return binomial(m, l, n);
    case 4:
    case 5: return n / kModelElementBytes < l.p ? recursive_doubling(m, l, n) : ring(m, l, n);
    case 6: return count_below_pof2(l, n) ? recursive_doubling(m, l, n) : rabenseifner(m, l, n);
    default: return recursive_doubling(m, l, n);
    }
}

// Open MPI 4.1 libnbc MPI_Iallreduce (nbc_iallreduce.c): binomial reduce + broadcast below 4 ranks or 64 KiB,
// reduce-scatter + allgather otherwise (ARShim stages in-place segments so they are not sent to the binomial
// tree, docs/paths.md).
Cost ompi_iallreduce(const MachineParams& m, const Layout& l, double n) {
    if (l.p < 4 || n < 65536 || count_below_pof2(l, n)) return binomial(m, l, n);
    return rabenseifner(m, l, n);
}

Cost flat_allreduce(const MachineParams& m, const Layout& l, double n, Flavor flavor) {
    return flavor == Flavor::openmpi ? ompi_allreduce(m, l, n) : mpich_flat(m, l, n);
}

Cost iallreduce(const MachineParams& m, const Layout& l, double n, Flavor flavor) {
    if (l.p <= 1) return {};
    return flavor == Flavor::openmpi ? ompi_iallreduce(m, l, n) : mpich_iallreduce(m, l, n);
}

// Seed 000 §5: nseg MPI_Iallreduce calls, nseg - 1 of `seg` bytes and a last one of `last` bytes (Listing 1's
// remainder), at most w in flight. One in flight is plain sequence. With two or more, the waits of the segments in
// flight overlap (ceil(nseg / w) latencies are paid), but the one CPU still posts and progresses every message of
// the other segments (a' each: that work does not overlap); the transfers share the links, and a segment's
// reduction runs while the next one is on the wire: a two-stage pipeline whose makespan is the first transfer, then
// per segment the longer of its transfer and the previous reduction, then the last reduction.
double segmented(const MachineParams& m, const Layout& l, double seg, double nseg, double last, double w,
                 Flavor flavor) {
    const Cost tail = iallreduce(m, l, last, flavor);
    if (nseg <= 1) return tail.total();
    const Cost one = iallreduce(m, l, seg, flavor);
    if (w <= 1) return (nseg - 1) * one.total() + tail.total();
    const double waits = std::ceil(nseg / w);
    const double latency = waits * one.latency + (nseg - waits) * one.messages * m.intra_latency;
    // Past the first segment, the steps of the segments in flight load different nodes' links where the nodes
    // differ (Cost::spread): the busiest node's own transfer sets the pace.
    const double flow = one.transfer + (nseg - 2) * std::max(one.node_transfer(), one.reduce) +
                        std::max(tail.node_transfer(), one.reduce) + tail.reduce;
    return latency + flow;
}

}  // namespace

double node_bandwidth(const MachineParams& m, double streams) {
    const double l = std::max(1.0, streams);
    return m.net_bw * l / (1.0 + (l - 1.0) / std::max(1.0, m.stream_gain));
}

double native_time(const MachineParams& m, const Shape& s, Flavor flavor) {
    const double n = static_cast<double>(s.bytes);
    if (flavor == Flavor::openmpi) return ompi_allreduce(m, Layout{s.ppn * s.nodes, s.ppn, 1}, n).total();
    return mpich_allreduce(m, s, n).total();
}

namespace {

// `leaders` (one or `copies` concurrent ones per node) combining n bytes each in the step internode_step_auto picks;
// the library's with k pieces in flight where k > 1 (the multi-leader path's pipeline_k).
double internode_cost(const MachineParams& m, const Layout& leaders, double n, double k, Flavor flavor) {
    switch (internode_step_auto(static_cast<uint32_t>(leaders.nodes()), static_cast<uint64_t>(n),
                                static_cast<uint32_t>(leaders.copies), flavor)) {
    case InternodeStep::doubling: return recursive_doubling(m, leaders, n).total();
    case InternodeStep::ring: return ring(m, leaders, n).total();
    case InternodeStep::rabenseifner: return rabenseifner(m, leaders, n).total();
    case InternodeStep::library: break;
    }
    return k <= 1 ? flat_allreduce(m, leaders, n, flavor).total() : segmented(m, leaders, n / k, k, n / k, k, flavor);
}

}  // namespace

double internode_time(const MachineParams& m, int nodes, uint64_t bytes, Flavor flavor) {
    return internode_cost(m, Layout{nodes, 1, 1}, static_cast<double>(bytes), 1, flavor);
}

double pipelined_time(const MachineParams& m, const Shape& s, const PipelinedParams& d, Flavor flavor) {
    const double n = static_cast<double>(s.bytes);
    // Listing 1 (fixed segment size, the last segment takes the remainder) wins over Listing 2 (a fixed count of
    // equal segments), as in the shim; no segment is smaller than an element.
    double nseg = 1, seg = n;
    if (d.segment_bytes > 0) {
        seg = std::max<double>(static_cast<double>(d.segment_bytes), kModelElementBytes);
        nseg = std::max(1.0, std::ceil(n / seg));
    } else {
        nseg = std::clamp<double>(d.segments, 1.0, std::max(1.0, n / kModelElementBytes));
        seg = n / nseg;
    }
    const double w = d.window == 0 ? nseg : std::min<double>(d.window, nseg);
    return segmented(m, Layout{s.ppn * s.nodes, s.ppn, 1}, seg, nseg, n - (nseg - 1) * seg, w, flavor);
}

double multileader_time(const MachineParams& m, const Shape& s, const MultileaderParams& d, Flavor flavor) {
    const double n = static_cast<double>(s.bytes);
    if (s.ppn <= 1) {
        // One rank per node: no node phase. Where the inter-node step takes ARShim's ring, the whole call goes round
        // it among the ranks (the input copied into the result, then chunks of h blocks of at most one ring block,
        // seed 000 Table 1 RNG each); elsewhere the path declines to the library's allreduce (docs/cluster.md "One
        // rank per node on three nodes").
        if (s.nodes < 2 || !internode_ring_auto(static_cast<uint32_t>(s.nodes), s.bytes))
            return native_time(m, s, flavor);
        const Layout ranks{s.nodes, 1, 1};
        const double chunk = std::min(n, static_cast<double>(s.nodes) * static_cast<double>(kOneRankRingBlockBytes));
        const double full = std::floor(n / chunk), last = n - full * chunk;
        return n / m.copy_bw + full * ring(m, ranks, chunk).total() + (last > 0 ? ring(m, ranks, last).total() : 0);
    }
    const int l = std::clamp<int>(static_cast<int>(d.leaders), 1, s.ppn);  // the shim clamps l to 1..ppn
    const double k = std::max<uint32_t>(d.pipeline_k, 1);
    if (s.nodes == 1 && node_reduces_directly(s.bytes, s.ppn))
        return m.intra_latency + n / m.copy_bw + (s.ppn - 1) * n / m.gamma;
    // Seed 001 Eq. 7, T_copy + T_bcast = 2 l (a' + b' n / l): every rank copies its vector in and the result out.
    const double copies = 2.0 * l * m.intra_latency + 2.0 * n / m.copy_bw;
    // T_comp: leader j reduces its n / l over all ppn inputs. (Eq. 7 writes (p / (h l) - 1) n c; ARShim's n-ary
    // kernel reads every one of the ppn slots of its partition, (ppn - 1) n / l reductions.)
    const double comp = (s.ppn - 1) * (n / l) / m.gamma;
    // T_comm: l concurrent allreduces of n / l bytes among the nodes' leader j, each a library allreduce (Eq. 7 takes
    // recursive doubling; seed 001 §6 notes the library picks otherwise, so the flavor's own choice is used). With
    // k pieces (DPML-Pipelined, Eq. 5: lg h (a k + n b / l + n c / l)) they are k MPI_Iallreduce calls in flight.
    // Where the shim takes ARShim's own step instead (internode_step_auto): its ring (seed 000 Table 1 RNG; the model
    // does not cut the call into chunks, so a partition is n / l) or its recursive doubling (Table 1 RDB).
    const double comm = s.nodes > 1 ? internode_cost(m, Layout{s.nodes, 1, l}, n / l, k, flavor) : 0;
    return copies + comp + comm;
}

double predict(const MachineParams& m, const Shape& s, const Decision& d, Flavor flavor) {
    return std::visit(
        [&](const auto& p) {
            if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>)
                return std::numeric_limits<double>::quiet_NaN();
            else
                return path_cost(m, s, p, flavor);  // the path's own (policy/paths/<path>.h)
        },
        d.params);
}

}  // namespace arshim::policy::model

namespace arshim::policy {

// The paths' costs (declared with each path's parameters, policy/paths/). sharp and reproducible have no model.
double path_cost(const model::MachineParams& m, const model::Shape& s, const NativeParams&, Flavor flavor) {
    return model::native_time(m, s, flavor);
}
double path_cost(const model::MachineParams& m, const model::Shape& s, const PipelinedParams& p, Flavor flavor) {
    return model::pipelined_time(m, s, p, flavor);
}
double path_cost(const model::MachineParams& m, const model::Shape& s, const MultileaderParams& p, Flavor flavor) {
    return model::multileader_time(m, s, p, flavor);
}
bool internode_step_changes(const MultileaderParams& p, uint32_t from_nodes, uint32_t to_nodes, uint32_t ppn,
                            uint64_t bytes) {
    const uint64_t partition = bytes / std::clamp<uint32_t>(p.leaders, 1, std::max<uint32_t>(ppn, 1));
    return model::internode_ring_auto(from_nodes, partition) != model::internode_ring_auto(to_nodes, partition);
}
double path_cost(const model::MachineParams&, const model::Shape&, const SharpParams&, Flavor) {
    return std::numeric_limits<double>::quiet_NaN();
}
double path_cost(const model::MachineParams&, const model::Shape&, const ReproducibleParams&, Flavor) {
    return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace arshim::policy

namespace arshim::policy::model {

double ring_eq1(double alpha, double beta, double gamma, double delta, int processes, double bytes) {
    const double p = processes, f = (p - 1) / p;
    return 2 * (p - 1) * alpha + 2 * f * bytes * beta + f * (bytes / delta) * gamma;
}

double overlapped_time(double allreduce_s, double compute_s, double overlap) {
    const double f = std::clamp(overlap, 0.0, 1.0);
    return allreduce_s + compute_s - f * std::min(allreduce_s, compute_s);
}

}  // namespace arshim::policy::model
