// Small helpers over PMPI_* shared by the shim's modules.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace arshim {

// Broadcasts a string of any length from `root` (every rank passes its own; non-roots receive root's).
int bcast_string(std::string& text, int root, MPI_Comm comm);

// A handle as an integer, for hashing and cache keys (MPICH handles are ints, Open MPI's are pointers).
template <typename Handle>
inline uintptr_t handle_bits(Handle handle) {
    if constexpr (std::is_pointer_v<Handle>)
        return reinterpret_cast<uintptr_t>(handle);
    else
        return static_cast<uintptr_t>(static_cast<unsigned int>(handle));
}

}  // namespace arshim
