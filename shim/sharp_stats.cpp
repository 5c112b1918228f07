#include "shim/sharp_stats.h"

#include <cstring>

#include "shim/export.h"

namespace arshim::sharp {

namespace {
const char* const kNames[] = {"llt",           "sat",           "host",         "host_unsupported",
                              "host_no_sat",   "host_no_llt",   "host_sat_lock", "host_error",
                              "unavailable",   "sat_lock_retries", "ops",        "groups",
                              "group_failures", "disabled",     "reg_hits",      "reg_misses",
                              "reg_evictions", "reg_invalidations", "reg_bounced", "reg_failures"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<std::size_t>(Counter::count), "one name each");
}  // namespace

uint64_t read(Counter c) { return g_counters[static_cast<std::size_t>(c)].load(std::memory_order_relaxed); }
const char* counter_name(Counter c) { return kNames[static_cast<std::size_t>(c)]; }

}  // namespace arshim::sharp

// SHARP path counters of this process: "llt", "sat", "host" (calls, by how they completed), the host_* reasons,
// "unavailable", and the group / registration events of shim/sharp_stats.h. -1 for an unknown kind.
ARSHIM_EXPORT long long arshim_sharp_calls(const char* kind) {
    if (kind == nullptr) return -1;
    for (std::size_t c = 0; c < static_cast<std::size_t>(arshim::sharp::Counter::count); ++c)
        if (std::strcmp(kind, arshim::sharp::kNames[c]) == 0)
            return static_cast<long long>(arshim::sharp::read(static_cast<arshim::sharp::Counter>(c)));
    return -1;
}
