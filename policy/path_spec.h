// What every path component declares about itself, MPI-free (docs/architecture.md "Where to add"): a typed
// parameter struct and its key table. From the key table alone the policy reader reads a rule's parameters, the one
// writer writes them (policy/rule_writer.h), describe_decision() names them, the ARSHIM_* overrides set them, and two
// decisions are compared. A path's spec header (policy/paths/<path>.h) holds its struct, keys, cost and tuning
// neighbours; its run function is in shim/paths/; its row is in policy/path_rows.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/vocabulary.h"
#include "policy/config.h"

namespace arshim::policy {

// What a path's cost function (path_cost, declared beside each path's parameters) sees; policy/cost_model.h.
enum class Flavor : uint8_t;
namespace model {
struct MachineParams;
struct Shape;
}  // namespace model

// What a path's tuning neighbours (tune_neighbours, beside each path's parameters) may depend on: values identical on
// every rank of the communicator.
struct TuneFacts {
    uint64_t bytes = 0;
    int ppn_min = 1;  // the smallest node's rank count
    int nodes = 1;
};
// The most neighbours a path offers for one winner.
constexpr int kMaxNeighbours = 4;

// How a parameter is written: a count (an integer), a size (bytes: "64K" in text, an integer or "64K" in TOML), or
// one of a closed set of names.
enum class KeyKind : uint8_t { count, size, choice };

// One parameter of a path. `get` and `set` read and write it in the path's struct as a number (a choice as the index
// of its name in `words`).
template <typename P>
struct ParamKey {
    const char* name;            // the policy key; also the name in describe_decision()'s text
    KeyKind kind;
    int64_t min, max;            // allowed values (count, size)
    OptionId env;                // the ARSHIM_* variable that overrides it; OptionId::count: none
    const vocab::Words* words;   // choice: the names, in index order
    int64_t (*get)(const P&);
    void (*set)(P&, int64_t);
    bool (*shown)(const P&) = nullptr;  // whether the text form names it (nullptr: always)
};

// The properties of a path that are not parameters.
struct PathTraits {
    bool hands_ops_to_library = false;  // the decision's `kernel` (the op the path gives MPI) applies to it
    bool sums_in_rank_order = false;    // floating-point results are in communicator rank order on any layout
};

// A set bit per key (in key-table order) that a rule or the environment wrote: what a spec's finish() needs to know
// when keys interact (pipelined: segment_bytes wins over segments).
using KeyMask = uint32_t;

}  // namespace arshim::policy
