// What the MPI check programs share (test/mpi/check_allreduce.cpp, test/sharp/check_sharp.cpp): the predefined
// reduction ops they use, by name, and the deterministic test values every rank can compute for every rank.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace check {

enum class Op { sum, prod, min, max, land, lor, lxor, band, bor, bxor, minloc, maxloc };

inline const char* op_name(Op op) {
    static const char* names[] = {"SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
                                  "MINLOC", "MAXLOC"};
    return names[static_cast<int>(op)];
}

inline MPI_Op mpi_op(Op op) {
    switch (op) {
    case Op::sum: return MPI_SUM;
    case Op::prod: return MPI_PROD;
    case Op::min: return MPI_MIN;
    case Op::max: return MPI_MAX;
    case Op::land: return MPI_LAND;
    case Op::lor: return MPI_LOR;
    case Op::lxor: return MPI_LXOR;
    case Op::band: return MPI_BAND;
    case Op::bor: return MPI_BOR;
    case Op::bxor: return MPI_BXOR;
    case Op::minloc: return MPI_MINLOC;
    case Op::maxloc: return MPI_MAXLOC;
    }
    return MPI_OP_NULL;
}

// 64 well-mixed bits per (rank, index, salt): the values are deterministic, so every rank can compute every rank's
// contribution.
inline uint64_t mix(int rank, std::size_t i, int salt) {
    uint64_t x = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull ^
                 static_cast<uint64_t>(salt) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 29);
}

}  // namespace check
