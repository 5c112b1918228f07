// In-process call statistics: cheap per-thread counters, no allocation and no lock on the hot path once a thread
// has recorded its first call. Aggregated across ranks at finalize with reductions of fixed-size tables
// (shim/stats/report.cpp); the log's format is docs/stats.md.
//
// Every call is one row of its thread's table, keyed by (communicator id, path, size bucket, datatype class, op,
// fallback reason): an open-addressed array probed with one multiply, so recording is a few loads and stores.
// A row that does not fit (more distinct keys than slots) still counts in the per-path, per-bucket overflow cells,
// so the per-path and per-bucket totals are always exact. Call sites are a second table of the same kind
// (shim/stats/callsites.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>

#include "policy/routing_words.h"
#include "shim/base/fixed_table.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace arshim::stats {

// The vocabulary of a row (kernels/vocabulary.h).
using vocab::bucket_of;
using vocab::DtypeClass;
using vocab::kBucketCount;
using vocab::kPathCount;
using vocab::kReasonCount;
using vocab::kServed;
using vocab::Reason;
using vocab::reason_name;

// How the SHARP path ran a call it served: SHARP's low-latency or streaming aggregation, or (some of) it on the host
// path and why (shim/stats/sharp_counts.h has the same reasons as counters). `none` for every other path.
enum class SharpRun : uint8_t { none, llt, sat, host_unsupported, host_no_sat, host_no_llt, host_sat_lock, host_error,
                                count };
inline constexpr const char* kSharpRunNames[] = {"",           "llt",         "sat",           "host_unsupported",
                                                 "host_no_sat", "host_no_llt", "host_sat_lock", "host_error"};
static_assert(std::size(kSharpRunNames) == vocab::count_of<SharpRun>(), "one name per SHARP run");
inline const char* sharp_run_name(SharpRun run) { return vocab::name_of(kSharpRunNames, run); }

// The small part of a row key, packed into kPackedBits: path, size bucket, datatype class, op (vocab row op),
// reason (kServed included), SHARP run. The widths are checked against the vocabulary below, so adding a path,
// reason or op that no longer fits fails to compile instead of corrupting keys.
struct RowKey {
    vocab::Path path;
    uint32_t bucket;
    DtypeClass dtype;
    uint8_t op;
    Reason reason;
    SharpRun sharp = SharpRun::none;
};
namespace packed {
constexpr unsigned kPathBits = 3, kBucketBits = 7, kDtypeBits = 2, kOpBits = 4, kReasonBits = 5, kSharpBits = 3;
constexpr unsigned kBucketShift = kPathBits, kDtypeShift = kBucketShift + kBucketBits,
                   kOpShift = kDtypeShift + kDtypeBits, kReasonShift = kOpShift + kOpBits,
                   kSharpShift = kReasonShift + kReasonBits, kBits = kSharpShift + kSharpBits;
static_assert(kPathCount <= 1u << kPathBits, "path field too narrow");
static_assert(kBucketCount <= 1u << kBucketBits, "bucket field too narrow");
static_assert(vocab::kDtypeClassCount <= 1u << kDtypeBits, "datatype class field too narrow");
static_assert(vocab::kRowOpCount <= 1u << kOpBits, "op field too narrow");
static_assert(kReasonCount + 1 <= 1u << kReasonBits, "reason field too narrow (kServed included)");
static_assert(vocab::count_of<SharpRun>() <= 1u << kSharpBits, "SHARP run field too narrow");
constexpr uint32_t field(uint32_t packed_key, unsigned shift, unsigned bits) {
    return packed_key >> shift & ((1u << bits) - 1);
}
}  // namespace packed
constexpr uint32_t kPackedBits = packed::kBits;

inline uint32_t pack(const RowKey& k) {
    using namespace packed;
    return static_cast<uint32_t>(k.path) | k.bucket << kBucketShift | static_cast<uint32_t>(k.dtype) << kDtypeShift |
           static_cast<uint32_t>(k.op) << kOpShift | static_cast<uint32_t>(k.reason) << kReasonShift |
           static_cast<uint32_t>(k.sharp) << kSharpShift;
}
inline RowKey unpack(uint32_t p) {
    using namespace packed;
    return {static_cast<vocab::Path>(field(p, 0, kPathBits)),
            field(p, kBucketShift, kBucketBits),
            static_cast<DtypeClass>(field(p, kDtypeShift, kDtypeBits)),
            static_cast<uint8_t>(field(p, kOpShift, kOpBits)),
            static_cast<Reason>(field(p, kReasonShift, kReasonBits)),
            static_cast<SharpRun>(field(p, kSharpShift, kSharpBits))};
}

// Sampled timing (ARSHIM_STATS_SAMPLE=N, docs/stats.md "Sampled times"): every call is counted (calls and bytes are
// exact), but only some are timed. A cell times its first kFirstTimed calls, each standing for itself, then the next
// call and every N-th call from there, each standing for itself and the N-1 calls after it (so a row with a few more
// calls than kFirstTimed already has a sampled call, not only its first calls, which carry set-up costs). The choice
// is a per-cell countdown (`skip`): no clock, no random number, no allocation on the calls in between. Set once at
// init (shim/core/runtime.cpp).
constexpr uint64_t kFirstTimed = 8;
inline std::atomic<uint32_t> g_sample_period{64};  // relaxed: read on timed calls only

// One timed call: its bytes, its time (clock ticks) and how many calls it stands for (its weight).
struct Sample {
    uint64_t bytes = 0;
    double ticks = 0;
    uint64_t weight = 1;
};

// A table cell. In the thread tables the time fields hold clock ticks (ticks()) of the timed calls, in two strata:
// the calls timed for themselves alone (weight 1: a row's first calls, or every call when N = 1), whose time is
// exact, and the sampled ones (weight > 1), which stand for all the other calls. estimated() turns them into the
// estimated total in seconds and its variance, which merge() then adds (over threads, rows and ranks). Call-site
// cells are filled from timed calls only (add()): their calls and bytes are the samples' weights, so estimated
// unless every call is timed.
struct Cell {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint32_t skip = 0;           // calls to count before the next timed one (thread tables)
    uint64_t samples = 0;        // timed calls
    uint64_t exact = 0;          // ... of which stand for themselves alone
    double exact_seconds = 0;    // their time (sum), and sum of squares
    double exact_sq = 0;
    double sampled_seconds = 0;  // time of the others (sum, unweighted), and sum of squares
    double sampled_sq = 0;
    double seconds = 0;          // after estimated(): the estimated total time
    double variance = 0;         // after estimated(): of `seconds` (s^2); adds up over cells
    double min_seconds = 0;      // fastest and slowest timed call
    double max_seconds = 0;

    // A call that is not timed (its turn has not come, or no log wants times).
    void count(uint64_t b) {
        ++calls;
        bytes += b;
    }
    // Whether this cell's next call is to be timed.
    bool due() const { return skip == 0; }
    // A call counted without its time: no time is wanted (`timed` false), or it is not its turn (then not due()).
    void pass(uint64_t b, bool timed) {
        count(b);
        skip -= timed ? 1 : 0;
    }
    // A timed call of a row: counted, its time added in its stratum; the countdown restarts. Returns its weight.
    uint64_t sample(uint64_t b, double t) {
        const uint32_t period = g_sample_period.load(std::memory_order_relaxed);
        const uint64_t w = samples < kFirstTimed ? 1 : period;
        count(b);
        add_time(t, w);
        skip = samples <= kFirstTimed ? 0 : period - 1;  // the call after the first ones is sampled at once
        return w;
    }
    // A sample standing for `weight` calls (call sites: recorded on timed calls only).
    void add(const Sample& s) {
        calls += s.weight;
        bytes += s.weight * s.bytes;
        add_time(s.ticks, s.weight);
    }
    // The estimated total time in seconds (`scale` converts ticks): the exact calls' own time plus the mean of the
    // sampled ones times the calls they stand for, i.e. every other call (the exact calls' mean when none was
    // sampled: only when timing was switched off for a while, arshim_stats_set_timed). Its variance is that of a mean of n sampled calls out of the rest, times the rest squared
    // (finite-population corrected; 0 when every call was timed).
    Cell estimated(double scale) const {
        Cell e;
        e.calls = calls;
        e.bytes = bytes;
        e.samples = samples;
        e.exact = exact;
        if (samples == 0) return e;
        e.min_seconds = min_seconds * scale;
        e.max_seconds = max_seconds * scale;
        const uint64_t sampled = samples - exact;
        const double rest = static_cast<double>(calls - exact);
        double mean = 0, spread = 0, n = 0;  // of the calls that stand for the rest, in ticks
        if (sampled > 0) {
            n = static_cast<double>(sampled);
            mean = sampled_seconds / n;
            spread = sampled > 1 ? spread_of(n, sampled_seconds, sampled_sq)
                                 : spread_of(static_cast<double>(samples), exact_seconds + sampled_seconds,
                                             exact_sq + sampled_sq);  // one sample: the spread of all of them
        } else {
            n = static_cast<double>(exact);
            mean = exact_seconds / n;
            spread = spread_of(n, exact_seconds, exact_sq);
        }
        e.seconds = (exact_seconds + mean * rest) * scale;
        const double unsampled = rest > 0 ? std::max(0.0, 1 - (sampled > 0 ? n / rest : 0.0)) : 0.0;
        e.variance = rest * rest * spread / n * unsampled * scale * scale;
        return e;
    }
    void merge(const Cell& o) {
        if (o.samples > 0) {
            if (samples == 0 || o.min_seconds < min_seconds) min_seconds = o.min_seconds;
            if (samples == 0 || o.max_seconds > max_seconds) max_seconds = o.max_seconds;
        }
        calls += o.calls;
        bytes += o.bytes;
        samples += o.samples;
        exact += o.exact;
        exact_seconds += o.exact_seconds;
        exact_sq += o.exact_sq;
        sampled_seconds += o.sampled_seconds;
        sampled_sq += o.sampled_sq;
        seconds += o.seconds;
        variance += o.variance;
    }

private:
    void add_time(double t, uint64_t w) {
        if (samples == 0 || t < min_seconds) min_seconds = t;
        if (samples == 0 || t > max_seconds) max_seconds = t;
        ++samples;
        if (w == 1) {
            ++exact;
            exact_seconds += t;
            exact_sq += t * t;
        } else {
            sampled_seconds += t;
            sampled_sq += t * t;
        }
    }
    // Sample variance of n values from their sum and sum of squares (0 for fewer than two).
    static double spread_of(double n, double sum, double sq) {
        return n > 1 ? std::max(0.0, (sq - sum * sum / n) / (n - 1)) : 0.0;
    }
};

// A row of a thread's table: (communicator id, packed key) -> cell. Communicator id 0 = an erroneous call without
// a communicator (CommContext::stats_id is never 0).
struct RowId {
    uint64_t comm = 0;
    uint32_t key = 0;  // pack(RowKey)
    bool operator==(const RowId& o) const { return key == o.key && comm == o.comm; }
    uint64_t hash() const { return vocab::mix64(comm ^ key); }
};
constexpr std::size_t kRowSlots = 1024;  // per thread
constexpr std::size_t kRowProbes = 16;
using RowTable = FixedTable<RowId, Cell, kRowSlots, kRowProbes>;

// Call sites: up to kMaxDepth return addresses per site (ARSHIM_STATS_DEPTH), symbolized only at finalize; or,
// for calls made through mpi4py, (code object, position) word pairs of Python frames (shim/stats/python_frames.h).
constexpr std::size_t kMaxDepth = 16;
struct SiteKey {
    uint64_t hash = 0;  // of the frames (callsites::hash_frames)
    uint32_t depth = 0;  // words used in frames[]
    bool python = false;  // frames[] holds Python (code, position) pairs, not return addresses
    uintptr_t frames[kMaxDepth] = {};
    bool operator==(const SiteKey& o) const {
        if (hash != o.hash || depth != o.depth || python != o.python) return false;
        for (uint32_t i = 0; i < depth; ++i)
            if (frames[i] != o.frames[i]) return false;
        return true;
    }
};
constexpr std::size_t kSiteSlots = 256;  // per thread
constexpr std::size_t kSiteProbes = 16;
using SiteTable = FixedTable<SiteKey, Cell, kSiteSlots, kSiteProbes>;  // filled from timed calls only (Cell::add)

struct ThreadCounters {
    RowTable rows;
    Cell overflow[kPathCount][kBucketCount];  // calls whose row did not fit
    uint64_t overflow_calls = 0;
    uint64_t reasons[kReasonCount] = {};
    uint64_t reentrant = 0;  // calls that arrived while ARShim was inside MPI (sent straight to PMPI)
    uint64_t paused = 0;     // calls made while MPI_Pcontrol(0) had paused collection
    SiteTable sites;
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
// The SMPI build counts simulated nanoseconds (PMPI_Wtime, shim/stats/clock_smpi.cpp): the host's clocks do not see
// simulated time.
inline bool g_use_tsc = false;
#if defined(ARSHIM_FLAVOR_SMPI)
uint64_t simulated_ns();
inline uint64_t ticks() { return simulated_ns(); }
#else
inline uint64_t ticks() {
#if defined(__x86_64__)
    if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
#endif
void start_clock();         // once, at init (shim/core/runtime.cpp)
double seconds_per_tick();  // at finalize

// Collection switches: MPI_Pcontrol(0/1) (kCollect); whether calls are timed (kTimed: a log or a summary will
// report times) and their call sites captured (kCallsites: a log will list them), both set once at init (configure)
// from ARSHIM_STATS / ARSHIM_STATS_SUMMARY / ARSHIM_STATS_CALLSITES. Without them a call costs a row update only: the
// shim's own price on the native route stays a few nanoseconds (docs/stats.md "Overhead"). With them, only the calls
// whose turn it is (Cell::due, ARSHIM_STATS_SAMPLE) read the clock and record their call site.
constexpr uint8_t kCollect = 1;
constexpr uint8_t kCallsites = 2;
constexpr uint8_t kTimed = 4;
// Every call takes the classified path, never the native replay (ARSHIM_CHECK_ARGS checks each call first).
constexpr uint8_t kNoReplay = 8;
inline std::atomic<uint8_t> g_flags{kCollect};
void set_enabled(bool on);    // MPI_Pcontrol(0/1)
void set_callsites(bool on);  // also turns timing on (a call site's time needs the clock)
void set_timed(bool on);
void set_no_replay();  // once, at init

// One classified call. `comm` is the communicator id, `reason` kServed unless the call went native as a fallback
// (or because the policy said so).
struct Call {
    uint64_t comm;
    uint64_t bytes;
    double ticks;  // ticks() difference
    RowKey key;
    bool timed = true;  // `ticks` was measured (a log or summary wants times)
    // A log or summary wants times but the clock was not read, the call's row being expected not to be due (the
    // row's countdown then advances as for any call whose turn it is not; a row that was due after all stays due).
    bool unclocked = false;
};

// Where a call was recorded: its cell (nullptr when it went to the overflow cells), and when its time was used (its
// cell's turn to be timed), the calls it stands for (0: counted only).
struct Recorded {
    Cell* cell = nullptr;
    uint64_t weight = 0;
};

// Counts a call in `cell`, timed when it is the cell's turn (sampling, above) and a time was taken.
inline uint64_t count_or_sample(Cell& cell, uint64_t bytes, double ticks, bool timed, bool unclocked = false) {
    if (timed && cell.due()) return cell.sample(bytes, ticks);
    cell.pass(bytes, timed || (unclocked && !cell.due()));
    return 0;
}

// Records one call.
inline Recorded record(ThreadCounters& t, const Call& call) {
    const RowId id{call.comm, pack(call.key)};
    if (call.key.reason != kServed) ++t.reasons[static_cast<std::size_t>(call.key.reason)];
    if (Cell* cell = t.rows.find_or_insert(id, id.hash()))
        return {cell, count_or_sample(*cell, call.bytes, call.ticks, call.timed, call.unclocked)};
    ++t.overflow_calls;
    Cell& overflow = t.overflow[static_cast<std::size_t>(call.key.path)][call.key.bucket];
    return {nullptr, count_or_sample(overflow, call.bytes, call.ticks, call.timed, call.unclocked)};
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

}  // namespace arshim::stats
