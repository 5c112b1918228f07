// Which MPI library the shim is talking to. The flavor libraries know it when they are compiled
// (libarshim-mpich.so, libarshim-openmpi.so); libarshim-abi.so, built against the MPI standard ABI, serves whatever
// library implements libmpi_abi.so.1 and learns which one at run time, from MPI_Get_library_version (callable before
// MPI_Init), once. What depends on it: the built-in table's rules (per library), the known library bugs, and a few
// choices made for one library's algorithms (Open MPI's libnbc in-place trap, its fast 16-byte allreduce).
#pragma once

#include <cstring>
#include <string>

#include "policy/box.h"

namespace arshim {

enum class Library { mpich, openmpi };

#if defined(ARSHIM_FLAVOR_OPENMPI)
inline Library library() { return Library::openmpi; }
#elif defined(ARSHIM_FLAVOR_ABI)
Library library();  // shim/base/flavor_abi.cpp: "Open MPI ..." is openmpi, anything else is taken as MPICH's
// Whether the library's MPI_Abi_get_version has the major version ARShim was built against (the ABI's handles and
// constants are fixed within a major version); else *why says what differs, and ARShim stays out of the way.
bool abi_version_matches(std::string* why);
#else
inline Library library() { return Library::mpich; }
#endif

#if defined(ARSHIM_FLAVOR_SMPI)
// "openmpi" under SMPI's ompi collective selector, else "mpich" (base/flavor_smpi.cpp): the simulated library.
const char* smpi_selector_flavor();
#endif

inline const char* library_name(Library l) { return l == Library::openmpi ? "openmpi" : "mpich"; }

// The library whose algorithms the policy and the cost model reason about (the leaders' inter-node step, the
// candidates online tuning tries): the one this library serves, or under SMPI the collective selector's.
inline policy::Flavor policy_flavor() {
#if defined(ARSHIM_FLAVOR_SMPI)
    static const policy::Flavor flavor =
        std::strcmp(smpi_selector_flavor(), "openmpi") == 0 ? policy::Flavor::openmpi : policy::Flavor::mpich;
    return flavor;
#else
    return library() == Library::openmpi ? policy::Flavor::openmpi : policy::Flavor::mpich;
#endif
}

}  // namespace arshim
