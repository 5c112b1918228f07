// In-process call statistics: cheap per-thread counters, no allocation and no lock on the hot path once a thread
// has recorded its first call. Aggregated across ranks at finalize with reductions of fixed-size tables.
#pragma once

#include <cstdint>

#include "policy/policy.h"

namespace arshim::stats {

// Why a call went to the native path. `policy` is not a fallback: the policy chose native.
enum class Reason : uint8_t {
    policy,
    zero_count,
    single_rank,
    one_rank_per_node,
    derived_datatype,
    user_op,
    noncommutative_op,
    unsupported_op_type,
    intercommunicator,
    path_unavailable,
    nonuniform_ppn,
    buffer_too_large,
    shm_unavailable,
    sharp_unavailable,
    count
};
constexpr std::size_t kReasonCount = static_cast<std::size_t>(Reason::count);
const char* reason_name(Reason reason);

constexpr std::size_t kPathCount = static_cast<std::size_t>(policy::Path::count);
constexpr std::size_t kBucketCount = 65;  // bucket 0 = 0 bytes, bucket b = [2^(b-1), 2^b)

inline uint32_t bucket_of(uint64_t bytes) { return bytes == 0 ? 0u : 64u - static_cast<uint32_t>(__builtin_clzll(bytes)); }

struct Cell {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    double seconds = 0;
    double min_seconds = 0;
    double max_seconds = 0;
};

struct ThreadCounters {
    Cell cells[kPathCount][kBucketCount];
    uint64_t reasons[kReasonCount] = {};
    uint64_t reentrant = 0;  // calls that arrived while ARShim was inside MPI (sent straight to PMPI)
};

// This thread's counters (registered on first use; the only lock is taken then).
ThreadCounters& local();

bool enabled();
void set_enabled(bool on);  // MPI_Pcontrol(0/1)

inline void record(policy::Path path, uint64_t bytes, double seconds) {
    if (!enabled()) return;
    Cell& cell = local().cells[static_cast<std::size_t>(path)][bucket_of(bytes)];
    if (cell.calls == 0 || seconds < cell.min_seconds) cell.min_seconds = seconds;
    if (seconds > cell.max_seconds) cell.max_seconds = seconds;
    ++cell.calls;
    cell.bytes += bytes;
    cell.seconds += seconds;
}

inline void count_reason(Reason reason) {
    if (enabled()) ++local().reasons[static_cast<std::size_t>(reason)];
}

// Sum of every thread's counters in this process.
ThreadCounters snapshot();

// Collective over MPI_COMM_WORLD at finalize: reduce, then rank 0 reports (summary on stderr, log file).
void finalize_report();

}  // namespace arshim::stats
