// The cost models' machine and call shape (policy/cost_model.h), in a header of their own so that a path's spec
// header (policy/paths/<path>.h) can define its cost next to its parameters without including the whole model.
#pragma once

#include <cstdint>

namespace arshim::policy {
enum class Flavor : uint8_t;
}

namespace arshim::policy::model {

// The machine, in SI units. Defaults are a plausible small cluster (10 Gbit/s links); they are a starting point
// for fitting, not a claim about any machine.
struct MachineParams {
    double copy_bw = 8e9;         // intra-node memcpy bandwidth, bytes/s (1/b' of seed 001 Eq. 7)
    double intra_latency = 1e-6;  // a': fixed cost of one intra-node step (a shared-memory message, a flag wait), s
    double gamma = 4e9;           // reduction throughput of the op, bytes of input reduced per second (1/c)
    double alpha = 10e-6;         // inter-node latency per message, s (a of seed 001, alpha of seed 000)
    double net_bw = 1.2e9;        // inter-node bandwidth of one stream, bytes/s (1/b, 1/beta)
    double stream_gain = 2;       // s >= 1: how far l concurrent streams of one node can raise its aggregate
                                  // bandwidth, B(l) = net_bw * l / (1 + (l - 1) / s) (see node_bandwidth())
    double intra_bw = 0;          // the libraries' point-to-point messages within a node, bytes/s; 0 (a real machine,
                                  // the tuner's fit): two copies at copy_bw, a shared-memory transport. A simulated
                                  // node moves them over its loopback at its own rate, uncharged (arshim simulate)
    // A simulated network's corrections by message size (arshim simulate --network: SMPI's smpi/lat-factor,
    // smpi/bw-factor, smpi/os and smpi/or). A message of b bytes takes the last section whose `above` is below b
    // (arshim simulate places the bounds where SMPI applies them, network.py sections) and costs alpha (intra_latency
    // within a node) x lat + overhead + overhead_per_byte x b, moving at net_bw (copy_bw) x bw. No section (a real
    // machine's parameters, the tuner's fit): factors 1, no overhead.
    struct SizeSection {
        double above = 0;              // bytes
        double lat = 1;                // x alpha, x intra_latency
        double bw = 1;                 // x net_bw, x copy_bw
        double overhead = 0;           // s per message (sender's plus receiver's)
        double overhead_per_byte = 0;  // s per byte
    };
    static constexpr int kMaxSizeSections = 64;
    int size_sections = 0;  // sorted by `above`, ascending
    SizeSection sections[kMaxSizeSections] = {};
};

// A call's shape: message size and block placement of ppn ranks on each of `nodes` nodes (rank r on node r / ppn).
struct Shape {
    uint64_t bytes = 0;
    int ppn = 1;
    int nodes = 1;
};

// The library's own MPI_Allreduce, as the algorithms it picks by size (cost_model.cpp says which, with the source
// they come from).
double native_time(const MachineParams& m, const Shape& shape, Flavor flavor);

// One rank per node of `nodes` combining `bytes` in the inter-node step ARSHIM_INTERNODE=auto takes for them
// (internode_step_auto, policy/cost_model.h): ARShim's recursive doubling or ring, or the library's allreduce.
double internode_time(const MachineParams& m, int nodes, uint64_t bytes, Flavor flavor);

}  // namespace arshim::policy::model
