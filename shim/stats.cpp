#include "shim/stats.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arshim_config.h"
#include "shim/export.h"
#include "shim/log.h"
#include "shim/runtime.h"

namespace arshim::stats {

namespace {

std::atomic<bool> g_enabled{true};

// Every thread's counters, kept alive until process exit so finalize (and the query API) can sum them.
std::mutex g_threads_mutex;
std::vector<std::unique_ptr<ThreadCounters>>& thread_blocks() {
    static auto* blocks = new std::vector<std::unique_ptr<ThreadCounters>>;  // never destroyed: exit-order safe
    return *blocks;
}

ThreadCounters* register_thread() {
    auto block = std::make_unique<ThreadCounters>();
    ThreadCounters* raw = block.get();
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    thread_blocks().push_back(std::move(block));
    return raw;
}

const char* const kReasonNames[kReasonCount] = {
    "policy",           "zero_count",         "single_rank",      "one_rank_per_node", "derived_datatype", "user_op",
    "noncommutative_op", "unsupported_op_type", "intercommunicator", "path_unavailable", "nonuniform_ppn",
    "buffer_too_large", "shm_unavailable",    "sharp_unavailable",
};

// Fixed-size arrays reduced across ranks at finalize (no gather of per-rank records: cheap at 10 000 ranks).
struct Flat {
    std::vector<unsigned long long> sums;  // calls, bytes per cell; reasons; reentrant
    std::vector<double> seconds;           // sum per cell
    std::vector<double> minima;            // min per cell (+inf when no calls)
    std::vector<double> maxima;
};

constexpr std::size_t kCells = kPathCount * kBucketCount;

Flat flatten(const ThreadCounters& c) {
    Flat f;
    f.sums.reserve(2 * kCells + kReasonCount + 1);
    for (std::size_t p = 0; p < kPathCount; ++p)
        for (std::size_t b = 0; b < kBucketCount; ++b) {
            const Cell& cell = c.cells[p][b];
            f.sums.push_back(cell.calls);
            f.sums.push_back(cell.bytes);
            f.seconds.push_back(cell.seconds);
            f.minima.push_back(cell.calls ? cell.min_seconds : 1e300);
            f.maxima.push_back(cell.max_seconds);
        }
    for (uint64_t r : c.reasons) f.sums.push_back(r);
    f.sums.push_back(c.reentrant);
    return f;
}

ThreadCounters unflatten(const Flat& f) {
    ThreadCounters c;
    std::size_t i = 0;
    for (std::size_t p = 0; p < kPathCount; ++p)
        for (std::size_t b = 0; b < kBucketCount; ++b, ++i) {
            Cell& cell = c.cells[p][b];
            cell.calls = f.sums[2 * i];
            cell.bytes = f.sums[2 * i + 1];
            cell.seconds = f.seconds[i];
            cell.min_seconds = cell.calls ? f.minima[i] : 0;
            cell.max_seconds = f.maxima[i];
        }
    for (std::size_t r = 0; r < kReasonCount; ++r) c.reasons[r] = f.sums[2 * kCells + r];
    c.reentrant = f.sums[2 * kCells + kReasonCount];
    return c;
}

std::string human_bytes(double bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 4) {
        bytes /= 1024;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
    return text;
}

bool summary_wanted(const Runtime& rt) {
    const int64_t summary = rt.config.number(OptionId::stats_summary);  // -1 = auto
    if (summary >= 0) return summary == 1;
    return !rt.config.text(OptionId::stats).empty() || log::enabled(log::Level::info);
}

void print_summary(const ThreadCounters& total, int ranks, double wall_seconds) {
    uint64_t calls = 0, bytes = 0;
    double seconds = 0;
    for (const auto& path : total.cells)
        for (const Cell& cell : path) {
            calls += cell.calls;
            bytes += cell.bytes;
            seconds += cell.seconds;
        }
    std::FILE* out = stderr;
    std::fprintf(out, "arshim[0] summary: %llu MPI_Allreduce calls on %d ranks, %s, %.3f s in allreduce "
                      "(sum over ranks; %.1f%% of wall time)\n",
                 static_cast<unsigned long long>(calls), ranks, human_bytes(static_cast<double>(bytes)).c_str(),
                 seconds, wall_seconds > 0 ? 100.0 * seconds / (wall_seconds * ranks) : 0.0);
    std::fprintf(out, "arshim[0] %-12s %12s %12s %12s %12s\n", "path", "calls", "bytes", "time_s", "avg_us");
    for (std::size_t p = 0; p < kPathCount; ++p) {
        uint64_t pc = 0, pb = 0;
        double ps = 0;
        for (const Cell& cell : total.cells[p]) {
            pc += cell.calls;
            pb += cell.bytes;
            ps += cell.seconds;
        }
        if (pc == 0) continue;
        std::fprintf(out, "arshim[0] %-12s %12llu %12s %12.4f %12.2f\n", policy::path_name(static_cast<policy::Path>(p)),
                     static_cast<unsigned long long>(pc), human_bytes(static_cast<double>(pb)).c_str(), ps,
                     1e6 * ps / static_cast<double>(pc));
    }
    std::string reasons;
    for (std::size_t r = 0; r < kReasonCount; ++r) {
        if (total.reasons[r] == 0) continue;
        reasons += ' ';
        reasons += kReasonNames[r];
        reasons += '=';
        reasons += std::to_string(total.reasons[r]);
    }
    if (!reasons.empty()) std::fprintf(out, "arshim[0] native because:%s\n", reasons.c_str());
    std::fflush(out);
}

}  // namespace

const char* reason_name(Reason reason) { return kReasonNames[static_cast<std::size_t>(reason)]; }

ThreadCounters& local() {
    thread_local ThreadCounters* mine = register_thread();
    return *mine;
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

ThreadCounters snapshot() {
    ThreadCounters total;
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    for (const auto& block : thread_blocks()) {
        for (std::size_t p = 0; p < kPathCount; ++p)
            for (std::size_t b = 0; b < kBucketCount; ++b) {
                const Cell& in = block->cells[p][b];
                Cell& out = total.cells[p][b];
                if (in.calls == 0) continue;
                if (out.calls == 0 || in.min_seconds < out.min_seconds) out.min_seconds = in.min_seconds;
                if (in.max_seconds > out.max_seconds) out.max_seconds = in.max_seconds;
                out.calls += in.calls;
                out.bytes += in.bytes;
                out.seconds += in.seconds;
            }
        for (std::size_t r = 0; r < kReasonCount; ++r) total.reasons[r] += block->reasons[r];
        total.reentrant += block->reentrant;
    }
    return total;
}

void finalize_report() {
    const Runtime& rt = runtime();
    const Flat mine = flatten(snapshot());
    Flat total = mine;
    PMPI_Reduce(mine.sums.data(), total.sums.data(), static_cast<int>(mine.sums.size()), MPI_UNSIGNED_LONG_LONG,
                MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(mine.seconds.data(), total.seconds.data(), static_cast<int>(mine.seconds.size()), MPI_DOUBLE, MPI_SUM,
                0, MPI_COMM_WORLD);
    PMPI_Reduce(mine.minima.data(), total.minima.data(), static_cast<int>(mine.minima.size()), MPI_DOUBLE, MPI_MIN, 0,
                MPI_COMM_WORLD);
    PMPI_Reduce(mine.maxima.data(), total.maxima.data(), static_cast<int>(mine.maxima.size()), MPI_DOUBLE, MPI_MAX, 0,
                MPI_COMM_WORLD);
    if (rt.world_rank != 0) return;
    if (summary_wanted(rt)) print_summary(unflatten(total), rt.world_size, PMPI_Wtime() - rt.init_time);
}

}  // namespace arshim::stats

// --- query API for tests and tools (found with dlsym; programs need not use it) ---

ARSHIM_EXPORT const char* arshim_version(void) { return ARSHIM_VERSION; }

// Calls this process sent to `path` ("native", "pipelined", "multileader", "sharp"), or -1 for an unknown name.
ARSHIM_EXPORT long long arshim_path_calls(const char* path) {
    const arshim::stats::ThreadCounters total = arshim::stats::snapshot();
    for (std::size_t p = 0; p < arshim::stats::kPathCount; ++p) {
        if (std::strcmp(path, arshim::policy::path_name(static_cast<arshim::policy::Path>(p))) != 0) continue;
        long long calls = 0;
        for (const arshim::stats::Cell& cell : total.cells[p]) calls += static_cast<long long>(cell.calls);
        return calls;
    }
    return -1;
}

// Native calls this process counted for `reason` (see stats.h), or -1 for an unknown name.
ARSHIM_EXPORT long long arshim_reason_calls(const char* reason) {
    const arshim::stats::ThreadCounters total = arshim::stats::snapshot();
    for (std::size_t r = 0; r < arshim::stats::kReasonCount; ++r)
        if (std::strcmp(reason, arshim::stats::reason_name(static_cast<arshim::stats::Reason>(r))) == 0)
            return static_cast<long long>(total.reasons[r]);
    return -1;
}
