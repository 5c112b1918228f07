#include "shim/stats.h"

#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "arshim_config.h"
#include "shim/export.h"

namespace arshim::stats {

namespace {

// Every thread's counters, kept alive until process exit so finalize (and the query API) can sum them.
std::mutex g_threads_mutex;
std::vector<std::unique_ptr<ThreadCounters>>& thread_blocks() {
    static auto* blocks = new std::vector<std::unique_ptr<ThreadCounters>>;  // never destroyed: exit-order safe
    return *blocks;
}

std::chrono::steady_clock::time_point g_clock_start;
uint64_t g_ticks_start = 0;

struct CommRecord {
    CommShape shape;
    uint64_t created = 0;  // contexts built with this id in this process
    uint64_t roots = 0;    // ... of which this process is rank 0 (summed over ranks: communicators created)
};
std::mutex g_comms_mutex;
std::map<uint64_t, CommRecord>& comm_registry() {
    static auto* comms = new std::map<uint64_t, CommRecord>;
    return *comms;
}

const char* const kReasonNames[kReasonCount + 1] = {
    "policy",           "zero_count",         "single_rank",      "one_rank_per_node", "derived_datatype", "user_op",
    "noncommutative_op", "unsupported_op_type", "intercommunicator", "path_unavailable", "nonuniform_ppn",
    "buffer_too_large", "shm_unavailable",    "sharp_unavailable", "served",
};

const char* const kDtypeNames[kDtypeCount] = {"float", "int", "other", "derived"};

const char* const kSharpRunNames[] = {"",           "llt",         "sat",           "host_unsupported",
                                      "host_no_sat", "host_no_llt", "host_sat_lock", "host_error"};
static_assert(sizeof(kSharpRunNames) / sizeof(kSharpRunNames[0]) == static_cast<std::size_t>(SharpRun::count),
              "one name each");

const char* const kOpLabels[kOpCount] = {"sum", "prod", "min", "max", "land", "lor", "lxor",
                                         "band", "bor", "bxor", "minloc", "maxloc", "other", "user"};

}  // namespace

const char* reason_name(Reason reason) {
    const auto i = static_cast<std::size_t>(reason);
    return i <= kReasonCount ? kReasonNames[i] : "?";
}
const char* dtype_name(Dtype dtype) {
    const auto i = static_cast<std::size_t>(dtype);
    return i < kDtypeCount ? kDtypeNames[i] : "?";
}
const char* op_label(uint8_t op) { return op < kOpCount ? kOpLabels[op] : "?"; }
const char* sharp_run_name(SharpRun run) {
    const auto i = static_cast<std::size_t>(run);
    return i < static_cast<std::size_t>(SharpRun::count) ? kSharpRunNames[i] : "?";
}

ThreadCounters* register_thread() {
    auto block = std::make_unique<ThreadCounters>();
    ThreadCounters* raw = block.get();
    {
        std::lock_guard<std::mutex> lock(g_threads_mutex);
        thread_blocks().push_back(std::move(block));
    }
    t_counters = raw;
    return raw;
}

void start_clock() {
#if defined(__x86_64__)
    // CPUID 0x80000007 EDX bit 8: invariant TSC (constant rate, runs in every C-state), synchronized across cores
    // by the kernel on such machines.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    g_use_tsc = __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) && (edx & (1u << 8));
#endif
    g_clock_start = std::chrono::steady_clock::now();
    g_ticks_start = ticks();
}

double seconds_per_tick() {
    if (!g_use_tsc) return 1e-9;  // steady_clock ticks are nanoseconds on Linux (libstdc++)
    auto elapsed = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_clock_start).count();
    };
    // A run shorter than 20 ms gives a poor ratio: extend the interval (once, at finalize).
    while (elapsed() < 0.02) {
    }
    const double seconds = elapsed();
    const uint64_t ticks_now = ticks();
    return ticks_now > g_ticks_start ? seconds / static_cast<double>(ticks_now - g_ticks_start) : 1e-9;
}

bool enabled() { return collecting(); }
void set_enabled(bool on) {
    if (on)
        g_flags.fetch_or(kCollect, std::memory_order_relaxed);
    else
        g_flags.fetch_and(static_cast<uint8_t>(~kCollect), std::memory_order_relaxed);
}
void set_callsites(bool on) {
    if (on)
        g_flags.fetch_or(kCallsites | kTimed, std::memory_order_relaxed);
    else
        g_flags.fetch_and(static_cast<uint8_t>(~kCallsites), std::memory_order_relaxed);
}
void set_timed(bool on) {
    if (on)
        g_flags.fetch_or(kTimed, std::memory_order_relaxed);
    else
        g_flags.fetch_and(static_cast<uint8_t>(~(kTimed | kCallsites)), std::memory_order_relaxed);
}

void for_each_thread(const std::function<void(const ThreadCounters&)>& fn) {
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    for (const auto& block : thread_blocks()) fn(*block);
}

PathTotals path_totals() {
    PathTotals totals;
    for_each_thread([&](const ThreadCounters& t) {
        for (const Row& row : t.rows)
            if (row.key != 0) totals.calls[static_cast<std::size_t>(unpack(row.key - 1).path)] += row.cell.calls;
        for (std::size_t p = 0; p < kPathCount; ++p)
            for (const Cell& cell : t.overflow[p]) totals.calls[p] += cell.calls;
        for (std::size_t r = 0; r < kReasonCount; ++r) totals.reasons[r] += t.reasons[r];
    });
    return totals;
}

void register_comm(uint64_t id, const CommShape& shape) {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    CommRecord& record = comm_registry()[id];
    record.shape = shape;
    ++record.created;
    if (shape.is_root) ++record.roots;
}

void for_each_comm(const std::function<void(uint64_t, const CommShape&, uint64_t, uint64_t)>& fn) {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    for (const auto& [id, record] : comm_registry()) fn(id, record.shape, record.created, record.roots);
}

}  // namespace arshim::stats

// --- query API for tests and tools (found with dlsym; programs need not use it) ---

ARSHIM_EXPORT const char* arshim_version(void) { return ARSHIM_VERSION; }

// Calls this process sent to `path` ("native", "pipelined", "multileader", "sharp"), or -1 for an unknown name.
ARSHIM_EXPORT long long arshim_path_calls(const char* path) {
    const arshim::stats::PathTotals totals = arshim::stats::path_totals();
    for (std::size_t p = 0; p < arshim::stats::kPathCount; ++p)
        if (std::strcmp(path, arshim::policy::path_name(static_cast<arshim::policy::Path>(p))) == 0)
            return static_cast<long long>(totals.calls[p]);
    return -1;
}

// Native calls this process counted for `reason` (see stats.h), or -1 for an unknown name.
ARSHIM_EXPORT long long arshim_reason_calls(const char* reason) {
    const arshim::stats::PathTotals totals = arshim::stats::path_totals();
    for (std::size_t r = 0; r < arshim::stats::kReasonCount; ++r)
        if (std::strcmp(reason, arshim::stats::reason_name(static_cast<arshim::stats::Reason>(r))) == 0)
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
