// Start-up check that every rank of MPI_COMM_WORLD loaded this same ARShim, before any collective call of ARShim's
// own. A rank without ARShim never joins ARShim's broadcasts, so without this check a job preloaded on only some
// ranks hangs in MPI_Init (or its first collectives pair up with the wrong calls).
//
// Point-to-point only, so nothing can pair up with the user's collectives: every rank but 0 sends rank 0 a
// synchronous hello with its ARShim identity (version, MPI flavor); rank 0 waits for every hello (up to the timeout),
// then answers each rank that said hello with one verdict for all. Ranks that get no answer in time (rank 0 has no
// ARShim) cancel their hello and disable ARShim on themselves. Cost when all is well: one small message to and
// from rank 0 per rank, once.
#pragma once

#include <string>

#include "shim/stats/startup_check.h"

namespace arshim {

struct Handshake {
    bool all_loaded = true;  // every rank has this ARShim (then the job proceeds as usual)
    std::string problem;     // when not: one line naming the ranks, for this rank to log
    stats::StartupCheck found;  // the same as data (rank 0: the ranks; the others: their parent), for the log and trace
};

// Collective in spirit over MPI_COMM_WORLD (every rank that loaded ARShim calls it from MPI_Init); `timeout_s` is
// how long rank 0 waits for the hellos (the other ranks wait twice as long for the verdict).
Handshake check_every_rank_loaded(int world_rank, int world_size, int timeout_s);

}  // namespace arshim
