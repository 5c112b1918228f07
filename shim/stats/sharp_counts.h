// Counters of the SHARP path, per process: how each sharp-routed call ran (LLT, SAT or the host path, and why the
// host path), plus group and registration-cache events. Atomic and relaxed: a few increments per call, any thread.
// Queried with arshim_sharp_calls("llt" | "sat" | "host" | ...) (exported; tests use it through dlsym). The
// statistics log sums them over ranks into its "sharp" object (shim/stats/report.cpp); each call's row also says how it
// ran (stats::SharpRun). Per-call counters count on every rank of the communicator, like every call count of the
// log; operations, retries and registrations only on the SHARP members (leaders) that make them.
#pragma once

#include <atomic>
#include <cstdint>
#include <iterator>

#include "policy/routing_words.h"

namespace arshim::sharp {

enum class Counter : uint8_t {
    llt,               // calls completed by SHARP low-latency aggregation
    sat,               // calls completed by SHARP streaming aggregation
    host,              // sharp-routed calls completed (at least partly) on the host path, for one of:
    host_unsupported,  //   datatype / op SHARP does not support (no SHARP type, or not in the agreed caps)
    host_no_sat,       //   SAT chosen but the group has none (caps) or its lock was denied
    host_no_llt,       //   LLT chosen but the group has none (caps), or an element exceeds its payload
    host_sat_lock,     //   SAT lock still refused after the retries, or the back-off that follows repeated refusals
    host_error,        //   a SHARP error: the call completed on the host, SHARP is now disabled on that communicator
    unavailable,       // calls declined to native (reason sharp_unavailable etc.): off, library missing, no group
    sat_lock_retries,  // agreed retries of a chunk whose SAT lock was refused
    ops,               // SHARP allreduce operations posted (LLT and SAT pieces)
    groups,            // SHARP groups created (group events are counted once per communicator, by its rank 0)
    group_failures,    // SHARP group creations that failed (agreed)
    disabled,          // groups disabled after a SHARP error
    reg_hits,          // registration cache (user buffers)
    reg_misses,
    reg_evictions,
    reg_invalidations, //   entries dropped because their memory was unmapped
    reg_bounced,       //   SAT pieces sent through ARShim's registered buffer (user memory not registrable)
    reg_failures,      //   groups whose own buffers could not be registered (no SAT; once per communicator)
    count
};

inline std::atomic<uint64_t> g_counters[static_cast<std::size_t>(Counter::count)];

inline void count(Counter c, uint64_t n = 1) {
    g_counters[static_cast<std::size_t>(c)].fetch_add(n, std::memory_order_relaxed);
}
// Names as arshim_sharp_calls() (shim/entry/query.cpp) and the statistics log spell them.
inline constexpr const char* kCounterNames[] = {
    "llt",         "sat",           "host",          "host_unsupported", "host_no_sat",
    "host_no_llt", "host_sat_lock", "host_error",    "unavailable",      "sat_lock_retries",
    "ops",         "groups",        "group_failures", "disabled",        "reg_hits",
    "reg_misses",  "reg_evictions", "reg_invalidations", "reg_bounced",  "reg_failures"};
static_assert(std::size(kCounterNames) == static_cast<std::size_t>(Counter::count), "one name per counter");

inline uint64_t read(Counter c) { return g_counters[static_cast<std::size_t>(c)].load(std::memory_order_relaxed); }
inline const char* counter_name(Counter c) { return vocab::name_of(kCounterNames, c); }

}  // namespace arshim::sharp
