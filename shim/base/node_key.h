// Which processes share a node's memory, as ARShim's node segments need it (shim/paths/node_segment.h), found by
// ARShim itself rather than by the library's MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Debian's MPICH 5.0.2 split
// two ranks on one host into two "nodes" of one (also in a plain program; MPICH 4.2.1 on the same machine did not),
// so the node paths declined there. Two processes get the same key exactly when they run on the same kernel (its
// boot id), under the same host name, see the same /dev/shm (its device and inode: another container's tmpfs
// differs) and the same IPC namespace: what a segment created by one is seen by the other takes. MPI-free.
#pragma once

#include <cstdint>

namespace arshim {

struct NodeKey {
    uint64_t high = 0, low = 0;  // two independent 64-bit digests of the same facts
    bool operator==(const NodeKey& o) const { return high == o.high && low == o.low; }
};

NodeKey node_key();  // this process's key, computed once

}  // namespace arshim
