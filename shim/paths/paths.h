// The host paths (shim/paths/): each serves a resolved Call with PMPI_* only, or declines with a reason. The SHARP
// path is in shim/sharp/path.h. Each path keeps its per-communicator state in its own context slot.
#pragma once

#include "shim/core/call.h"

namespace arshim {

PathOutcome run_pipelined(const Call& call);
PathOutcome run_multileader(const Call& call);

// Whether the multi-leader path's leaders of `nodes` nodes take ARShim's ring for a partition of `partition_bytes`
// (ARSHIM_INTERNODE; auto: policy::model::internode_ring_auto). Identical on every leader: the node count, the setting
// and the partition's size are. The node window sizes its chunk by it (node_shm.cpp).
bool internode_takes_ring(int nodes, uint64_t partition_bytes);
// Floating-point sums in communicator rank order (ARSHIM_REPRODUCIBLE, shim/paths/reproducible.cpp); also any op
// whose n-ary kernel it is given.
PathOutcome run_reproducible(const Call& call);

}  // namespace arshim
