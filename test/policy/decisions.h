// Decisions for the policy tests, built in one line (cost model, rule merging).
#pragma once

#include <cstdint>

#include "policy/policy.h"

namespace arshim::policy::testing {

inline Decision pipelined(uint64_t segment_bytes, uint32_t window, KernelChoice kernel = KernelChoice::native) {
    Decision d;
    d.path = Path::pipelined;
    d.segment_bytes = segment_bytes;
    d.window = window;
    d.kernel = kernel;
    return d;
}

inline Decision multileader(uint32_t leaders, uint32_t pipeline_k) {
    Decision d;
    d.path = Path::multileader;
    d.leaders = leaders;
    d.pipeline_k = pipeline_k;
    return d;
}

}  // namespace arshim::policy::testing
