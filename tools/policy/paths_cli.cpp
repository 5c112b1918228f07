// `arshim-policy paths`: every path's kApplies and the multi-leader path's ring at one rank per node, evaluated from
// the same headers the shim and the tuner read, as JSON (tools/arshim/path_limits.json is its output).
#include "tools/policy/paths_cli.h"

#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>

#include "policy/cost_model.h"
#include "policy/path_rows.h"
#include "policy/routing_words.h"

namespace arshim::policy {

namespace {

using json = nlohmann::ordered_json;

const char* need_name(Need need) { return need == Need::one ? "one" : need == Need::several ? "several" : "any"; }

json applies_json(const Applies& a) {
    json ops = json::array(), classes = json::array();
    for (std::size_t i = 0; i < vocab::kOpCount; ++i)
        if (a.ops & (1u << i)) ops.push_back(vocab::op_name(static_cast<vocab::Op>(i)));
    for (std::size_t i = 0; i < vocab::kPolicyDtypeClassCount; ++i)
        if (a.classes & (1u << i)) classes.push_back(vocab::dtype_class_name(static_cast<vocab::DtypeClass>(i)));
    return json{{"max_bytes", a.max_bytes == kAnyBytes ? json(nullptr) : json(a.max_bytes)},
                {"ranks_per_node", need_name(a.ranks_per_node)},
                {"nodes", need_name(a.nodes)},
                {"contiguous_nodes", a.contiguous_nodes},
                {"ops", ops},
                {"datatypes", classes},
                {"shared_memory", a.shared_memory},
                {"library", a.library}};
}

}  // namespace

int run_paths() {
    json paths = json::object();
#define ARSHIM_PATH_APPLIES(name, Params) paths[#name] = applies_json(Params::kApplies);
    ARSHIM_PATH_ROWS(ARSHIM_PATH_APPLIES)
#undef ARSHIM_PATH_APPLIES
    // At one rank per node the multi-leader path with one leader is ARShim's ring over the nodes where its
    // inter-node step takes the ring (model::internode_ring_auto, shim/paths/multileader.cpp), elsewhere the library's
    // allreduce behind a copy: the node counts (up to 4096) and the smallest size where it runs.
    json ring_nodes = json::array();
    uint32_t first = 0;
    for (uint32_t nodes = 2; nodes <= 4096; ++nodes)
        if (model::internode_ring_auto(nodes, kAnyBytes)) {
            ring_nodes.push_back(nodes);
            if (first == 0) first = nodes;
        }
    uint64_t ring_from = 0;
    for (uint64_t bytes = 1; first != 0 && bytes <= (uint64_t{1} << 40); bytes *= 2)
        if (model::internode_ring_auto(first, bytes)) {
            ring_from = bytes;
            break;
        }
    // One line per path, so that a change to a spec is a one-line change to the file.
    std::cout << "{\n \"about\": "
              << json("Where each path applies (policy/paths/<path>.h kApplies, policy/path_spec.h), written by "
                      "`arshim-policy paths`; do not edit: regenerate with `arshim-policy paths > "
                      "tools/arshim/path_limits.json`")
                     .dump()
              << ",\n \"paths\": {";
    const char* separator = "\n";
    for (const auto& [name, applies] : paths.items()) {
        std::cout << separator << "  " << json(name).dump() << ": " << applies.dump();
        separator = ",\n";
    }
    std::cout << "\n },\n \"multileader_one_rank_ring\": "
              << json{{"nodes", ring_nodes}, {"min_bytes", ring_from}}.dump() << "\n}\n";
    return 0;
}

}  // namespace arshim::policy
