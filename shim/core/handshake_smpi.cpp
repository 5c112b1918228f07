// The start-up check in the SMPI build (SimGrid's simulated MPI), compiled instead of handshake.cpp.
//
// There ARShim is linked into the program (libarshim-smpi.a), so every rank of the simulation has it and the real
// check's point-to-point hellos, host-clock deadlines and real sleeps are not needed (and harmful: a rank that sleeps
// stops the whole simulation, and the host-clock deadline is not the simulated one). One blocking allreduce checks
// that every rank has the same identity (version, flavor): the maximum of the identity and of its complement.
#include "shim/core/handshake.h"

#include <mpi.h>

#include <cstdint>

#include "arshim_config.h"
#include "policy/routing_words.h"
#include "shim/core/runtime.h"

namespace arshim {

Handshake check_every_rank_loaded(int /*world_rank*/, int world_size, int /*timeout_s*/) {
    if (world_size <= 1) return {};
    const uint64_t mine = vocab::Fnv1a().text(ARSHIM_VERSION).text("/").text(mpi_flavor()).value();
    uint64_t seen[2] = {mine, ~mine};
    Handshake result;
    if (PMPI_Allreduce(MPI_IN_PLACE, seen, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS ||
        seen[0] != mine || ~seen[1] != mine) {
        result.all_loaded = false;
        result.problem = "the ranks of this simulation linked different ARShim builds: ARShim is disabled on every rank";
    }
    return result;
}

}  // namespace arshim
