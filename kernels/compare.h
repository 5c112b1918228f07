// Comparing two results of the same reduction: the result an ARShim path delivered and the one the MPI library
// computed for the same inputs (verify mode, shim/modes/verify.cpp). MPI-free, so the rules are unit-tested without
// mpirun (test/kernels/test_compare.cpp).
//
// What counts as the same result:
// - integer, logical and bitwise ops, MIN/MAX and MINLOC/MAXLOC: the same values (floating-point values compared as
//   numbers, so +0 equals -0; a NaN on one side only is "unordered": the libraries themselves disagree on which
//   operand a comparison with a NaN keeps, see kernels/semantics.inc);
// - floating-point SUM: any order of summing p numbers is within gamma(p-1) * sum|x_i| of the exact sum
//   (gamma(k) = k u / (1 - k u), u the unit roundoff; Higham, "Accuracy and Stability of Numerical Algorithms",
//   §4.2), so two orders differ by at most 2 gamma(p-1) sum|x_i|: the bound is computed per element from the data
//   (the caller reduces |x_i| with SUM; complex numbers per component);
// - floating-point PROD: every product of p numbers carries p-1 rounding errors, a relative 2 gamma(p-1) between
//   two orders (complex: (sqrt(5) + 1) u per product, Brent, Percival and Zimmermann 2007); results that are zero,
//   subnormal or infinite on one side only leave the range where that bound holds and are "unordered".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/vocabulary.h"

namespace arshim::compare {

using vocab::Op;
using vocab::Type;

struct Verdict {
    std::size_t mismatches = 0;                // elements that differ beyond what the op allows
    std::size_t first = ~std::size_t{0};       // index of the first of them
    std::size_t unordered = 0;                 // elements outside what a bound can judge (see above)
    double worst_relative = 0;                 // largest |got - ref| / |ref| over floating-point elements
    double worst_bound_share = 0;              // largest |got - ref| / bound (at most 1 when within the bound)
    bool same() const { return mismatches == 0; }
};

// Float and complex SUM need the per-element sums of magnitudes; this says how to make them: `magnitude_type` is
// the real type of the magnitudes and `per_element` how many there are per element (2 for complex). Returns false
// when the op/type pair is compared without them.
bool needs_magnitudes(Op op, Type type, Type* magnitude_type, std::size_t* per_element);
// |x| of every element (per component for complex) of `input` into `out` (count * per_element values).
void magnitudes(Type type, const void* input, void* out, std::size_t count);

// `got` against `ref`, `count` elements of `type` reduced with `op` over `contributions` ranks. `magnitude_sums`:
// the reduced magnitudes when needs_magnitudes() said so, else ignored.
Verdict compare(Op op, Type type, const void* got, const void* ref, const void* magnitude_sums, std::size_t count,
                int contributions);

// Element `index` of a buffer of `type`, as text for a message: "253", "-1.5", "(1,2)", "{3, 17}".
std::string element_text(Type type, const void* base, std::size_t index);

}  // namespace arshim::compare
