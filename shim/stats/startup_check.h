// What the start-up check (shim/core/handshake.h) found, as data: whether it ran, whether every rank loaded this
// ARShim build, and which ranks did not (the lowest kListed of each kind, and how many in all). The statistics log
// ("run"."startup_check") and the trace's "startup_check" event carry it, so that tools and tests learn which ranks
// lacked ARShim without reading the warning line (docs/stats.md).
#pragma once

#include <cstdint>
#include <vector>

namespace arshim::stats {

struct StartupCheck {
    bool checked = false;     // the check ran (MPI_Init was intercepted); else nothing below is known
    bool all_loaded = true;   // this rank's verdict: every rank has this ARShim build (false: ARShim is off everywhere)
    int timeout_s = 0;        // ARSHIM_INIT_TIMEOUT as this rank read it
    // World rank 0 only (the others leave them empty): the ranks that sent no report in time and the ranks that
    // loaded another ARShim build, the lowest of each listed, and their counts.
    bool knows_ranks = false;
    std::vector<int> without_arshim, other_build;
    uint64_t without_arshim_count = 0, other_build_count = 0;
    // Ranks but 0: this rank's parent in the check's tree, and whether it answered (when not, this rank gave up
    // waiting and disabled ARShim on itself).
    int parent = -1;
    bool parent_answered = true;
};

}  // namespace arshim::stats
