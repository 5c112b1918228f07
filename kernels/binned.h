// Order-independent floating-point sums (ARSHIM_REPRODUCIBLE=any-np, docs/reproducible.md): every contribution is
// turned into a fixed-point integer on a grid set by the largest magnitude of that element over all ranks, the
// integers are added exactly (two's complement, with carries: associative and commutative, so any order, any tree
// and any number of ranks give the same bits), and the exact sum is rounded once, to nearest even. The result is
// therefore the correctly rounded sum of the contributions -- never less accurate than any order of summation --
// whenever every contribution's lowest bit lies on the grid, which spans Frac bits below the largest magnitude
// (159 for double, 96 for float: far beyond the 53 and 24 bits of the types); bits below the grid are rounded to it
// (to nearest, deterministically). Infinities and NaNs follow IEEE 754 (NaN if any NaN or both infinities; the
// infinity otherwise); a sum of negative zeros only is -0.
//
// MPI-free; the shim reduces the accumulators with ARShim's order-preserving algorithms (shim/paths/reproducible.cpp),
// unit tests in test/reproducible/test_binned.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arshim::binned {

// The accumulator of one element: Limbs little-endian 64-bit limbs of a two's complement integer, then flags.
template <int Limbs>
struct Accumulator {
    uint64_t limb[Limbs];
    uint64_t flags;
};
constexpr uint64_t kNaN = 1, kPlusInf = 2, kMinusInf = 4, kNotNegativeZero = 8;

// Per type: limbs and grid bits below the largest magnitude. Headroom for 2^31 contributions above the grid.
template <typename Real>
struct Format;
template <>
struct Format<double> {
    static constexpr int kLimbs = 3;
    static constexpr int kFrac = 159;  // 159 + 31 + sign < 192
};
template <>
struct Format<float> {
    static constexpr int kLimbs = 2;
    static constexpr int kFrac = 96;  // 96 + 31 + sign < 128
};
template <typename Real>
using AccumulatorOf = Accumulator<Format<Real>::kLimbs>;

// |x| of every element, with infinities and NaNs as 0: what the ranks reduce with MAX to set each element's grid.
template <typename Real>
void finite_magnitudes(const Real* in, Real* out, std::size_t count);

// Contributions -> accumulators on the grid of `max_magnitude` (per element, identical on every rank).
template <typename Real>
void to_accumulators(const Real* in, const Real* max_magnitude, AccumulatorOf<Real>* out, std::size_t count);

// inout[i] += in[i] (exact: integers with carry; flags or'ed), and its n-ary form (an NaryFn of kernels.h).
template <typename Real>
void add(const AccumulatorOf<Real>* in, AccumulatorOf<Real>* inout, std::size_t count);
template <typename Real>
void add_nary(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count);

// Accumulators -> the correctly rounded sums.
template <typename Real>
void to_reals(const AccumulatorOf<Real>* in, const Real* max_magnitude, Real* out, std::size_t count);

}  // namespace arshim::binned
