// The statistics report (internal to the shim): what finalize builds from the counters, either for the whole job
// (rank 0, after the cross-rank reductions of shim/stats/report.cpp) or for one rank (ARSHIM_STATS_PER_RANK=1), and
// its JSON form (shim/stats/json.cpp; the schema is docs/stats.md, "arshim-stats/1").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/settings.h"
#include "shim/stats/callsites.h"
#include "shim/stats/counters.h"
#include "shim/stats/report_fields.h"
#include "shim/stats/startup_check.h"
#include "shim/stats/tuning_record.h"

namespace arshim::stats {

constexpr const char* kSchema = "arshim-stats/1";

// What the report says about the run, filled in by the runtime at finalize (shim/core/runtime.cpp), so that the
// statistics read nothing above them.
struct RunFacts {
    explicit RunFacts(const ProcessSettings& agreed) : settings(agreed) {}
    const ProcessSettings& settings;  // the process's settings (world rank 0's when config_agreed)
    int world_rank = 0, world_size = 1;
    std::vector<int> world_node;  // world rank -> node id (empty: unknown)
    bool config_agreed = false;   // MPI_Init was intercepted: every rank holds rank 0's settings
    double init_time = 0;         // MPI_Wtime at init
    std::string flavor, mpi_version, policy_source;
    uint32_t verify_calls = 0;  // ARSHIM_VERIFY
    bool check_args = false;    // the argument check ran (ARSHIM_CHECK_ARGS or verify mode)
    std::vector<TuningRecord> tuning;  // what online tuning decided on this rank's communicators
    StartupCheck startup;              // what the start-up check found (world rank 0: which ranks lack ARShim)
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
    uint32_t sample_period = 1;  // ARSHIM_STATS_SAMPLE: one call in N timed per row, after its first kFirstTimed

    Counts counts;
    Spread wall;   // seconds between MPI_Init and MPI_Finalize
    Spread share;  // per-rank allreduce time / wall time
    Spread verify_relative;  // verify mode: the largest relative difference from the library's result, per rank
    const RunFacts* run = nullptr;  // the run the report is of
};

// A report as the statistics log's JSON document (shim/stats/json.cpp); run metadata from report.run. The summary
// on stderr is made from the same document (shim/stats/summary.h).
nlohmann::ordered_json to_document(const Report& report);
// The log's text.
std::string to_json(const nlohmann::ordered_json& document);

// Whether rank 0 prints the summary at finalize: ARSHIM_STATS_SUMMARY, or (auto) when ARSHIM_STATS is set or the
// log level is info or more.
bool summary_wanted(const ProcessSettings& settings);

// At finalize (every rank; collective over MPI_COMM_WORLD when the settings were agreed): reduce the counters, write
// the log(s), print the summary.
void finalize_report(const RunFacts& run);

// At finalize of a job whose start-up check disabled ARShim everywhere (not every rank loaded it): world rank 0
// alone, no collective call (ranks without ARShim would never join one), writes the job log ARSHIM_STATS asks for,
// with the check's findings in "run"."startup_check" and no calls (ARShim counted none). No summary, no per-rank
// files: the warning at MPI_Init already said what happened.
void finalize_disabled_report(const RunFacts& run);

}  // namespace arshim::stats
