// libarshim-abi.so only: the library behind the MPI standard ABI (shim/base/flavor.h).
#include "shim/base/flavor.h"

#include <mpi.h>

#include <cstring>
#include <string>

namespace arshim {

Library library() {
    static const Library found = [] {
        char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
        int length = 0;
        if (PMPI_Get_library_version(text, &length) != MPI_SUCCESS) return Library::mpich;
        return std::strncmp(text, "Open MPI", 8) == 0 ? Library::openmpi : Library::mpich;
    }();
    return found;
}

bool abi_version_matches(std::string* why) {
    int major = -1, minor = -1;
    if (PMPI_Abi_get_version(&major, &minor) != MPI_SUCCESS || major != MPI_ABI_VERSION) {
        *why = "the MPI library implements the MPI standard ABI " + std::to_string(major) + "." +
               std::to_string(minor) + ", libarshim-abi.so was built for ABI " + std::to_string(MPI_ABI_VERSION) +
               ": ARShim is off for this job (every call to the library); rebuild it against this ABI";
        return false;
    }
    return true;
}

}  // namespace arshim
