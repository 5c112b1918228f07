// The statistics' clock in the SMPI build (SimGrid's simulated MPI): simulated nanoseconds. rdtsc and steady_clock
// are host time, which under SMPI has nothing to do with the simulated time a call takes (shim/stats/counters.h).
// Each PMPI_Wtime injects SMPI's smpi/wtime delay (10 ns by default; --cfg=smpi/wtime:0 removes it), only on the
// calls whose turn it is to be timed.
#include <mpi.h>

#include <cstdint>

#include "shim/stats/counters.h"

namespace arshim::stats {

uint64_t simulated_ns() { return static_cast<uint64_t>(PMPI_Wtime() * 1e9); }

}  // namespace arshim::stats
