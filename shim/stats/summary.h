// The summary a person reads, in one place (docs/architecture.md "The summary"; docs/stats.md "The summary on
// stderr"): its rows are made from a statistics log (the JSON document of "arshim-stats/1": the numbers and nothing
// else), and one formatter writes them. The preloaded library prints it at MPI_Finalize from the document it writes
// as the log (shim/stats/report.cpp); `arshim report` prints it from the log file through `arshim-stats-summary`
// (tools/report/summary_cli.cpp), so the two texts are the same by construction. MPI-free (libarshim-shim-logic):
// the arithmetic of the summary (averages, shares) runs here, on the log's figures, with every division guarded.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace arshim::stats::summary {

using Counts = std::vector<std::pair<std::string, uint64_t>>;  // name, count; in the log's order

struct PathRow {
    std::string path;
    uint64_t calls = 0, bytes = 0;
    double time_s = 0, avg_us = 0, timed_min_us = 0, timed_max_us = 0, rank_s_min = 0, rank_s_max = 0;
};

// The summary's rows: what each of its lines says, as data.
struct Rows {
    // The first line: calls, ranks, bytes, time summed over ranks, its share of the ranks' wall time, and how the
    // times were taken (every call timed, or sampled with the total's standard error).
    uint64_t calls = 0, bytes = 0, timed_calls = 0;
    int64_t np = 0;
    double time_s = 0, wall_share_pct = 0, time_error_s = 0;
    bool every_call_timed = true;
    uint64_t sample_period = 1, first_timed = 0;
    std::vector<PathRow> paths;  // paths with calls, in path order
    Counts native_because;       // reasons with calls, in reason order
    Counts library_bugs;         // known library bugs with calls
    // The SHARP path, when it saw calls: how its calls ran, the host path's reasons (without "host_"), declines and
    // the groups.
    bool sharp = false;
    uint64_t sharp_llt = 0, sharp_sat = 0, sharp_host = 0, sharp_declined = 0, sharp_groups = 0,
             sharp_group_failures = 0, sharp_disabled = 0;
    Counts sharp_host_reasons;
    // Verify mode, when it compared calls; the worst relative difference is absent when infinite.
    bool verify = false;
    uint64_t verify_calls = 0, verify_mismatches = 0, verify_library_bug_calls = 0,
             verify_library_bug_differences = 0, verify_unordered = 0;
    std::optional<double> verify_worst;
    // Online tuning, when it explored or decided.
    bool tuning = false;
    std::string tuning_mode;
    uint64_t tune_decisions = 0, tune_changed = 0, tune_exploration_calls = 0;
    double tune_exploration_s = 0;
    uint64_t argcheck_calls = 0, argcheck_mismatches = 0;  // the argument check, when it checked calls
    uint64_t paused = 0;                                   // calls made while MPI_Pcontrol(0) paused collection
    // Call sites: how many, and the three with the most time (their first frame) with their share of the total.
    std::size_t sites = 0;
    std::vector<std::pair<std::string, double>> top_sites;
};

// The rows of a statistics log's summary. Throws nlohmann::json::exception (or std::runtime_error) on a document
// that is no such log.
Rows rows_of(const nlohmann::ordered_json& log);

// The summary's text, one "arshim[0] ..." line each; `written`: the log file named in its last line ("" for none).
// Every string from the log is escaped (printable).
std::string text(const Rows& rows, const std::string& written);

}  // namespace arshim::stats::summary
