// ARShim reduction kernels: every MPI predefined reduction on every element type it is defined for, with one
// implementation per ISA chosen once at run time. No MPI dependency: the shim maps MPI handles to Op/Type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/vocabulary.h"

namespace arshim::kernels {

// Ops and element types are the vocabulary's (kernels/vocabulary.h): the shim maps MPI_INT, MPI_INTEGER,
// MPI_INT32_T, ... to Type::i32, etc.
using vocab::kOpCount;
using vocab::kTypeCount;
using vocab::Op;
using vocab::op_name;
using vocab::Type;
using vocab::type_name;

enum class Isa : uint8_t { scalar, avx2, avx512, neon, sve, count };
constexpr std::size_t kIsaCount = static_cast<std::size_t>(Isa::count);

// MPI semantics: inout[i] = in[i] op inout[i], for `count` elements.
using BinaryFn = void (*)(const void* in, void* inout, std::size_t count);
// One pass over several sources: dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i], always in that
// order (so every caller that passes the same sources gets bitwise the same result). dst may alias srcs[0].
// nsrc >= 1 (nsrc == 1 is a copy).
using NaryFn = void (*)(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count);

struct KernelTable {
    BinaryFn binary[kOpCount][kTypeCount];  // nullptr: pair not defined by MPI
    NaryFn nary[kOpCount][kTypeCount];
    Isa isa;
};

const char* isa_name(Isa isa);
std::size_t type_size(Type type);
bool defined(Op op, Type type);            // the MPI standard defines op on this type

bool isa_compiled(Isa isa);                // this build contains kernels for it
bool isa_supported_by_cpu(Isa isa);        // CPUID / hwcaps
Isa best_isa();                            // widest compiled and supported
const KernelTable& table(Isa isa);         // tables filled once; requesting an unsupported ISA returns the best one

// Process-wide active level (default best_isa()); chosen at init from ARSHIM_KERNEL.
// `requested` is one of auto|scalar|avx2|avx512|neon|sve. Returns the level in force; when the CPU or build
// lacks the requested level, *warning receives one line saying so and what was used instead.
Isa select_isa(const std::string& requested, std::string* warning);
const KernelTable& active();
// Tests only: makes `table` the active one (the deliberately wrong kernels of test/verify/kernel_fault.cpp, which
// verify mode must catch). `table` must outlive every reduction.
void replace_active(const KernelTable* table);

}  // namespace arshim::kernels
