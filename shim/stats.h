// In-process call statistics: cheap per-thread counters, no allocation and no lock on the hot path once a thread
// has recorded its first call. Aggregated across ranks at finalize with reductions of fixed-size tables
// (stats_report.cpp); the log's format is docs/stats.md.
//
// Every call is one row of its thread's table, keyed by (communicator id, path, size bucket, datatype class, op,
// fallback reason): an open-addressed array probed with one multiply, so recording is a few loads and stores.
// A row that does not fit (more distinct keys than slots) still counts in the per-path, per-bucket overflow cells,
// so the per-path and per-bucket totals are always exact. Call sites are a second table of the same kind
// (callsites.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "policy/policy.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

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
constexpr Reason kServed = Reason::count;  // a row's reason when the chosen path served the call
const char* reason_name(Reason reason);    // "served" for kServed

constexpr std::size_t kPathCount = static_cast<std::size_t>(policy::Path::count);
constexpr std::size_t kBucketCount = 65;  // bucket 0 = 0 bytes, bucket b = [2^(b-1), 2^b)

inline uint32_t bucket_of(uint64_t bytes) {
    return bytes == 0 ? 0u : 64u - static_cast<uint32_t>(__builtin_clzll(bytes));
}

// Datatype classes of the statistics (the policy's three, plus derived datatypes).
enum class Dtype : uint8_t { floating, integer, other, derived, count };
constexpr std::size_t kDtypeCount = static_cast<std::size_t>(Dtype::count);
const char* dtype_name(Dtype dtype);  // "float", "int", "other", "derived"

// Op of a row: the kernels::Op index for predefined reductions (sum .. maxloc), then:
constexpr uint8_t kOpOtherPredefined = 12;  // MPI_REPLACE, MPI_NO_OP, predefined ops ARShim has no kernel for
constexpr uint8_t kOpUser = 13;             // user-defined (MPI_Op_create)
constexpr std::size_t kOpCount = 14;
const char* op_label(uint8_t op);  // "sum", ..., "maxloc", "other", "user"

// How the SHARP path ran a call it served: SHARP's low-latency or streaming aggregation, or (some of) it on the host
// path and why (shim/sharp_stats.h has the same reasons as counters). `none` for every other path.
enum class SharpRun : uint8_t { none, llt, sat, host_unsupported, host_no_sat, host_no_llt, host_sat_lock, host_error,
                                count };
const char* sharp_run_name(SharpRun run);  // "", "llt", "sat", "host_unsupported", ...

// The small part of a row key, packed: path 2 bits, bucket 7, dtype 2, op 4, reason 4, sharp 3.
struct RowKey {
    policy::Path path;
    uint32_t bucket;
    Dtype dtype;
    uint8_t op;
    Reason reason;
    SharpRun sharp = SharpRun::none;
};
inline uint32_t pack(const RowKey& k) {
    return static_cast<uint32_t>(k.path) | k.bucket << 2 | static_cast<uint32_t>(k.dtype) << 9 |
           static_cast<uint32_t>(k.op) << 11 | static_cast<uint32_t>(k.reason) << 15 |
           static_cast<uint32_t>(k.sharp) << 19;
}
inline RowKey unpack(uint32_t p) {
    return {static_cast<policy::Path>(p & 3u), p >> 2 & 127u,          static_cast<Dtype>(p >> 9 & 3u),
            static_cast<uint8_t>(p >> 11 & 15u), static_cast<Reason>(p >> 15 & 15u),
            static_cast<SharpRun>(p >> 19 & 7u)};
}
constexpr uint32_t kPackedBits = 22;
static_assert(static_cast<uint32_t>(SharpRun::count) <= 8, "three bits");

// In the thread tables the time fields hold clock ticks (ticks()); finalize scales them to seconds.
struct Cell {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    double seconds = 0;
    double min_seconds = 0;
    double max_seconds = 0;

    void add(uint64_t b, double s) {
        if (calls == 0 || s < min_seconds) min_seconds = s;
        if (s > max_seconds) max_seconds = s;
        ++calls;
        bytes += b;
        seconds += s;
    }
    Cell scaled(double factor) const {
        Cell c = *this;
        c.seconds *= factor;
        c.min_seconds *= factor;
        c.max_seconds *= factor;
        return c;
    }
    void merge(const Cell& o) {
        if (o.calls == 0) return;
        if (calls == 0 || o.min_seconds < min_seconds) min_seconds = o.min_seconds;
        if (o.max_seconds > max_seconds) max_seconds = o.max_seconds;
        calls += o.calls;
        bytes += o.bytes;
        seconds += o.seconds;
    }
};

struct Row {
    uint64_t comm = 0;  // communicator id (CommContext::stats_id; 0 = erroneous call without a communicator)
    uint32_t key = 0;   // pack(RowKey) + 1; 0 = free slot
    Cell cell;
};

constexpr std::size_t kRowSlots = 1024;  // per thread, power of two
constexpr std::size_t kRowProbes = 16;

// Call sites: up to kMaxDepth return addresses per site (ARSHIM_STATS_DEPTH), symbolized only at finalize.
constexpr std::size_t kMaxDepth = 16;
constexpr std::size_t kSiteSlots = 256;  // per thread, power of two
constexpr std::size_t kSiteProbes = 16;

struct Site {
    uint64_t hash = 0;  // of the frames; 0 = free slot
    uint32_t depth = 0;
    uint64_t calls = 0;
    uint64_t bytes = 0;
    double seconds = 0;
    uintptr_t frames[kMaxDepth] = {};
};

struct ThreadCounters {
    Row rows[kRowSlots];
    Cell overflow[kPathCount][kBucketCount];  // calls whose row did not fit
    uint64_t overflow_calls = 0;
    uint64_t reasons[kReasonCount] = {};
    uint64_t reentrant = 0;  // calls that arrived while ARShim was inside MPI (sent straight to PMPI)
    uint64_t paused = 0;     // calls made while MPI_Pcontrol(0) had paused collection
    Site sites[kSiteSlots];
    Cell sites_overflow;     // calls whose call site did not fit
};

// This thread's counters (registered on first use; the only lock and the only allocation are taken then).
// Initial-exec TLS: one load, no __tls_get_addr call (the library is preloaded, so static TLS is available).
inline thread_local ThreadCounters* t_counters __attribute__((tls_model("initial-exec"))) = nullptr;
ThreadCounters* register_thread();
inline ThreadCounters& local() {
    ThreadCounters* t = t_counters;
    if (__builtin_expect(t == nullptr, 0)) t = register_thread();
    return *t;
}

// Per-call time in clock ticks: the TSC where it is invariant (x86-64, CPUID says so), else steady_clock
// nanoseconds. The counters hold ticks ("seconds" fields of the thread tables); finalize converts them with
// seconds_per_tick(), measured against steady_clock between start_clock() and then: no calibration loop at start.
inline bool g_use_tsc = false;
inline uint64_t ticks() {
#if defined(__x86_64__)
    if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
void start_clock();         // once, before the first timed call (callsites::warm_up)
double seconds_per_tick();  // at finalize

// Collection switches: MPI_Pcontrol(0/1) (kCollect); whether calls are timed (kTimed: a log or a summary will
// report times) and their call sites captured (kCallsites: a log will list them), both set once at warm-up from
// ARSHIM_STATS / ARSHIM_STATS_SUMMARY / ARSHIM_STATS_CALLSITES. Without them a call costs a row update only: the
// shim's own price on the native route stays a few nanoseconds (docs/stats.md "Overhead").
constexpr uint8_t kCollect = 1;
constexpr uint8_t kCallsites = 2;
constexpr uint8_t kTimed = 4;
inline std::atomic<uint8_t> g_flags{kCollect};
inline bool collecting() { return g_flags.load(std::memory_order_relaxed) & kCollect; }
bool enabled();
void set_enabled(bool on);    // MPI_Pcontrol(0/1)
void set_callsites(bool on);  // also turns timing on (a call site's time needs the clock)
void set_timed(bool on);

// One classified call. `comm` is the communicator id, `reason` kServed unless the call went native as a fallback
// (or because the policy said so).
struct Call {
    uint64_t comm;
    uint64_t bytes;
    double ticks;  // ticks() difference
    RowKey key;
};

inline Row* find_row(ThreadCounters& t, uint64_t comm, uint32_t key) {
    const uint64_t h = (comm ^ (static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    std::size_t slot = static_cast<std::size_t>(h >> 54) & (kRowSlots - 1);
    for (std::size_t probe = 0; probe < kRowProbes; ++probe, slot = (slot + 1) & (kRowSlots - 1)) {
        Row& row = t.rows[slot];
        if (row.key == key && row.comm == comm) return &row;
        if (row.key == 0) {
            row.comm = comm;
            row.key = key;
            return &row;
        }
    }
    return nullptr;
}

// Records one call; returns its row (nullptr when it went to the overflow cells).
inline Row* record(ThreadCounters& t, const Call& call) {
    const uint32_t key = pack(call.key) + 1;
    if (call.key.reason != kServed) ++t.reasons[static_cast<std::size_t>(call.key.reason)];
    if (Row* row = find_row(t, call.comm, key)) {
        row->cell.add(call.bytes, call.ticks);
        return row;
    }
    ++t.overflow_calls;
    t.overflow[static_cast<std::size_t>(call.key.path)][call.key.bucket].add(call.bytes, call.ticks);
    return nullptr;
}

// Communicators, registered once when their context is built (not on the hot path). The id is a hash of the
// communicator's shape (size and its members' world ranks relative to the first), identical on all of its ranks;
// congruent communicators (dups, the rows of a process grid) share an id and a row.
struct CommShape {
    int size = 0;
    int stride = 0;      // world-rank distance between consecutive members when regular, else 0
    int first_world = 0; // world rank of its rank 0
    bool inter = false;
    bool is_root = false;  // this process is its rank 0
};
void register_comm(uint64_t id, const CommShape& shape);
// (id, shape, contexts built in this process, ... of which this process is rank 0)
void for_each_comm(const std::function<void(uint64_t, const CommShape&, uint64_t, uint64_t)>& fn);

// Calls `fn` on every thread's counters (finalize and the query API; holds the registry lock).
void for_each_thread(const std::function<void(const ThreadCounters&)>& fn);

// Per-path totals of every thread of this process (the query API and the tests use them).
struct PathTotals {
    uint64_t calls[kPathCount] = {};
    uint64_t reasons[kReasonCount] = {};
};
PathTotals path_totals();

// Collective over MPI_COMM_WORLD at finalize: reduce, then rank 0 reports (summary on stderr, log file).
void finalize_report();

}  // namespace arshim::stats
