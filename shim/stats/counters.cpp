#include "shim/stats/counters.h"

#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <map>
#include <memory>
#include <mutex>
#include <vector>


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

}  // namespace

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
#if defined(__x86_64__) && !defined(ARSHIM_FLAVOR_SMPI)
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
void set_no_replay() { g_flags.fetch_or(kNoReplay, std::memory_order_relaxed); }
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
        t.rows.for_each([&](const RowId& id, const Cell& cell) {
            totals.calls[static_cast<std::size_t>(unpack(id.key).path)] += cell.calls;
        });
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

