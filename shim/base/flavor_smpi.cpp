// The SMPI build's MPI flavor (docs/architecture.md "The SMPI build: where it differs"): the library whose policy
// rules apply follows the collective selector SMPI runs with (`--cfg=smpi/coll-selector:ompi|mpich`), since the
// selector is the simulated library's allreduce that the built-in table's rules were measured against. Anything
// other than `ompi` (mpich, SMPI's default, the others) takes the MPICH rules. The library's non-blocking allreduce
// follows it too (base/library_nb_smpi.cpp: Open MPI's libnbc schedule under `ompi`).
#include <xbt/config.hpp>

#include <string>

#include "shim/base/flavor.h"

namespace arshim {

const char* smpi_selector_flavor() {
    // The configuration is read once: every simulated rank runs in this process, with the same configuration.
    static const char* const flavor =
        simgrid::config::get_value<std::string>("smpi/coll-selector") == "ompi" ? "openmpi" : "mpich";
    return flavor;
}

}  // namespace arshim
