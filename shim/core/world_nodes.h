// The world's node map (learned once, at MPI_Init) and a communicator's members as world ranks: what
// shim/core/layout.h computes a communicator's layout from.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace arshim {

// Collective over MPI_COMM_WORLD: world rank -> node id (the lowest world rank of its node). Nodes are the processes
// that share a node's memory (shim/base/node_key.h: ARShim's own test, not the library's MPI_Comm_split_type, which
// MPICH 5.0.2 got wrong), or every `virtual_ppn` (ARSHIM_VIRTUAL_PPN, when > 0) consecutive world ranks (then no
// communication).
std::vector<int> probe_world_nodes(int64_t virtual_ppn, int world_rank, int world_size);

// Collective over `comm` (one allgather of 16 bytes per rank): comm rank -> node id (the lowest comm rank of its
// node), by node_key().
std::vector<int> node_ids_of(MPI_Comm comm);

// The world ranks of `comm`'s members, in comm rank order (local: group translation). False if a member is not in
// MPI_COMM_WORLD (processes from MPI_Comm_spawn / connect): then every member sees one that is not, and all of them
// fall back to the collective layout alike.
bool world_ranks_of(MPI_Comm comm, std::vector<int>* world_ranks);

}  // namespace arshim
