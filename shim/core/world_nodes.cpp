#include "shim/core/world_nodes.h"

#include <algorithm>

#include "shim/base/mpi_util.h"
#include "shim/base/node_key.h"

namespace arshim {

std::vector<int> node_ids_of(MPI_Comm comm) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
#if defined(ARSHIM_FLAVOR_SMPI)
    // SMPI's ranks are actors of one process on one real host: the node key would make every simulated host one
    // node. The simulated hosts are SMPI's MPI_COMM_TYPE_SHARED groups.
    {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        MPI_Comm node = MPI_COMM_NULL;
        comm_split_type_twice(comm, MPI_COMM_TYPE_SHARED, rank, &node);
        int lowest = rank;
        if (node != MPI_COMM_NULL) {
            MPI_Group group = MPI_GROUP_NULL, parent = MPI_GROUP_NULL;
            PMPI_Comm_group(node, &group);
            PMPI_Comm_group(comm, &parent);
            const int zero = 0;
            PMPI_Group_translate_ranks(group, 1, &zero, parent, &lowest);
            PMPI_Group_free(&group);
            PMPI_Group_free(&parent);
            PMPI_Comm_free(&node);
        }
        std::vector<int> ids(static_cast<std::size_t>(size));
        PMPI_Allgather(&lowest, 1, MPI_INT, ids.data(), 1, MPI_INT, comm);
        return ids;
    }
#endif
    const NodeKey mine = node_key();
    const unsigned long long sent[2] = {mine.high, mine.low};
    std::vector<unsigned long long> keys(2 * static_cast<std::size_t>(size));
    // Balanced (every pair sends as much as it receives): leaves the message parity of shim/base/mpi_util.h alone.
    PMPI_Allgather(sent, 2, MPI_UNSIGNED_LONG_LONG, keys.data(), 2, MPI_UNSIGNED_LONG_LONG, comm);
    std::vector<int> ids(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
        int lowest = r;
        for (int q = 0; q < r; ++q)
            if (keys[2 * static_cast<std::size_t>(q)] == keys[2 * static_cast<std::size_t>(r)] &&
                keys[2 * static_cast<std::size_t>(q) + 1] == keys[2 * static_cast<std::size_t>(r) + 1]) {
                lowest = q;
                break;
            }
        ids[static_cast<std::size_t>(r)] = lowest;
    }
    return ids;
}

std::vector<int> probe_world_nodes(int64_t virtual_ppn, int world_rank, int world_size) {
    (void)world_rank;
    std::vector<int> nodes(static_cast<std::size_t>(world_size), 0);
    if (virtual_ppn > 0) {
        for (int r = 0; r < world_size; ++r) nodes[static_cast<std::size_t>(r)] = r - r % static_cast<int>(virtual_ppn);
        return nodes;
    }
    return node_ids_of(MPI_COMM_WORLD);
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
