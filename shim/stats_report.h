// The statistics report (internal to the shim): what finalize builds from the counters, either for the whole job
// (rank 0, after the cross-rank reductions of stats_report.cpp) or for one rank (ARSHIM_STATS_PER_RANK=1), and
// its JSON form (stats_json.cpp; the schema is docs/stats.md, "arshim-stats/1").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shim/callsites.h"
#include "shim/sharp_stats.h"
#include "shim/stats.h"

namespace arshim {
struct Runtime;
}

namespace arshim::stats {

constexpr const char* kSchema = "arshim-stats/1";
constexpr std::size_t kSharpCounters = static_cast<std::size_t>(sharp::Counter::count);

// One table cell aggregated over ranks. Per-rank figures (min/max) are over the ranks that have the cell
// (`ranks` of them), so a row of a sub-communicator is not diluted by the ranks outside it.
struct Agg {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t ranks = 0;
    double seconds = 0;           // sum over ranks
    double call_min = 0;          // fastest single call, any rank
    double call_max = 0;          // slowest single call, any rank
    double rank_calls_min = 0;    // calls of the rank with the fewest
    double rank_calls_max = 0;
    double rank_seconds_min = 0;  // time of the rank with the least
    double rank_seconds_max = 0;

    static Agg of(const Cell& cell, bool present_anyway = false);  // one rank's cell
};

struct CommEntry {
    uint64_t id = 0;  // 0: calls without a valid communicator (erroneous arguments)
    bool other = false;  // communicators beyond the job table's bound, folded together
    int size = 0;
    int stride = 0;
    int first_world = 0;
    bool inter = false;
    uint64_t instances = 0;  // communicators of this shape created (summed over their rank 0s)
    Agg agg;
};

struct RowEntry {
    int comm = -1;  // index into Report::comms
    RowKey key{};
    bool other = false;  // rows beyond the job table's bound, folded together (key meaningless)
    Agg agg;
};

struct SiteEntry {
    std::vector<callsites::Frame> frames;
    bool other = false;
    Agg agg;
};

struct Report {
    bool job = true;  // false: one rank's own file
    int rank = 0;     // the writing rank
    int np = 0;
    int nodes = 0;
    int ppn_min = 0;
    int ppn_max = 0;
    std::string job_id;

    Agg total;
    Agg paths[kPathCount];
    Agg cells[kPathCount][kBucketCount];
    std::vector<CommEntry> comms;
    std::vector<RowEntry> rows;
    std::vector<SiteEntry> sites;
    bool callsites_enabled = false;
    bool callsites_recorded = false;  // sites were collected and symbolized for this report
    int depth = 1;
    Agg sites_dropped;  // calls whose site did not fit a thread's table

    uint64_t reasons[kReasonCount] = {};
    uint64_t reentrant = 0;
    uint64_t paused = 0;
    uint64_t rows_dropped = 0;  // calls whose row did not fit a thread's table (still in paths/buckets)
    uint64_t sharp[kSharpCounters] = {};  // the SHARP path's counters (shim/sharp_stats.h), summed over ranks
    double wall_min = 0, wall_avg = 0, wall_max = 0;     // seconds between MPI_Init and MPI_Finalize
    double share_min = 0, share_avg = 0, share_max = 0;  // per-rank allreduce time / wall time
};

// JSON text of a report (stats_json.cpp). Run metadata comes from the runtime.
std::string to_json(const Report& report);

// The summary on stderr (rank 0). `written`: the log file, "" when none.
void print_summary(const Report& report, const std::string& written);

// Whether rank 0 prints the summary at finalize: ARSHIM_STATS_SUMMARY, or (auto) when ARSHIM_STATS is set or the
// log level is info or more.
bool summary_wanted(const Runtime& rt);

}  // namespace arshim::stats
