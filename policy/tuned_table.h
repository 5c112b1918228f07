// `arshim tune`'s decisions (docs/tuning.md "arshim tune"): from what the tuner measured under the user's launcher,
// fit the cost model (policy/model_fit.h), decide every size bucket of the measured layout from the measurements
// (a candidate only when it beats the library's allreduce by more than the noise measured with it), decide the
// layouts and sizes nobody measured from the model (marked predicted), and write the table with as few rules as
// reach the same decisions (policy/rule_merge.h). Pure: the driver (tools/tune/arshim_tune.py) runs the jobs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "policy/cost_model.h"
#include "policy/model_fit.h"

namespace arshim::policy::tuned {

// One candidate at one size, timed against the library's allreduce in the same run (quartiles over repetitions,
// each repetition the slowest rank's time), microseconds.
struct Measurement {
    uint32_t nodes = 1, ppn = 1;
    uint64_t bytes = 0;
    Decision decision;  // path native: the library's allreduce alone
    double p25_us = 0, median_us = 0, p75_us = 0;
    double native_p25_us = 0, native_us = 0, native_p75_us = 0;
    // 0: the sweep's launch; 1: a second launch the tuner makes to confirm a win on a short call (a launch's state
    // moves short calls by more than most wins on the same machine: docs/tuning.md "On the tuned shape itself"). A
    // candidate wins only where it beats native beyond the noise in a round and is faster than native in every round
    // measured there.
    uint32_t launch_round = 0;
};

struct Request {
    Flavor flavor = Flavor::mpich;
    std::vector<Measurement> measured;
    std::vector<uint32_t> predict_nodes;  // layouts decided by the model too (with every measured and listed ppn)
    std::vector<uint32_t> predict_ppn;
    uint64_t max_bytes = uint64_t{64} << 20;  // the largest size bucket decided from below; beyond it, one rule
    // Machine parameters measured directly (arshim-tune-probe --params; model::ParamBit set in `probed`): the fit
    // starts from them and stays near them. The other fields keep MachineParams' defaults as the fit's start.
    model::MachineParams probed_params;
    unsigned probed = 0;
    std::vector<std::pair<std::string, std::string>> origin;  // [origin] of the table (who, when, the command)
};

struct Result {
    std::string toml;
    model::MachineParams params;
    double median_error = 0;  // the fitted model's median relative error over the measurements
    int rules = 0, points_measured = 0, points_predicted = 0;
    int points_deferred = 0;  // layouts and sizes the model sees no win at: no rule, the rules after the table decide
    std::vector<std::string> notes;  // one line each: what the table decided and why, for the tuner's report
};

// Where a decision applies, as its path's spec says (policy/path_spec.h "where a path applies"):
// whether the model may weigh `d` at `ppn` ranks per node (candidates_for),
bool serves(const Decision& d, uint32_t ppn);
// whether the tuner measures (and the model may choose) `d` at this size,
bool sensible_at(const Decision& d, uint64_t bytes);
// whether `d`'s inter-node step is another algorithm on `to_nodes` than on `from_nodes` at this size and ppn (then a
// decision measured on `from_nodes` does not carry to `to_nodes`).
bool internode_step_changes(const Decision& d, uint32_t from_nodes, uint32_t to_nodes, uint32_t ppn, uint64_t bytes);

// The candidates the model weighs for a layout: every distinct measured choice that can serve it (multi-leader
// needs ppn > 1 and at most ppn leaders), and the library's allreduce.
std::vector<Decision> candidates_for(const std::vector<Measurement>& measured, uint32_t ppn);

// The options a measured layout (nodes, ppn) is decided among: candidates_for(ppn) and every other choice measured on
// that layout (the whole message as one MPI_Iallreduce at several ranks per node: measured, not left to the model).
std::vector<Decision> measured_options(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn);

// Sizes in [lo, hi] where the fitted model's fastest candidate for the layout changes (seed 001 §6: the model gives
// the direction, measurement the location): where the tuner measures next.
std::vector<uint64_t> crossover_sizes(const model::MachineParams& params, Flavor flavor, uint32_t nodes, uint32_t ppn,
                                      const std::vector<Decision>& candidates, uint64_t lo, uint64_t hi);

// Sizes between adjacent measured sizes of a layout whose measured decisions differ (their geometric middle, whole
// MPI_FLOAT elements): where the measurements themselves say the best choice changes.
std::vector<uint64_t> measured_changes(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn);

// The fitted parameters (the [model] keys of a tuned table) by name, and back; unknown names and values that are not
// positive and finite are ignored (the field keeps its default), and `found` (optional) gets the model::ParamBit of
// every field read.
std::vector<std::pair<std::string, double>> params_to_keys(const model::MachineParams& params);
model::MachineParams params_from_keys(const std::vector<std::pair<std::string, double>>& keys,
                                      unsigned* found = nullptr);

Result build(const Request& request);

}  // namespace arshim::policy::tuned
