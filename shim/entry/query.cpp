// ARShim's query API, for tests and tools (found with dlsym; programs need not use it). Exported like the MPI entry
// points; each only reads or sets the statistics of this process.
#include <cstring>

#include "arshim_config.h"
#include "policy/settings.h"
#include "shim/core/runtime.h"
#include "shim/entry/export.h"
#include "shim/stats/sharp_counts.h"
#include "shim/stats/counters.h"

ARSHIM_EXPORT const char* arshim_version(void) { return ARSHIM_VERSION; }

// The MPI flavor whose policy rules this library decides with: "mpich" or "openmpi" (under SMPI, the selector's).
ARSHIM_EXPORT const char* arshim_mpi_flavor(void) { return arshim::mpi_flavor(); }

// Seconds ARShim's set-up in MPI_Init took on this rank: "total" (all of it: the start-up check, the settings,
// policy and cache broadcasts, the world's node map...), "check" (the start-up check alone) or "nodes" (the world's
// node map: MPI_Comm_split_type twice and an allgather, shim/core/world_nodes.h); -1 for another stage
// or before MPI_Init. Measured with MPI_Wtime (simulated time under SMPI; docs/scale.md "Start-up at scale").
ARSHIM_EXPORT double arshim_startup_seconds(const char* stage) {
    const arshim::Runtime* rt = arshim::runtime_if_started();
    if (rt == nullptr || stage == nullptr) return -1;
    if (std::strcmp(stage, "total") == 0) return rt->startup_seconds;
    if (std::strcmp(stage, "check") == 0) return rt->check_seconds;
    if (std::strcmp(stage, "nodes") == 0) return rt->nodes_seconds;
    return -1;
}

// Calls this process sent to `path` ("native", "pipelined", "multileader", "sharp", "reproducible", "latency"), or -1 for an
// unknown name.
ARSHIM_EXPORT long long arshim_path_calls(const char* path) {
    const arshim::stats::PathTotals totals = arshim::stats::path_totals();
    for (std::size_t p = 0; p < arshim::stats::kPathCount; ++p)
        if (std::strcmp(path, arshim::vocab::kPathNames[p]) == 0)
            return static_cast<long long>(totals.calls[p]);
    return -1;
}

// Native calls this process counted for `reason` (see shim/stats/counters.h), or -1 for an unknown name.
ARSHIM_EXPORT long long arshim_reason_calls(const char* reason) {
    const arshim::stats::PathTotals totals = arshim::stats::path_totals();
    for (std::size_t r = 0; r < arshim::stats::kReasonCount; ++r)
        if (std::strcmp(reason, arshim::vocab::kReasonNames[r]) == 0)
            return static_cast<long long>(totals.reasons[r]);
    return -1;
}

// Turns call timing on or off at run time (off also stops call-site recording); returns the previous state. Set at
// start from ARSHIM_STATS / ARSHIM_STATS_SUMMARY: on when a log or a summary will report times.
ARSHIM_EXPORT int arshim_stats_set_timed(int on) {
    const bool was = arshim::stats::g_flags.load(std::memory_order_relaxed) & arshim::stats::kTimed;
    arshim::stats::set_timed(on != 0);
    return was ? 1 : 0;
}

// Turns call-site recording on or off at run time (benchmarks compare both in one run); returns the previous
// state. ARSHIM_STATS_CALLSITES sets the initial state.
ARSHIM_EXPORT int arshim_stats_set_callsites(int on) {
    const bool was = arshim::stats::g_flags.load(std::memory_order_relaxed) & arshim::stats::kCallsites;
    arshim::stats::set_callsites(on != 0);
    return was ? 1 : 0;
}

// Sets the sampling period of call timing (ARSHIM_STATS_SAMPLE: one call in `n` per statistics row is timed, after
// each row's first calls) at run time, for benchmarks that compare periods in one run; returns the previous period,
// or -1 (and changes nothing) when `n` is outside the setting's range. A row's countdown already running finishes
// first.
ARSHIM_EXPORT int arshim_stats_set_sample(int n) {
    if (!arshim::ProcessSettings::sample_period_allowed(n)) return -1;
    return static_cast<int>(arshim::stats::g_sample_period.exchange(static_cast<uint32_t>(n), std::memory_order_relaxed));
}

// SHARP path counters of this process: "llt", "sat", "host" (calls, by how they completed), the host_* reasons,
// "unavailable", and the group / registration events of shim/stats/sharp_counts.h. -1 for an unknown kind.
ARSHIM_EXPORT long long arshim_sharp_calls(const char* kind) {
    if (kind == nullptr) return -1;
    for (std::size_t c = 0; c < static_cast<std::size_t>(arshim::sharp::Counter::count); ++c)
        if (std::strcmp(kind, arshim::sharp::kCounterNames[c]) == 0)
            return static_cast<long long>(arshim::sharp::read(static_cast<arshim::sharp::Counter>(c)));
    return -1;
}
