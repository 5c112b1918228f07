#include "shim/core/world_nodes.h"

#include <algorithm>

#include "policy/config.h"
#include "shim/base/mpi_util.h"

namespace arshim {

std::vector<int> probe_world_nodes(const Config& config, int world_rank, int world_size) {
    std::vector<int> nodes(static_cast<std::size_t>(world_size), 0);
    const int64_t virtual_ppn = config.number(OptionId::virtual_ppn);
    if (virtual_ppn > 0) {
        for (int r = 0; r < world_size; ++r) nodes[static_cast<std::size_t>(r)] = r - r % static_cast<int>(virtual_ppn);
        return nodes;
    }
    MPI_Comm node = MPI_COMM_NULL;
    comm_split_type_twice(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, &node);  // twice: shim/base/mpi_util.h
    std::vector<int> lowest;
    int mine = world_rank;
    if (world_ranks_of(node, &lowest) && !lowest.empty()) mine = lowest.front();  // ordered by world rank (key)
    PMPI_Comm_free(&node);
    // Balanced (every pair sends as much as it receives): leaves the message parity of shim/base/mpi_util.h alone.
    PMPI_Allgather(&mine, 1, MPI_INT, nodes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    return nodes;
}

bool world_ranks_of(MPI_Comm comm, std::vector<int>* world_ranks) {
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int size = 0;
    PMPI_Group_size(group, &size);
    std::vector<int> ranks(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
    world_ranks->assign(static_cast<std::size_t>(size), MPI_UNDEFINED);
    PMPI_Group_translate_ranks(group, size, ranks.data(), world, world_ranks->data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    return std::find(world_ranks->begin(), world_ranks->end(), MPI_UNDEFINED) == world_ranks->end();
}

}  // namespace arshim
