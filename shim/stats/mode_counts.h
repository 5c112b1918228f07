// What the modes (shim/modes/) count for the statistics, per process: verify mode, the argument check, online tuning.
// Defined here, below the modes, so that the report reads them without including the modes; each mode's namespace is
// kept, so that the modes count as they always did. Atomic and relaxed: any thread, a few increments per call.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

namespace arshim::verify {
// Process-wide counts for the statistics (shim/stats/report_fields.h, section "verify").
inline std::atomic<uint64_t> g_calls{0};              // calls checked on this rank
inline std::atomic<uint64_t> g_mismatches{0};         // of those, calls whose result differed on this rank
inline std::atomic<uint64_t> g_library_bug_calls{0};  // checked calls that hit a known library bug (the library's
                                                       // own result is expected to differ there)
inline std::atomic<uint64_t> g_library_bug_differences{0};  // ... and did differ
inline std::atomic<uint64_t> g_unordered{0};          // elements no bound can judge (NaN on one side, under/overflow)
// The largest relative difference between a floating-point result and the library's, as double bits (a
// non-negative double's bits order like its value, so an atomic max on the bits works).
inline std::atomic<uint64_t> g_worst_relative_bits{0};
inline double worst_relative() {
    const uint64_t bits = g_worst_relative_bits.load(std::memory_order_relaxed);
    double value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}
}  // namespace arshim::verify

namespace arshim::argcheck {
inline std::atomic<uint64_t> g_checked{0};     // calls checked on this rank
inline std::atomic<uint64_t> g_mismatched{0};  // of those, calls whose arguments differed across ranks
}  // namespace arshim::argcheck

namespace arshim::tune {
// Process-wide counts for the statistics (section "tuning").
inline std::atomic<uint64_t> g_exploration_calls{0};
inline std::atomic<uint64_t> g_exploration_ns{0};  // time of those calls, this rank
inline std::atomic<uint64_t> g_decisions{0};       // keys decided on this rank
inline std::atomic<uint64_t> g_changed{0};         // ... for another choice than the policy's
}  // namespace arshim::tune
