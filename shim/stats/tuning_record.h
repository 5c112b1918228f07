// One decision online tuning made (shim/modes/online.h), as the statistics log's "tuning" section and the tuning
// cache record it: the key, what was chosen, the policy's choice, and every candidate's agreed figures. Data, not
// text: the log writes the decisions as objects and their text forms beside them.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "policy/decision.h"

namespace arshim::stats {

struct TunedCandidate {
    policy::Decision decision;
    float median_us = 0, spread_us = 0;  // agreed: the largest over the ranks
    bool declined = false;               // its path declined (agreed): no figures
    int stage = 0;                       // 0: the first stage (direction), 1: online's second (the winner's neighbours)
};

struct TuningRecord {
    uint32_t bucket = 0;
    uint32_t ppn = 0, nodes = 0, comm_size = 0;
    vocab::DtypeClass dclass = vocab::DtypeClass::other;
    kernels::Op op = kernels::Op::sum;
    policy::Decision chosen, policy_choice;
    float chosen_us = 0, policy_us = -1, native_us = -1;  // agreed medians (-1: not measured or declined)
    std::vector<TunedCandidate> candidates;
};

}  // namespace arshim::stats
