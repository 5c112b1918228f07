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

// What online tuning's candidates (a path's candidate_rows and tune_neighbours, beside its parameters) may depend on:
// values identical on every rank of the communicator (policy/tune_candidates.h calls it tune::KeyFacts).
struct TuneFacts {
    uint64_t bytes = 0;  // the call's size (the key's first call)
    int ppn_min = 1;     // the smallest node's rank count
    int ppn_max = 1;
    int nodes = 1;
    Flavor flavor{};     // Flavor::mpich
    // A floating-point SUM or PROD: its bits depend on the order of the reduction, which differs between paths.
    bool order_sensitive = false;
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
    // The path moves the message across nodes in pieces whose best size depends on the links (pipelined: segments;
    // multi-leader: partitions in pipeline_k pieces): guard tries each library's small segments against it
    // (policy/paths/pipelined.h).
    bool pieces_across_nodes = false;
};

// ---- where a path applies (issue 55): what its run function needs to serve a call rather than decline it ----------
// Each path's kApplies, beside its parameters. The tuner reads it (policy/tuned_table.cpp: serves, sensible_at), and
// docs/architecture.md "Where to add" says what a new path declares. What depends on the path's parameters is in
// functions beside them (serves_layout, sensible_at, internode_step_changes, fit_to_layout; the defaults below say
// "no further condition").

enum class Need : uint8_t { any, one, several };

constexpr uint64_t kAnyBytes = ~uint64_t{0};
constexpr uint32_t kAllDtypes = (1u << vocab::kPolicyDtypeClassCount) - 1;  // bit per DtypeClass
constexpr uint32_t kAllOps = (1u << vocab::kOpCount) - 1;                    // bit per vocab::Op
constexpr uint32_t op_bit(vocab::Op op) { return 1u << static_cast<unsigned>(op); }
constexpr uint32_t class_bit(vocab::DtypeClass c) { return 1u << static_cast<unsigned>(c); }

struct Applies {
    uint64_t max_bytes = kAnyBytes;    // larger calls decline (buffer_too_large)
    Need ranks_per_node = Need::any;   // several: at one rank per node it declines, or is the library's own behind a
                                       // copy (the tuner does not weigh it there)
    Need nodes = Need::any;            // several: declines on one node; one: serves one node only
    bool contiguous_nodes = false;     // some of its algorithms need every node's ranks consecutive in the
                                       // communicator (elsewhere it takes another one)
    uint32_t ops = kAllOps;            // the ops it serves (bit per vocab::Op)
    uint32_t classes = kAllDtypes;     // the datatype classes it serves (bit per DtypeClass)
    bool shared_memory = false;        // needs node shared memory (declines shm_unavailable without it)
    bool library = false;              // needs a library loaded at run time (declines <name>_unavailable without it)
};

// Whether the tuner's model may weigh a decision of this path at `ppn` ranks per node, beyond Applies (default: yes).
template <typename P>
bool serves_layout(const P&, uint32_t /*ppn*/) { return true; }
// Whether the tuner measures (and its model may choose) a decision of this path at `bytes`, beyond Applies'
// max_bytes (default: yes).
template <typename P>
bool sensible_at(const P&, uint64_t /*bytes*/) { return true; }
// Whether the path's inter-node step is another algorithm on `to_nodes` than on `from_nodes` for a call of `bytes` at
// `ppn`: then what was measured on one node count does not carry to the other (default: never).
template <typename P>
bool internode_step_changes(const P&, uint32_t /*from_nodes*/, uint32_t /*to_nodes*/, uint32_t /*ppn*/,
                            uint64_t /*bytes*/) {
    return false;
}
// Online tuning's candidates of this path are brought to the key's layout before they are compared (default: as they
// are).
template <typename P>
void fit_to_layout(P&, const TuneFacts&) {}

// ---- online tuning's first stage: the candidates a path offers against the policy's choice (docs/tuning.md) -------

// What a candidate row sees of the policy's choice: its path's traits, and its parameters when it is this row's path.
template <typename P>
struct Chosen {
    const P* own;        // the choice's parameters when it is on this path, else nullptr
    PathTraits traits;   // the choice's path's
};

// One kind of candidate a path offers (its candidate_rows, beside its parameters): when it applies to the policy's
// choice, and its parameters. A variant keeps the choice's rule and evidence (it is the choice, changed); otherwise
// the candidate is a new decision with the choice's kernel (the op handed to MPI is the policy's choice too).
template <typename P>
struct CandidateRow {
    const char* name;   // for the docs and `arshim policy explain`
    bool guard, online;  // the modes it applies in
    int place;          // its place among every path's rows: the order every rank tries them in
    bool variant;       // the policy's choice, changed (else a new decision)
    bool (*applies)(const Chosen<P>& chosen, const TuneFacts& facts);
    P (*make)(const Chosen<P>& chosen, const TuneFacts& facts);
};
// A path's rows (default: none); a path that offers candidates declares `candidate_rows(const P*)` beside them.
template <typename P>
const std::array<CandidateRow<P>, 0>& candidate_rows(const P*) {
    static constexpr std::array<CandidateRow<P>, 0> none{};
    return none;
}

// A set bit per key (in key-table order) that a rule or the environment wrote: what a spec's finish() needs to know
// when keys interact (pipelined: segment_bytes wins over segments).
using KeyMask = uint32_t;

}  // namespace arshim::policy
