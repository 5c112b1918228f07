// Simulated computation in the SMPI build (sim_charge.h). A charge is an execution on the rank's simulated core:
// `seconds` times the host's speed in flops (smpi_execute_flops), so it takes exactly `seconds` of simulated time
// while the host has a core free for each rank (the platforms of `arshim simulate` have --ppn cores per host), and
// shares the cores like any computation where more ranks than cores compute at once.
#include "shim/base/sim_charge.h"

#include <mpi.h>
#include <simgrid/host.h>

namespace arshim::charge {

double g_copy_seconds_per_byte = 0;
double g_reduce_seconds_per_byte = 0;

void configure(int64_t copy_bytes_per_s, int64_t reduce_bytes_per_s) {
    g_copy_seconds_per_byte = copy_bytes_per_s > 0 ? 1.0 / static_cast<double>(copy_bytes_per_s) : 0.0;
    g_reduce_seconds_per_byte = reduce_bytes_per_s > 0 ? 1.0 / static_cast<double>(reduce_bytes_per_s) : 0.0;
}

void seconds_in_mpi(double seconds) {
    if (seconds > 0) smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self()));
}

void seconds(double seconds) {
    // smpi_execute_benched: the benchmark timer stopped around the execution (with smpi/simulate-computation on,
    // the host time of this call would otherwise be charged on top of it).
    if (seconds > 0) smpi_execute_benched(seconds);
}

}  // namespace arshim::charge
