// Decisions for the policy tests, built and read in one line (cost model, rule merging, the reader, the policy).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "policy/policy.h"

namespace arshim::policy::testing {

// Parameter `name` of the decision's path (its key table), or -1 when that path has no such parameter.
inline int64_t param(const Decision& d, const char* name) {
    int64_t value = -1;
    for_each_key(d, [&](const KeyView& k) {
        if (std::strcmp(k.name, name) == 0) value = k.value;
    });
    return value;
}

// Sets parameter `name` of the decision's path; a test that sets a parameter its path lacks is wrong.
inline void set_param(Decision& d, const char* name, int64_t value) {
    const int index = key_index(d.path(), name);
    if (index < 0) throw std::logic_error(std::string(path_name(d.path())) + " has no parameter " + name);
    set_key(d, index, value);
}

inline Decision pipelined(uint64_t segment_bytes, uint32_t window, KernelChoice kernel = KernelChoice::native) {
    Decision d = decision_for(Path::pipelined);
    auto& p = d.get<PipelinedParams>();
    p.segment_bytes = segment_bytes;
    p.segments = 0;
    p.window = window;
    d.kernel = kernel;
    return d;
}

inline Decision multileader(uint32_t leaders, uint32_t pipeline_k) {
    Decision d = decision_for(Path::multileader);
    d.get<MultileaderParams>().leaders = leaders;
    d.get<MultileaderParams>().pipeline_k = pipeline_k;
    return d;
}

}  // namespace arshim::policy::testing
