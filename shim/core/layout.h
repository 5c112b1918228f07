// A communicator's node layout (which node each rank is on, ppn, node order), computed without communication from
// the world's node map, which MPI_Init's interception learns once (shim/core/world_nodes.h). A new communicator's
// context then costs no collective call: its first served call is not an outlier (docs/paths.md "New
// communicators"), and its node communicator is made only by a path that uses it. Pure (unit-tested without MPI).
#pragma once

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace arshim {

struct Layout {
    std::vector<int> node_of_rank;  // comm rank -> node index, nodes numbered in order of their lowest comm rank
    std::vector<int> node_sizes;    // node index -> ranks on that node
    int node_index = 0;
    int node_count = 1;
    int node_rank = 0;  // my rank among my node's ranks, in comm rank order
    int node_size = 1;
    int ppn_min = 1;
    int ppn_max = 1;
    bool ppn_uniform = true;
    bool nodes_contiguous = true;  // every node's ranks are consecutive in the communicator
};

// The layout of a communicator whose rank r is on node `node_id_of_rank[r]` (any ids, equal for ranks of one node);
// `rank` is this process's rank.
inline Layout layout_from_node_ids(const std::vector<int>& node_id_of_rank, int rank) {
    Layout l;
    const auto size = node_id_of_rank.size();
    l.node_of_rank.assign(size, 0);
    std::unordered_map<int, int> index_of_id;
    index_of_id.reserve(size);
    for (std::size_t r = 0; r < size; ++r) {
        const auto [it, fresh] = index_of_id.emplace(node_id_of_rank[r], static_cast<int>(index_of_id.size()));
        l.node_of_rank[r] = it->second;
        if (fresh) l.node_sizes.push_back(0);
        if (static_cast<int>(r) == rank) l.node_rank = l.node_sizes[static_cast<std::size_t>(it->second)];
        ++l.node_sizes[static_cast<std::size_t>(it->second)];
    }
    if (size == 0) return l;
    l.node_count = static_cast<int>(l.node_sizes.size());
    l.node_index = l.node_of_rank[static_cast<std::size_t>(rank)];
    l.node_size = l.node_sizes[static_cast<std::size_t>(l.node_index)];
    l.ppn_min = *std::min_element(l.node_sizes.begin(), l.node_sizes.end());
    l.ppn_max = *std::max_element(l.node_sizes.begin(), l.node_sizes.end());
    l.ppn_uniform = l.ppn_min == l.ppn_max;
    for (std::size_t r = 1; r < size; ++r)
        if (l.node_of_rank[r] != l.node_of_rank[r - 1] && l.node_of_rank[r] != l.node_of_rank[r - 1] + 1)
            l.nodes_contiguous = false;
    return l;
}

}  // namespace arshim
