// Simulated computation, charged explicitly (the SMPI build only; docs/architecture.md "The SMPI build: where it
// differs"). `arshim simulate` runs SMPI with smpi/simulate-computation:no, so the host CPU time a rank spends
// between MPI calls costs nothing in simulated time (the host's noise, SMPI's own overhead). What ARShim computes is
// charged instead, deterministically, from two per-byte costs of a node with all its ranks active:
// ARSHIM_SMPI_COPY_BYTES_PER_S (every node copy: a rank's input into node shared memory, a result out of it, a
// staged segment) and ARSHIM_SMPI_REDUCE_BYTES_PER_S (every reduction: n bytes folded into n bytes, so a pass over k
// sources of n bytes reduces (k - 1) n bytes). 0 (the default) charges nothing. The library's reductions are charged
// at the same rate through the op it is handed: ARShim's SIMD op, whose function charges and then reduces
// (shim/core/simd_ops.h charged_library_op). In the real build every function here is an empty inline.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arshim::charge {

#if defined(ARSHIM_FLAVOR_SMPI)

extern double g_copy_seconds_per_byte;    // 0: copies are not charged
extern double g_reduce_seconds_per_byte;  // 0: reductions are not charged

// From the settings, once at initialization (bytes per second; 0 charges nothing).
void configure(int64_t copy_bytes_per_s, int64_t reduce_bytes_per_s);

// `seconds` of computation on this rank's core, from ARShim's own code (between MPI calls: SMPI's benchmark timer
// is stopped around it).
void seconds(double seconds);
// The same from within an MPI call (an op's function, run by the library's collective or MPI_Reduce_local).
void seconds_in_mpi(double seconds);

inline bool reductions_charged() { return g_reduce_seconds_per_byte > 0; }

inline void copy(std::size_t bytes) {
    if (g_copy_seconds_per_byte > 0 && bytes > 0) seconds(static_cast<double>(bytes) * g_copy_seconds_per_byte);
}
inline void reduce(std::size_t bytes) {
    if (g_reduce_seconds_per_byte > 0 && bytes > 0) seconds(static_cast<double>(bytes) * g_reduce_seconds_per_byte);
}
// One n-ary pass over `sources` sources of `bytes` each (kernels::NaryFn): (sources - 1) x bytes reduced; one source
// is a copy.
inline void nary(std::size_t bytes, std::size_t sources) {
    if (sources > 1) reduce(bytes * (sources - 1));
    else copy(bytes);
}
inline void reduce_in_mpi(std::size_t bytes) {
    if (g_reduce_seconds_per_byte > 0 && bytes > 0)
        seconds_in_mpi(static_cast<double>(bytes) * g_reduce_seconds_per_byte);
}

#else

inline void configure(int64_t, int64_t) {}
constexpr bool reductions_charged() { return false; }
inline void copy(std::size_t) {}
inline void reduce(std::size_t) {}
inline void nary(std::size_t, std::size_t) {}
inline void reduce_in_mpi(std::size_t) {}

#endif

}  // namespace arshim::charge
