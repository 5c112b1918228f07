// ARShim's own inter-node steps: how a leader that holds its node's reduced vector (or a partition of it) combines it
// with the other nodes' leaders, on a communicator of one leader per node that is ARShim's own (no user message can
// match its point-to-point traffic). Four ways (ARSHIM_INTERNODE, policy/config.cpp):
//  - library: the MPI library's allreduce with the call's library op;
//  - ring: ARShim's ring, reduce-scatter then allgather, at the bandwidth bound for any node count (large partitions
//    on node counts that are not a power of two);
//  - doubling: ARShim's recursive doubling, log2 h exchanges of the whole vector (small partitions, where the
//    latencies decide: the libraries' own choice there is not always it, docs/scale.md "Small calls at hundreds of
//    nodes");
//  - rabenseifner: ARShim's reduce-scatter + allgather, 2 log2 h exchanges of halving then doubling blocks (where the
//    library would send the whole vector at every step: Open MPI 4.1's fixed rules on some node counts, docs/scale.md
//    "Third pass").
// The latency path (shim/paths/latency.cpp) and the multi-leader path (shim/paths/multileader.cpp) take their
// inter-node step from here; which one is policy::model::internode_step_auto's answer unless the setting forces one,
// so the cost model prices the step the shim runs.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "policy/cost_model.h"
#include "policy/settings.h"
#include "shim/paths/call.h"

namespace arshim {

using InternodeStep = policy::model::InternodeStep;

// The step the leaders of `nodes` nodes take for a partition of `partition_bytes` when `leaders` of each node send
// theirs at once (ARSHIM_INTERNODE = `mode`). Decided from values identical on every leader (the node count, the
// setting, the partition's size, the leader count), so every leader takes the same one.
InternodeStep internode_step(InternodeMode mode, int nodes, uint64_t partition_bytes, int leaders = 1);

// ARShim's ring over `comm` (h members): `data` (count elements of the call's type) becomes the reduction over every
// member, the same bits on every member. `scratch` holds one block, ceil(count / h) elements.
int ring_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch);

// ARShim's recursive doubling over `comm`: the same contract; `scratch` holds count elements. The partners of every
// exchange reduce the lower-ranked half's vector first, so both compute the same bits and every member ends with
// them; a member count that is not a power of two first folds pairs (2i, 2i+1), i < h - 2^floor(log2 h), into the
// odd member and hands the result back at the end (as MPICH does).
int doubling_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch);

// ARShim's reduce-scatter + allgather over `comm`: the same contract; `scratch` holds count elements. Block b of
// pof2 = 2^floor(log2 h) is reduced by member number b alone, in an order fixed by the layout, and copied to every
// member; a member count that is not a power of two folds pairs as the doubling does.
int rabenseifner_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch);

// The step `step` over `comm` (the library's allreduce in place, or one of ARShim's above).
int run_internode_step(InternodeStep step, char* data, std::size_t count, const Call& call, MPI_Comm comm,
                       char* scratch);

}  // namespace arshim
