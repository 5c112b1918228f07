// The fields of the finalize report, each listed once with its cross-rank reduction and its key in the JSON log:
// the same lists pack every rank's values into fixed-size arrays, unpack rank 0's reduced arrays, and write the
// JSON (shim/stats/json.cpp). Adding a field is one line in a list; packing and unpacking can no longer drift
// apart. MPI-free: the reduction itself is behind a seam (combine() here; PMPI_Reduce in shim/stats/report.cpp),
// so round trips are unit-tested without mpirun (test/shim/test_core.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "shim/base/library_bugs.h"
#include "shim/stats/sharp_counts.h"
#include "shim/stats/counters.h"

namespace arshim::stats {

enum class Reduce : uint8_t { count, sum, min, max };  // count: exact 64-bit integer sum
// micros: seconds written as microseconds in the JSON; std_error: a variance written as its square root.
enum class Unit : uint8_t { plain, micros, std_error };

// One array per reduction; every rank packs the same layout, rank 0 unpacks the reduced arrays in the same order.
struct Arrays {
    std::vector<unsigned long long> counts;
    std::vector<double> sums, mins, maxs;

    void push(Reduce r, double v) {
        switch (r) {
        case Reduce::count: counts.push_back(static_cast<unsigned long long>(v)); break;
        case Reduce::sum: sums.push_back(v); break;
        case Reduce::min: mins.push_back(v); break;
        case Reduce::max: maxs.push_back(v); break;
        }
    }
    void push_count(uint64_t v) { counts.push_back(v); }
};

// Reads Arrays back in packing order.
class Cursor {
public:
    explicit Cursor(const Arrays& a) : a_(a) {}
    double pop(Reduce r) {
        switch (r) {
        case Reduce::count: return static_cast<double>(a_.counts[c_++]);
        case Reduce::sum: return a_.sums[s_++];
        case Reduce::min: return a_.mins[n_++];
        case Reduce::max: return a_.maxs[x_++];
        }
        return 0;
    }
    uint64_t pop_count() { return a_.counts[c_++]; }
    bool at_end() const {
        return c_ == a_.counts.size() && s_ == a_.sums.size() && n_ == a_.mins.size() && x_ == a_.maxs.size();
    }

private:
    const Arrays& a_;
    std::size_t c_ = 0, s_ = 0, n_ = 0, x_ = 0;
};

// The reduction of one rank's arrays into another's, element by element (the test seam; MPI does the same with
// PMPI_Reduce over every rank).
inline void combine(Arrays& into, const Arrays& from) {
    for (std::size_t i = 0; i < into.counts.size(); ++i) into.counts[i] += from.counts[i];
    for (std::size_t i = 0; i < into.sums.size(); ++i) into.sums[i] += from.sums[i];
    for (std::size_t i = 0; i < into.mins.size(); ++i) into.mins[i] = std::fmin(into.mins[i], from.mins[i]);
    for (std::size_t i = 0; i < into.maxs.size(); ++i) into.maxs[i] = std::fmax(into.maxs[i], from.maxs[i]);
}

// One table cell aggregated over ranks. Per-rank figures (min/max) are over the ranks that have the cell
// (`ranks` of them), so a row of a sub-communicator is not diluted by the ranks outside it. Times are estimates
// from the timed calls (ARSHIM_STATS_SAMPLE; exact when every call was timed), with their variance.
struct Agg {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t ranks = 0;
    uint64_t samples = 0;         // timed calls
    double seconds = 0;           // sum over ranks (estimated)
    double variance = 0;          // of `seconds`, summed over ranks (independent estimates)
    double call_min = 0;          // fastest timed call, any rank
    double call_max = 0;          // slowest timed call, any rank
    double rank_calls_min = 0;    // calls of the rank with the fewest
    double rank_calls_max = 0;
    double rank_seconds_min = 0;  // time of the rank with the least
    double rank_seconds_max = 0;

    // The fields: fn(member, reduction, JSON key, unit). JSON keys with dots are nested objects.
    template <typename Fn>
    static void for_each_field(Fn&& fn) {
        fn(&Agg::calls, Reduce::count, "calls", Unit::plain);
        fn(&Agg::bytes, Reduce::count, "bytes", Unit::plain);
        fn(&Agg::ranks, Reduce::count, "ranks", Unit::plain);
        fn(&Agg::samples, Reduce::count, "timed_calls", Unit::plain);
        fn(&Agg::seconds, Reduce::sum, "time_s", Unit::plain);
        fn(&Agg::variance, Reduce::sum, "time_s_error", Unit::std_error);
        fn(&Agg::call_min, Reduce::min, "call_min_us", Unit::micros);
        fn(&Agg::call_max, Reduce::max, "call_max_us", Unit::micros);
        fn(&Agg::rank_calls_min, Reduce::min, "per_rank.calls.min", Unit::plain);
        fn(&Agg::rank_calls_max, Reduce::max, "per_rank.calls.max", Unit::plain);
        fn(&Agg::rank_seconds_min, Reduce::min, "per_rank.time_s.min", Unit::plain);
        fn(&Agg::rank_seconds_max, Reduce::max, "per_rank.time_s.max", Unit::plain);
    }

    // One rank's cell, as that rank contributes it to the reduction: a rank without the cell (no calls, unless
    // `present_anyway`) contributes the neutral element of each min/max (+-inf) and 0 ranks.
    static Agg of_rank(const Cell& cell, bool present_anyway = false) {
        constexpr double inf = std::numeric_limits<double>::infinity();
        const bool present = present_anyway || cell.calls > 0;
        Agg g;
        g.calls = cell.calls;
        g.bytes = cell.bytes;
        g.ranks = present ? 1 : 0;
        g.samples = cell.samples;
        g.seconds = cell.seconds;
        g.variance = cell.variance;
        g.call_min = cell.samples ? cell.min_seconds : inf;
        g.call_max = cell.samples ? cell.max_seconds : -inf;
        g.rank_calls_min = present ? static_cast<double>(cell.calls) : inf;
        g.rank_calls_max = present ? static_cast<double>(cell.calls) : -inf;
        g.rank_seconds_min = present ? cell.seconds : inf;
        g.rank_seconds_max = present ? cell.seconds : -inf;
        return g;
    }
    // Neutral elements left over (no rank had the cell) read as 0.
    Agg& finish() {
        for_each_field([this](auto member, Reduce, const char*, Unit) {
            auto& v = this->*member;
            if constexpr (std::is_floating_point_v<std::remove_reference_t<decltype(v)>>)
                if (!std::isfinite(v)) v = 0;
        });
        return *this;
    }
    // One rank's cell as a report of its own (ARSHIM_STATS_PER_RANK files).
    static Agg of(const Cell& cell, bool present_anyway = false) { return of_rank(cell, present_anyway).finish(); }

    void pack(Arrays& a) const {
        for_each_field([&](auto member, Reduce r, const char*, Unit) { a.push(r, static_cast<double>(this->*member)); });
    }
    static Agg unpack(Cursor& c) {
        Agg g;
        for_each_field([&](auto member, Reduce r, const char*, Unit) {
            auto& v = g.*member;
            if constexpr (std::is_same_v<std::remove_reference_t<decltype(v)>, uint64_t>)
                v = c.pop_count();
            else
                v = c.pop(r);
        });
        return g.finish();
    }
};

// min / avg / max over ranks of a per-rank value (wall time, allreduce share).
struct Spread {
    double min = 0, avg = 0, max = 0;
    void pack(double mine, Arrays& a) const {
        a.push(Reduce::sum, mine);
        a.push(Reduce::min, mine);
        a.push(Reduce::max, mine);
    }
    static Spread unpack(Cursor& c, int ranks) {
        Spread s;
        s.avg = c.pop(Reduce::sum) / (ranks > 0 ? ranks : 1);
        s.min = c.pop(Reduce::min);
        s.max = c.pop(Reduce::max);
        return s;
    }
};

// The plain counters of a report, summed over ranks.
constexpr std::size_t kSharpCounters = static_cast<std::size_t>(sharp::Counter::count);
struct Counts {
    uint64_t reasons[kReasonCount] = {};
    uint64_t reentrant = 0;
    uint64_t paused = 0;
    uint64_t rows_dropped = 0;            // calls whose row did not fit a thread's table (still in paths/buckets)
    uint64_t sharp[kSharpCounters] = {};  // the SHARP path's counters (shim/stats/sharp_counts.h)
    uint64_t library_bugs[bugs::kMaxEntries] = {};  // calls that hit each known library bug (shim/base/library_bugs.h)
    // Verify mode (shim/modes/verify.h): calls checked, of which mismatched; checked calls that hit a known library
    // bug, of which the library's result differed; elements no bound could judge.
    uint64_t verify_calls = 0, verify_mismatches = 0, verify_library_bug_calls = 0, verify_library_bug_differences = 0,
             verify_unordered = 0;
    uint64_t argcheck_calls = 0, argcheck_mismatches = 0;  // ARSHIM_CHECK_ARGS (shim/modes/arg_check.h)
    // ARSHIM_TUNE (shim/modes/online.h): exploration calls and their time; keys decided, of which for another choice.
    uint64_t tune_exploration_calls = 0, tune_exploration_ns = 0, tune_decisions = 0, tune_changed = 0;

    // fn(value, JSON section, JSON key): "totals" keys sit in the log's totals object, "sharp" ones in its sharp
    // object, "library_bugs" ones in its library_bugs object (key "" = no such entry), "verify", "argument_check"
    // and "tuning" ones in objects of those names, "reasons" ones become its fallbacks array.
    template <typename Self, typename Fn>
    static void for_each_field(Self& self, Fn&& fn) {
        for (std::size_t i = 0; i < kReasonCount; ++i)
            fn(self.reasons[i], "reasons", vocab::reason_name(static_cast<Reason>(i)));
        fn(self.paused, "totals", "paused_calls");
        fn(self.reentrant, "totals", "reentrant_calls");
        fn(self.rows_dropped, "totals", "rows_folded_calls");
        for (std::size_t i = 0; i < kSharpCounters; ++i)
            fn(self.sharp[i], "sharp", sharp::counter_name(static_cast<sharp::Counter>(i)));
        for (std::size_t i = 0; i < bugs::kMaxEntries; ++i) fn(self.library_bugs[i], "library_bugs", bugs::entry_id(i));
        fn(self.verify_calls, "verify", "calls");
        fn(self.verify_mismatches, "verify", "mismatches");
        fn(self.verify_library_bug_calls, "verify", "library_bug_calls");
        fn(self.verify_library_bug_differences, "verify", "library_bug_differences");
        fn(self.verify_unordered, "verify", "unordered_elements");
        fn(self.argcheck_calls, "argument_check", "calls");
        fn(self.argcheck_mismatches, "argument_check", "mismatches");
        fn(self.tune_exploration_calls, "tuning", "exploration_calls");
        fn(self.tune_exploration_ns, "tuning", "exploration_ns");
        fn(self.tune_decisions, "tuning", "decisions");
        fn(self.tune_changed, "tuning", "changed");
    }
    void pack(Arrays& a) const {
        for_each_field(*this, [&](const uint64_t& v, const char*, const char*) { a.push_count(v); });
    }
    static Counts unpack(Cursor& c) {
        Counts out;
        for_each_field(out, [&](uint64_t& v, const char*, const char*) { v = c.pop_count(); });
        return out;
    }
};

}  // namespace arshim::stats
