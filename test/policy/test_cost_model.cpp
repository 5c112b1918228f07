// The cost models (policy/cost_model.h): every formula against values computed by hand (in the comments), then the
// shapes of the curves: more bytes never faster, more leaders help only up to saturation, plausible rankings.
#include "test/support/catch.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "policy/cost_model.h"
#include "test/policy/decisions.h"

using namespace arshim::policy;
using namespace arshim::policy::testing;
using namespace arshim::policy::model;
using Catch::Approx;

namespace {

// Round numbers so the hand computations stay readable.
MachineParams hand() {
    MachineParams m;
    m.copy_bw = 1e9;         // b' = 1 ns/byte
    m.intra_latency = 1e-6;  // a'
    m.gamma = 2e9;           // c = 0.5 ns/byte
    m.alpha = 1e-5;
    m.net_bw = 1e8;          // b = 10 ns/byte for one stream
    m.stream_gain = 2;       // B(l) = 1e8 l / (1 + (l - 1) / 2)
    return m;
}

constexpr uint64_t kMiB = 1 << 20;  // n = 1048576 below

}  // namespace

TEST_CASE("node bandwidth saturates with concurrent streams", "[model]") {
    const MachineParams m = hand();
    CHECK(node_bandwidth(m, 1) == Approx(1e8));          // B(1) = B1
    CHECK(node_bandwidth(m, 2) == Approx(1.3333333e8));  // 2e8 / 1.5
    CHECK(node_bandwidth(m, 4) == Approx(1.6e8));        // 4e8 / 2.5
    CHECK(node_bandwidth(m, 1e6) == Approx(2e8).epsilon(1e-5));  // tends to B1 * s
}

TEST_CASE("native MPICH 4.0.2: node reduce + broadcast on one node", "[model]") {
    // composition gamma, release_gather: reduce = 1 level (a' + n c) + copy in n b'; bcast = a' + 2 n b'
    //   = 1e-6 + 5.24288e-4 + 1.048576e-3 + 1e-6 + 2.097152e-3 = 3.672016e-3
    CHECK(native_time(hand(), Shape{kMiB, 2, 1}, Flavor::mpich) == Approx(3.672016e-3));
}

TEST_CASE("native MPICH 4.0.2: Rabenseifner between two nodes", "[model]") {
    // p = 2, n > 8 B: RSA, one step at distance 1 of n/2 = 524288 B, sent twice (reduce-scatter, allgather), each
    // alpha + 524288 * 10 ns; one reduction of n/2:
    //   2 * (1e-5 + 5.24288e-3) + 2.62144e-4 = 1.0767904e-2
    CHECK(native_time(hand(), Shape{kMiB, 1, 2}, Flavor::mpich) == Approx(1.0767904e-2));
    // 8 B: recursive doubling, one step: alpha + 8 * 10 ns + 8 * 0.5 ns = 1.0084e-5
    CHECK(native_time(hand(), Shape{8, 1, 2}, Flavor::mpich) == Approx(1.0084e-5));
}

TEST_CASE("a simulated network's table is read at the size of every message", "[model]") {
    // MachineParams::sections (arshim simulate --network): above 300 000 bytes 10 x the latency, half the bandwidth
    // and 1 us of overheads a message. 4 nodes x 1, 1 MiB, MPICH: Rabenseifner, steps of 524288 B (distance 1) and
    // 262144 B (distance 2), each twice; only the first pays the section:
    //   2 * (1e-4 + 1e-6 + 524288 * 20 ns) + 2 * (1e-5 + 262144 * 10 ns) + reductions (524288 + 262144) * 0.5 ns
    //   = 2 * 1.0586760e-2 + 2 * 2.63144e-3 + 3.93216e-4 = 2.6829616e-2
    MachineParams m = hand();
    m.size_sections = 2;
    m.sections[0] = {0, 1, 1, 0, 0};
    m.sections[1] = {300000, 10, 0.5, 1e-6, 0};
    CHECK(native_time(m, Shape{kMiB, 1, 4}, Flavor::mpich) == Approx(2.6829616e-2));
    // A section applies above its bound only: with the bound at 524288 every step is plain alpha-beta.
    m.sections[1].above = 524288;
    const double plain = native_time(hand(), Shape{kMiB, 1, 4}, Flavor::mpich);
    CHECK(native_time(m, Shape{kMiB, 1, 4}, Flavor::mpich) == Approx(plain));
    // Per byte overheads count each message's bytes (8 B: one exchange, recursive doubling on 2 nodes).
    m.sections[1] = {0, 1, 1, 0, 1e-9};
    CHECK(native_time(m, Shape{8, 1, 2}, Flavor::mpich) == Approx(1.0084e-5 + 8e-9));
}

TEST_CASE("native MPICH 4.0.2: composition alpha across nodes", "[model]") {
    // 2 nodes x 2: node reduce (1e-6 + 5.24288e-4 + 1.048576e-3) + roots' RSA (1.0767904e-2, above)
    //   + node bcast (1e-6 + 2.097152e-3) = 1.443992e-2
    CHECK(native_time(hand(), Shape{kMiB, 2, 2}, Flavor::mpich) == Approx(1.443992e-2));
}

TEST_CASE("native Open MPI 4.1.4: the tuned table's Rabenseifner on 2 x 2", "[model]") {
    // p = 4 (row "< 8"), 1 MiB >= 8192: Rabenseifner. Distance 1 stays on the node: 2 * (1e-6 + 2 * 524288 * 1 ns)
    //   + 524288 * 0.5 ns = 2.099152e-3 + 2.62144e-4; distance 2 crosses with 2 streams (15 ns/byte each):
    //   2 * (1e-5 + 262144 * 15 ns) + 262144 * 0.5 ns = 7.88432e-3 + 1.31072e-4. Total 1.0376688e-2.
    CHECK(native_time(hand(), Shape{kMiB, 2, 2}, Flavor::openmpi) == Approx(1.0376688e-2));
    // 4 KiB on 2 ranks (row "< 4", < 8192 B... 4096 is not < 4096: ring): 2 steps of 2048 B crossing with one
    // stream: 2 * (1e-5 + 2048 * 10 ns) + 2048 * 0.5 ns = 6.1984e-5
    CHECK(native_time(hand(), Shape{4096, 1, 2}, Flavor::openmpi) == Approx(6.1984e-5));
}

TEST_CASE("a simulated loopback (intra_bw) moves the libraries' node messages once, uncharged", "[model]") {
    // The same 2 x 2 Rabenseifner with intra_bw = 4e9 B/s: the distance-1 step moves 524288 B at 0.25 ns/byte
    // instead of two copies at 1 ns/byte, 2 * (1e-6 + 1.31072e-4) less 2.099152e-3 = 1.835008e-3 less:
    //   1.0376688e-2 - 1.835008e-3 = 8.54168e-3. ARShim's own node copies stay at copy_bw (multileader).
    MachineParams m = hand();
    m.intra_bw = 4e9;
    CHECK(native_time(m, Shape{kMiB, 2, 2}, Flavor::openmpi) == Approx(8.54168e-3));
    const Decision ml = multileader(1, 1);
    CHECK(predict(m, Shape{kMiB, 2, 2}, ml, Flavor::openmpi) - predict(hand(), Shape{kMiB, 2, 2}, ml, Flavor::openmpi)
          == Approx(0).margin(1e-12));
}

TEST_CASE("native Open MPI 4.1.4: Rabenseifner on 3 x 2, where the fold renumbers ranks across nodes", "[model]") {
    // p = 6, pof2 = 4, rem = 2: pairs (0, 1) and (2, 3) fold on their nodes: 2 * (1e-6 + 2 * 1048576 * 1 ns)
    //   + 1048576 * 0.5 ns = 4.720592e-3. Survivors 1, 3, 4, 5 (nodes 0, 1, 2, 2) renumbered 0..3.
    // Distance 1 pairs ranks 1 and 3 across nodes (one stream per node; 4 and 5 stay on node 2):
    //   2 * (1e-5 + 524288 * 10 ns) + 524288 * 0.5 ns = 1.050576e-2 + 2.62144e-4.
    // Distance 2 pairs 1-4 and 3-5: node 2 sends two streams (15 ns/byte each):
    //   2 * (1e-5 + 262144 * 15 ns) + 262144 * 0.5 ns = 7.88432e-3 + 1.31072e-4. Total 2.3503888e-2.
    CHECK(native_time(hand(), Shape{kMiB, 2, 3}, Flavor::openmpi) == Approx(2.3503888e-2));
    // A power of two keeps block placement's rule: on 4 x 2 distance 1 stays on the node and distances 2 and 4 cross
    // with both ranks of every node. Fold: none. d1: 2 * (1e-6 + 2 * 524288 ns) + 262144 ns = 2.099152e-3
    //   + 2.62144e-4; d2: 2 * (1e-5 + 262144 * 15 ns) + 131072 ns = 7.88432e-3 + 1.31072e-4;
    //   d4: 2 * (1e-5 + 131072 * 15 ns) + 65536 ns = 3.95216e-3 + 6.5536e-5. Total 1.4394384e-2.
    CHECK(native_time(hand(), Shape{kMiB, 2, 4}, Flavor::openmpi) == Approx(1.4394384e-2));
}

TEST_CASE("pipelined: segments and window (seed 000)", "[model]") {
    // MPICH, 2 nodes x 1, 1 MiB in 256 KiB segments: 4 Iallreduce (RSA, > 2048 B), each latency 2e-5,
    // transfer 2 * 131072 * 10 ns = 2.62144e-3, reduction 131072 * 0.5 ns = 6.5536e-5.
    const Shape s{kMiB, 1, 2};
    // window 2: ceil(4/2) * 2e-5 waits, the other 2 segments' 2 messages each at a' = 4e-6,
    // + 4 * 2.62144e-3 + 6.5536e-5 = 1.0595296e-2
    CHECK(predict(hand(), s, pipelined(256 * 1024, 2), Flavor::mpich) == Approx(1.0595296e-2));
    // window 1: 4 * (2e-5 + 2.62144e-3 + 6.5536e-5) = 1.0827904e-2
    CHECK(predict(hand(), s, pipelined(256 * 1024, 1), Flavor::mpich) == Approx(1.0827904e-2));
    // a fixed count (Listing 2) gives the same when it makes the same segments
    Decision by_count = pipelined(0, 2);
    set_param(by_count, "segments", 4);
    CHECK(predict(hand(), s, by_count, Flavor::mpich) == Approx(1.0595296e-2));
}

TEST_CASE("pipelined on 3 x 2: the segments in flight wait for the busiest node's own steps", "[model]") {
    // Open MPI libnbc, 6 ranks, 256 KiB segments (Rabenseifner), 1 MiB, window 4. One segment (n = 262144):
    //   fold (pairs 0-1, 2-3 on their nodes): latency 2e-6, transfer 2 * 2 * 262144 ns = 1.048576e-3,
    //     reduce 1.31072e-4; distance 1 (ranks 1-3 across, 4-5 on node 2), one stream: latency 2e-5,
    //     transfer 2 * 131072 * 10 ns = 2.62144e-3, reduce 6.5536e-5; distance 2 (1-4, 3-5: node 2 sends two
    //     streams, 15 ns/byte): latency 2e-5, transfer 2 * 65536 * 15 ns = 1.96608e-3, reduce 3.2768e-5.
    //   latency 4.2e-5, transfer 5.636096e-3 (each step's busiest node), reduce 2.29376e-4, 6 messages.
    // Node by node: nodes 0 and 1 fold on the node (1.048576e-3) and send one stream in both steps
    //   (2.62144e-3 + 2 * 65536 * 10 ns = 1.31072e-3): 4.980736e-3; node 2 has no fold, its distance-1 step
    //   stays on the node (2 * 2 * 131072 ns = 5.24288e-4) and it sends two streams at distance 2 (1.96608e-3):
    //   2.490368e-3. The busiest node: 4.980736e-3.
    // segmented(): 4 segments, all in flight: latency 1 * 4.2e-5 + 3 * 6 * 1e-6 = 6e-5; flow: the first segment's
    //   transfer 5.636096e-3, then 2 + 1 segments at the busiest node's 4.980736e-3, then the last reduction
    //   2.29376e-4: 2.080768e-2. Total 2.086768e-2.
    CHECK(predict(hand(), Shape{kMiB, 2, 3}, pipelined(256 * 1024, 4), Flavor::openmpi) ==
          Approx(2.086768e-2));
}

TEST_CASE("multileader: DPML Eq. 7 with l leaders and k pieces (seed 001)", "[model]") {
    const Shape s{kMiB, 4, 2};
    // l = 2: copies 2 l a' + 2 n b' = 4e-6 + 2.097152e-3; comp (ppn - 1) (n / l) c = 3 * 524288 * 0.5 ns =
    // 7.86432e-4; comm: 2 concurrent RSA of 524288 B between 2 nodes, 15 ns/byte per stream:
    // 2 * (1e-5 + 262144 * 15 ns) + 262144 * 0.5 ns = 8.015392e-3. Total 1.0902976e-2.
    CHECK(predict(hand(), s, multileader(2, 1), Flavor::mpich) == Approx(1.0902976e-2));
    // k = 2 (Eq. 5): two Iallreduce of 262144 B in flight: 1 * 2e-5 + the other piece's 2 messages at a' (2e-6)
    //   + 2 * (2 * 131072 * 15 ns) + 131072 * 0.5 ns = 7.951856e-3; total 1.083944e-2.
    CHECK(predict(hand(), s, multileader(2, 2), Flavor::mpich) == Approx(1.083944e-2));
    // One node: no inter-node term. l = 4: 8e-6 + 2.097152e-3 + 3 * 262144 * 0.5 ns = 2.498368e-3
    CHECK(predict(hand(), Shape{kMiB, 4, 1}, multileader(4, 1), Flavor::openmpi) == Approx(2.498368e-3));
    // leaders are clamped to ppn, as the shim does
    CHECK(predict(hand(), Shape{kMiB, 4, 1}, multileader(64, 1), Flavor::openmpi) == Approx(2.498368e-3));
}

TEST_CASE("multileader on a node count that is not a power of two: ARShim's ring among the leaders", "[model]") {
    // The shim's rule (ARSHIM_INTERNODE=auto), shared with the model.
    CHECK(internode_ring_auto(3, 64 * 1024));
    CHECK_FALSE(internode_ring_auto(3, 64 * 1024 - 1));
    CHECK_FALSE(internode_ring_auto(2, kMiB));
    CHECK_FALSE(internode_ring_auto(4, kMiB));
    CHECK(internode_ring_auto(6, kMiB));
    CHECK(internode_ring_auto(7, kMiB));
    CHECK_FALSE(internode_ring_auto(9, kMiB));    // 2(h-1) latencies per chunk: not at larger node counts
    CHECK_FALSE(internode_ring_auto(500, kMiB));
    // 3 nodes x 4, l = 2, 1 MiB: copies 4e-6 + 2.097152e-3, comp 7.86432e-4 as above; comm: a ring of 3 leaders on
    // 524288 B (2 concurrent streams per node, 15 ns/byte each): 4 steps of 1e-5 + (524288 / 3) * 15 ns =
    // 4 * 2.63144e-3 = 1.052576e-2, plus 2 * 174762.67 B reduced at 0.5 ns = 1.7476267e-4. Total 1.3588107e-2.
    CHECK(predict(hand(), Shape{kMiB, 4, 3}, multileader(2, 1), Flavor::mpich) == Approx(1.3588107e-2));
    // pipeline_k does not apply to the ring (the shim's ring replaces the whole step)
    CHECK(predict(hand(), Shape{kMiB, 4, 3}, multileader(2, 4), Flavor::mpich) == Approx(1.3588107e-2));
}

TEST_CASE("multileader at one rank per node: the whole call round ARShim's ring, or the library's", "[model]") {
    // 3 nodes x 1, 1 MiB: the input copied into the result (1048576 B at 1 ns = 1.048576e-3), then one chunk (3
    // blocks of at most 1 MiB hold it): a ring of 3 ranks on 349525.33 B pieces, 4 steps of 1e-5 + 3.4952533e-3,
    // 1.40210133e-2, plus 2 pieces reduced at 0.5 ns, 3.4952533e-4. Total 1.54191147e-2. Before, the model took the
    // library's allreduce here (the path declined at one rank per node before the ring): 2.2x off on the rig.
    CHECK(predict(hand(), Shape{kMiB, 1, 3}, multileader(1, 1), Flavor::mpich) == Approx(1.54191147e-2));
    // 4 MiB: copy 4.194304e-3, a chunk of 3 MiB (4 steps of 1e-5 + 1.048576e-2, plus 2 MiB reduced: 4.3031616e-2) and
    // the rest, 1 MiB, as above (1.43705387e-2). Total 6.15964587e-2.
    CHECK(predict(hand(), Shape{4 * kMiB, 1, 3}, multileader(1, 1), Flavor::openmpi) ==
          Approx(6.15964587e-2));
    // Where the step is the library's (2 and 4 nodes, below 64 KiB) the path declines: the library's allreduce.
    for (const Shape s : {Shape{kMiB, 1, 2}, Shape{kMiB, 1, 4}, Shape{32 * 1024, 1, 3}})
        for (const Flavor f : {Flavor::mpich, Flavor::openmpi})
            CHECK(predict(hand(), s, multileader(1, 1), f) == Approx(native_time(hand(), s, f)));
}

TEST_CASE("predict dispatches on the path; sharp and reproducible have no model", "[model]") {
    const Shape s{kMiB, 2, 2};
    Decision native;
    CHECK(predict(hand(), s, native, Flavor::mpich) == native_time(hand(), s, Flavor::mpich));
    CHECK(predict(hand(), s, multileader(2, 1), Flavor::openmpi) ==
          predict(hand(), s, multileader(2, 1), Flavor::openmpi));
    Decision sharp;
    set_path(sharp, Path::sharp);
    CHECK(std::isnan(predict(hand(), s, sharp, Flavor::mpich)));
    Decision repro;
    set_path(repro, Path::reproducible);
    CHECK(std::isnan(predict(hand(), s, repro, Flavor::mpich)));
}

TEST_CASE("seed 004 Eq. 1 and overlap with computation", "[model]") {
    // 2 * 3 * 1e-5 + 2 * 0.75 * 1e6 * 1e-8 + 0.75 * (1e6 / 4) * 1e-9 = 6e-5 + 1.5e-2 + 1.875e-4 = 1.52475e-2
    CHECK(ring_eq1(1e-5, 1e-8, 1e-9, 4, 4, 1e6) == Approx(1.52475e-2));
    CHECK(overlapped_time(3, 5) == Approx(5));        // fully hidden: the longer one
    CHECK(overlapped_time(3, 5, 0) == Approx(8));     // no overlap: the sum
    CHECK(overlapped_time(3, 5, 0.5) == Approx(6.5));  // half of the shorter hidden
}

// The libraries' own switch points are the exception: MPICH's MPI_Iallreduce goes from recursive doubling to
// Rabenseifner above 2048 B and Open MPI's libnbc from binomial to Rabenseifner at 64 KiB, both only once the
// vector has as many elements as the largest power of two <= p; the second algorithm can be faster at the switch.
// The model keeps what the libraries do, so sizes whose MPI_Iallreduce pieces (pipelined segments, DPML-Pipelined
// pieces among the nodes' leaders) straddle a switch are skipped; so are those where MPICH's blocking allreduce
// among the node roots leaves recursive doubling (count >= pof2).
bool straddles_iallreduce_switch(const Decision& d, Flavor flavor, const Shape& s, uint64_t a, uint64_t b) {
    // The multi-leader path's inter-node step moves from ARShim's recursive doubling to the library above 4 KiB and
    // to ARShim's ring at a partition size (internode_step_auto): the call can get faster there, as at the libraries'
    // own switches (where the network's latency is small against its bandwidth, as on hand()'s 10 us and 100 MB/s,
    // the whole vector sent log2 h times costs more than the library's 2 n well before 4 KiB).
    if (d.path() == Path::multileader && s.nodes > 1 && s.ppn > 1) {
        const uint64_t l = std::min<uint64_t>(param(d, "leaders"), s.ppn);
        if (internode_step_auto(s.nodes, a / l, l, flavor) != internode_step_auto(s.nodes, b / l, l, flavor))
            return true;
    }
    uint64_t sa = 0, sb = 0, p = 1;
    if (d.path() == Path::pipelined) {
        // the last segment (the remainder) switches on its own
        const auto segment = static_cast<uint64_t>(param(d, "segment_bytes"));
        auto last = [&](uint64_t n) { return n == 0 ? 0 : n - (n - 1) / segment * segment; };
        Shape by_last = s;
        by_last.bytes = 0;
        Decision whole = d;
        set_param(whole, "segment_bytes", uint64_t{1} << 62);
        if (b > segment && straddles_iallreduce_switch(whole, flavor, by_last, std::min(last(a), last(b)),
                                                       std::max(last(a), last(b))))
            return true;
        sa = std::min(a, segment), sb = std::min(b, segment);
        p = uint64_t(s.ppn) * s.nodes;
    } else if (d.path() == Path::native || (d.path() == Path::multileader && (s.ppn == 1 || param(d, "pipeline_k") == 1))) {
        if (flavor == Flavor::openmpi) {
            // coll/tuned's table switches at powers of two; ring and Rabenseifner fall back below p or pof2 elements
            const uint64_t q = d.path() == Path::native ? uint64_t(s.ppn) * s.nodes : uint64_t(s.nodes);
            const uint64_t pieces = d.path() == Path::native || s.ppn == 1 ? 1 : std::min<uint64_t>(param(d, "leaders"), s.ppn);
            return bucket_of(a / pieces) != bucket_of(b / pieces) || (a / pieces < 4 * q && b / pieces >= 4 * q);
        }
        // MPICH: MPIR_Allreduce among the node roots or the leaders
        const uint64_t pieces = d.path() == Path::native || s.ppn == 1 ? 1 : std::min<uint64_t>(param(d, "leaders"), s.ppn);
        sa = a / pieces, sb = b / pieces, p = s.nodes;
    } else if (d.path() == Path::multileader) {  // k > 1: MPI_Iallreduce pieces among the leaders
        const uint64_t pieces = std::min<uint64_t>(param(d, "leaders"), s.ppn) * param(d, "pipeline_k");
        sa = a / pieces, sb = b / pieces, p = s.nodes;
    } else {
        return false;
    }
    uint64_t pof2 = 1;
    while (pof2 * 2 <= p) pof2 *= 2;
    for (uint64_t at : {flavor == Flavor::mpich ? uint64_t{2048} : uint64_t{65535}, kModelElementBytes * pof2 - 1})
        if (sa <= at + 1 && sb >= at) return true;
    return false;
}

TEST_CASE("more bytes are never faster", "[model]") {
    const std::vector<Shape> shapes{{0, 1, 2}, {0, 2, 1}, {0, 2, 2}, {0, 4, 3}, {0, 8, 4}, {0, 16, 64}, {0, 1, 512}};
    const std::vector<Decision> decisions{Decision{}, pipelined(1 << 20, 8), pipelined(64 << 10, 4),
                                          multileader(1, 1), multileader(4, 1), multileader(4, 4)};
    for (const MachineParams& m : {hand(), MachineParams{}})
        for (Flavor flavor : {Flavor::mpich, Flavor::openmpi})
            for (Shape s : shapes)
                for (const Decision& d : decisions) {
                    double previous = 0;
                    uint64_t previous_n = 0;
                    for (uint64_t n = 1; n <= (uint64_t{1} << 28); n = n * 11 / 10 + 1) {  // fine steps: few straddle
                        s.bytes = n;
                        const double t = predict(m, s, d, flavor);
                        INFO(describe_decision(d) << " " << flavor_name(flavor) << " " << s.nodes << "x" << s.ppn
                                                  << " " << n << " B");
                        if (!straddles_iallreduce_switch(d, flavor, s, previous_n, n)) REQUIRE(t >= previous * (1 - 1e-12));
                        previous = t;
                        previous_n = n;
                    }
                }
}

TEST_CASE("multileader on one node: small calls reduced by every rank, one wait (node_reduces_directly)", "[model]") {
    // at most 64 KiB read by the node's ranks in all, ppn^2 x bytes
    CHECK(node_reduces_directly(16384, 2));
    CHECK_FALSE(node_reduces_directly(16385, 2));
    CHECK(node_reduces_directly(65536, 1));
    CHECK(node_reduces_directly(4096, 4));
    CHECK_FALSE(node_reduces_directly(4097, 4));
    CHECK(node_reduces_directly(256, 16));
    CHECK_FALSE(node_reduces_directly(257, 16));
    CHECK(node_reduces_directly(0, 1024));
    CHECK_FALSE(node_reduces_directly(1, 1024));
    // 1 KiB, ppn 2: a' + n b' + (ppn - 1) n c = 1e-6 + 1.024e-6 + 0.512e-6, whatever the leader count
    CHECK(predict(hand(), Shape{1024, 2, 1}, multileader(1, 1), Flavor::mpich) == Approx(2.536e-6));
    CHECK(predict(hand(), Shape{1024, 2, 1}, multileader(2, 1), Flavor::openmpi) == Approx(2.536e-6));
    // the leaders' scheme beyond: 1 MiB, ppn 2, l = 2: 2 l a' + 2 n b' + (ppn - 1) (n / l) c
    //   = 4e-6 + 2.097152e-3 + 2.62144e-4 = 2.363296e-3
    CHECK(predict(hand(), Shape{kMiB, 2, 1}, multileader(2, 1), Flavor::mpich) == Approx(2.363296e-3));
    // and never on several nodes (the leaders carry the inter-node step)
    CHECK(predict(hand(), Shape{1024, 2, 2}, multileader(1, 1), Flavor::mpich) > 2.536e-6 + 1e-6);
}

TEST_CASE("more leaders help only up to saturation", "[model]") {
    MachineParams m = hand();
    m.gamma = 1e15;  // reduction free: the network term alone
    const Shape s{16 * kMiB, 16, 4};
    auto t = [&](uint32_t l) { return predict(m, s, multileader(l, 1), Flavor::openmpi); };
    CHECK(t(2) < t(1));
    CHECK(t(4) < t(2));
    // the gain of doubling shrinks as the node's bandwidth saturates
    CHECK(t(8) - t(16) < (t(1) - t(2)) / 4);
    // with no concurrency gain (one stream fills the node) leaders only add latency
    m.stream_gain = 1;
    CHECK(t(16) > t(1));
    // and small messages, latency-bound, want one leader
    m.stream_gain = 2;
    const Shape small{256, 16, 4};
    CHECK(predict(m, small, multileader(1, 1), Flavor::mpich) <
          predict(m, small, multileader(16, 1), Flavor::mpich));
}

TEST_CASE("the model ranks paths plausibly", "[model]") {
    MachineParams m;
    m.copy_bw = 10e9;  // copies far faster than the network
    m.net_bw = 1.25e8;
    for (Flavor flavor : {Flavor::mpich, Flavor::openmpi}) {
        INFO(flavor_name(flavor));
        // one node, large: DPML's single copy in and out beats the libraries' two-copy messages
        CHECK(predict(m, Shape{64 * kMiB, 8, 1}, multileader(8, 1), flavor) <
              predict(m, Shape{64 * kMiB, 8, 1}, Decision{}, flavor));
        // across nodes, large: several leaders beat one (concurrent streams)
        const Shape wide{64 * kMiB, 8, 4};
        CHECK(predict(m, wide, multileader(4, 1), flavor) < predict(m, wide, multileader(1, 1), flavor));
        // tiny messages: cutting them into segments does not pay
        CHECK(predict(m, Shape{64, 2, 4}, pipelined(1 << 20, 8), flavor) <
              predict(m, Shape{64, 2, 4}, pipelined(16, 4), flavor));
    }
    // MPICH's composition alpha sends one stream per node (the node roots); DPML's leaders send l. (Open MPI's flat
    // Rabenseifner already has all ppn ranks of a node on the network at once, so there the model sees no such win.)
    const Shape wide{64 * kMiB, 8, 4};
    CHECK(predict(m, wide, multileader(4, 1), Flavor::mpich) < predict(m, wide, Decision{}, Flavor::mpich));
}

TEST_CASE("small vectors and partitions across nodes: ARShim's recursive doubling", "[model]") {
    // The shim's rule (ARSHIM_INTERNODE=auto, shim/paths/internode.cpp), shared with the model.
    for (const Flavor f : {Flavor::mpich, Flavor::openmpi}) {
        CHECK(internode_step_auto(2, 8, 1, f) == InternodeStep::doubling);
        CHECK(internode_step_auto(1024, kInternodeDoublingMaxBytes, 1, f) == InternodeStep::doubling);
        CHECK(internode_step_auto(3, 64 * 1024, 1, f) == InternodeStep::ring);  // the ring's rule first
        CHECK(internode_step_auto(1, 8, 1, f) == InternodeStep::library);       // one node: no step
        CHECK(internode_step_auto(16, 4096, 16, f) == InternodeStep::library);  // 16 leaders: 64 KiB leave the node
        CHECK(internode_step_auto(16, 256, 16, f) == InternodeStep::doubling);
    }
    CHECK(internode_step_auto(1024, kInternodeDoublingMaxBytes + 1, 1, Flavor::mpich) == InternodeStep::library);
}

TEST_CASE("partitions Open MPI would send whole at every step: ARShim's reduce-scatter + allgather", "[model]") {
    // Open MPI 4.1's fixed rules at 64-127 ranks below 256 KiB: recursive doubling; 1 024-2 047 ranks at 2-16 KiB
    // too; 256-511 ranks below 4 KiB a reduce then a broadcast. MPICH reduce-scatters there: its own step stays.
    CHECK(ompi_algorithm(64, 4096) == 3);
    CHECK(ompi_algorithm(1024, 4096) == 3);
    CHECK(ompi_algorithm(256, 2048) == 2);
    CHECK(ompi_algorithm(16, 4096) == 6);
    // 64 x 28, 64 KiB: sixteen leaders of 4 KiB (64 KiB a node per step)
    CHECK(internode_step_auto(64, 4096, 16, Flavor::openmpi) == InternodeStep::rabenseifner);
    CHECK(internode_step_auto(64, 4096, 16, Flavor::mpich) == InternodeStep::library);
    CHECK(internode_step_auto(1024, 4096, 16, Flavor::openmpi) == InternodeStep::rabenseifner);
    CHECK(internode_step_auto(256, 2048, 16, Flavor::openmpi) == InternodeStep::rabenseifner);
    // Open MPI's own is Rabenseifner at 16 ranks from 4 KiB, and above 256 KiB at 64: the library's step.
    CHECK(internode_step_auto(16, 4096, 16, Flavor::openmpi) == InternodeStep::library);
    CHECK(internode_step_auto(64, 512 * 1024, 1, Flavor::openmpi) == InternodeStep::library);
    // Below 32 KiB a node, the whole vectors' bytes cost less than Rabenseifner's extra latencies: the library's.
    CHECK(internode_step_auto(64, 16 * 1024, 1, Flavor::openmpi) == InternodeStep::library);
    CHECK(internode_step_auto(64, 32 * 1024, 1, Flavor::openmpi) == InternodeStep::rabenseifner);
    // Below 8 nodes (the rig's measured rules): the library's.
    CHECK(internode_step_auto(4, 64 * 1024, 1, Flavor::openmpi) == InternodeStep::library);
    CHECK(!library_sends_whole_vectors(Flavor::openmpi, 4, 64 * 1024));
    CHECK(library_sends_whole_vectors(Flavor::openmpi, 8, 4096));
    CHECK(!library_sends_whole_vectors(Flavor::mpich, 64, 4096));
    // The model prices the step the shim takes: at 64 x 28, 64 KiB on an EDR-like machine, sixteen leaders on
    // ARShim's step cost less than on Open MPI's recursive doubling.
    MachineParams m = hand();
    m.alpha = 1e-6, m.net_bw = 12.5e9;
    const Shape s{64 * 1024, 28, 64};
    const double ours = predict(m, s, multileader(16, 1), Flavor::openmpi);
    CHECK(ours == Approx(predict(m, s, multileader(16, 1), Flavor::mpich)).epsilon(0.05));
    // The latency path at 4 nodes x 1, 8 B: the input copied (8 B at 1 ns) and two exchanges of alpha + 8 * 10 ns,
    // each reducing 8 B at 0.5 ns: 8e-9 + 2 * 1.0084e-5 = 2.0176e-5, under either library (its own allreduce is not
    // asked).
    const Decision latency = decision_for(Path::latency);
    CHECK(predict(hand(), Shape{8, 1, 4}, latency, Flavor::mpich) == Approx(2.0176e-5));
    CHECK(predict(hand(), Shape{8, 1, 4}, latency, Flavor::openmpi) == Approx(2.0176e-5));
    // At 256 nodes x 1 Open MPI's own takes a reduce then a broadcast (2 x 8 steps), the doubling 8 steps.
    CHECK(predict(hand(), Shape{8, 1, 256}, latency, Flavor::openmpi) <
          0.6 * native_time(hand(), Shape{8, 1, 256}, Flavor::openmpi));
}
