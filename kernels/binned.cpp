#include "kernels/binned.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace arshim::binned {

namespace {

template <typename Real>
constexpr int kDigits = std::numeric_limits<Real>::digits;  // 53, 24
template <typename Real>
constexpr int kLeastUlpExponent = std::numeric_limits<Real>::min_exponent - kDigits<Real>;  // -1074, -149

// IEEE 754 layout of Real, for the conversions below: they read and build the bits directly, because frexp and ldexp
// per element cost many times the rest of the work (docs/reproducible.md "any-np: exact sums").
template <typename Real>
struct Ieee;
template <>
struct Ieee<double> {
    using Bits = uint64_t;
    static constexpr int kFractionBits = 52, kExponentMask = 0x7FF, kBias = 1023;
};
template <>
struct Ieee<float> {
    using Bits = uint32_t;
    static constexpr int kFractionBits = 23, kExponentMask = 0xFF, kBias = 127;
};

template <typename Real>
typename Ieee<Real>::Bits bits_of(Real x) {
    typename Ieee<Real>::Bits b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

// |x| = mantissa * 2^exponent with an integer mantissa below 2^digits (finite x).
template <typename Real>
void decompose(Real x, uint64_t* mantissa, int* exponent) {
    using I = Ieee<Real>;
    const auto b = bits_of(x);
    const int field = static_cast<int>(b >> I::kFractionBits) & I::kExponentMask;
    const uint64_t fraction = static_cast<uint64_t>(b) & ((uint64_t{1} << I::kFractionBits) - 1);
    *mantissa = field != 0 ? fraction | (uint64_t{1} << I::kFractionBits) : fraction;
    *exponent = (field != 0 ? field : 1) - I::kBias - I::kFractionBits;
}

// The exponent E of an element's grid: every finite contribution is below 2^E in magnitude (frexp's exponent).
template <typename Real>
int grid_exponent(Real max_magnitude) {
    if (!(max_magnitude > 0) || !std::isfinite(max_magnitude)) return 0;
    uint64_t mantissa = 0;
    int exponent = 0;
    decompose(max_magnitude, &mantissa, &exponent);
    return exponent + (64 - __builtin_clzll(mantissa));
}

// The Real of value mantissa * 2^exponent, which the caller guarantees is representable (or beyond the largest
// finite value: infinity), built from its bits.
template <typename Real>
Real make_real(uint64_t mantissa, int exponent) {
    using I = Ieee<Real>;
    using Bits = typename Ieee<Real>::Bits;
    if (mantissa == 0) return Real(0);
    const int top = 63 - __builtin_clzll(mantissa);
    const int top_exponent = top + exponent;  // the value lies in [2^top_exponent, 2^(top_exponent + 1))
    Bits b;
    if (top_exponent >= 1 - I::kBias) {  // normal
        const uint64_t normalized = top > I::kFractionBits ? mantissa >> (top - I::kFractionBits)
                                                           : mantissa << (I::kFractionBits - top);
        const int field = top_exponent + I::kBias;
        if (field >= I::kExponentMask) return std::numeric_limits<Real>::infinity();
        b = static_cast<Bits>(static_cast<uint64_t>(field) << I::kFractionBits |
                              (normalized & ((uint64_t{1} << I::kFractionBits) - 1)));
    } else {  // subnormal: in units of the least subnormal, 2^(1 - bias - fraction bits)
        const int shift = exponent - (1 - I::kBias - I::kFractionBits);
        b = static_cast<Bits>(shift >= 0 ? mantissa << shift : mantissa >> -shift);
    }
    Real out;
    std::memcpy(&out, &b, sizeof out);
    return out;
}

template <int Limbs>
void negate(uint64_t (&limb)[Limbs]) {
    uint64_t carry = 1;
    for (int i = 0; i < Limbs; ++i) {
        const uint64_t inverted = ~limb[i];
        limb[i] = inverted + carry;
        carry = carry && limb[i] == 0 ? 1 : 0;
    }
}

template <int Limbs>
bool is_zero(const uint64_t (&limb)[Limbs]) {
    for (int i = 0; i < Limbs; ++i)
        if (limb[i] != 0) return false;
    return true;
}

template <int Limbs>
bool bit(const uint64_t (&limb)[Limbs], int index) {
    return index >= 0 && index < 64 * Limbs && (limb[index / 64] >> (index % 64) & 1u);
}

// Any bit below `index` set.
template <int Limbs>
bool any_below(const uint64_t (&limb)[Limbs], int index) {
    for (int i = 0; i < Limbs && 64 * i < index; ++i) {
        const int bits = index - 64 * i;
        const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
        if (limb[i] & mask) return true;
    }
    return false;
}

// Bits [from, from + 64) as an integer (bits beyond the top read as 0).
template <int Limbs>
uint64_t bits_from(const uint64_t (&limb)[Limbs], int from) {
    const int i = from / 64, shift = from % 64;
    uint64_t out = i < Limbs ? limb[i] >> shift : 0;
    if (shift != 0 && i + 1 < Limbs) out |= limb[i + 1] << (64 - shift);
    return out;
}

template <typename Real>
void to_accumulator(Real x, int grid, AccumulatorOf<Real>& acc) {
    constexpr int kLimbs = Format<Real>::kLimbs;
    std::memset(&acc, 0, sizeof acc);
    if (std::isnan(x)) {
        acc.flags = kNaN | kNotNegativeZero;
        return;
    }
    if (std::isinf(x)) {
        acc.flags = (x > 0 ? kPlusInf : kMinusInf) | kNotNegativeZero;
        return;
    }
    if (x == 0) {
        acc.flags = std::signbit(x) ? 0 : kNotNegativeZero;
        return;
    }
    acc.flags = kNotNegativeZero;
    uint64_t mant = 0;
    int exponent = 0;
    decompose(x, &mant, &exponent);  // |x| = mant * 2^exponent
    const int shift = exponent - (grid - Format<Real>::kFrac);  // the grid's bit 0 weighs 2^(grid - Frac)
    if (shift >= 0) {
        const int i = shift / 64, b = shift % 64;
        if (i < kLimbs) acc.limb[i] = mant << b;
        if (b != 0 && i + 1 < kLimbs) acc.limb[i + 1] = mant >> (64 - b);
    } else {
        // Below the grid: round to nearest, ties to even (deterministic, whatever the order of summation).
        const int r = -shift;
        uint64_t q = 0;  // r >= 64: below half a grid step (mant < 2^53), rounds to 0
        if (r < 64) {
            q = mant >> r;
            const uint64_t rem = mant & ((uint64_t{1} << r) - 1), half = uint64_t{1} << (r - 1);
            if (rem > half || (rem == half && (q & 1))) ++q;
        }
        acc.limb[0] = q;
    }
    if (x < 0) negate(acc.limb);
}

template <typename Real>
Real to_real(const AccumulatorOf<Real>& acc, int grid) {
    constexpr int kLimbs = Format<Real>::kLimbs;
    if ((acc.flags & kNaN) || ((acc.flags & kPlusInf) && (acc.flags & kMinusInf)))
        return std::numeric_limits<Real>::quiet_NaN();
    if (acc.flags & kPlusInf) return std::numeric_limits<Real>::infinity();
    if (acc.flags & kMinusInf) return -std::numeric_limits<Real>::infinity();
    uint64_t magnitude[kLimbs];
    std::memcpy(magnitude, acc.limb, sizeof magnitude);
    if (is_zero(magnitude)) return (acc.flags & kNotNegativeZero) ? Real(0) : -Real(0);
    const bool negative = magnitude[kLimbs - 1] >> 63;
    if (negative) negate(magnitude);
    int top = 0;
    for (int i = kLimbs - 1; i >= 0; --i)
        if (magnitude[i] != 0) {
            top = 64 * i + 63 - __builtin_clzll(magnitude[i]);
            break;
        }
    const int scale = grid - Format<Real>::kFrac;  // bit b weighs 2^(b + scale)
    // The lowest bit the result keeps: digits bits below the top, or the least subnormal's.
    int cut = top - (kDigits<Real> - 1);
    if (kLeastUlpExponent<Real> - scale > cut) cut = kLeastUlpExponent<Real> - scale;
    Real result;
    if (cut <= 0) {
        result = make_real<Real>(bits_from(magnitude, 0), scale);  // exact
    } else {
        uint64_t q = bits_from(magnitude, cut);  // < 2^digits
        if (bit(magnitude, cut - 1) && (any_below(magnitude, cut - 1) || (q & 1))) ++q;  // nearest, ties to even
        result = make_real<Real>(q, cut + scale);  // exact (or beyond the largest finite: infinity, as IEEE rounds)
    }
    return negative ? -result : result;
}

}  // namespace

template <typename Real>
void finite_magnitudes(const Real* in, Real* out, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) out[i] = std::isfinite(in[i]) ? std::fabs(in[i]) : Real(0);
}

template <typename Real>
void to_accumulators(const Real* in, const Real* max_magnitude, AccumulatorOf<Real>* out, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) to_accumulator(in[i], grid_exponent(max_magnitude[i]), out[i]);
}

template <typename Real>
void add(const AccumulatorOf<Real>* in, AccumulatorOf<Real>* inout, std::size_t count) {
    constexpr int kLimbs = Format<Real>::kLimbs;
    for (std::size_t e = 0; e < count; ++e) {
        uint64_t carry = 0;
        for (int i = 0; i < kLimbs; ++i) {
            const uint64_t a = inout[e].limb[i], b = in[e].limb[i];
            const uint64_t sum = a + b;
            const uint64_t with_carry = sum + carry;
            carry = (sum < a) || (with_carry < sum) ? 1 : 0;
            inout[e].limb[i] = with_carry;
        }
        inout[e].flags |= in[e].flags;
    }
}

template <typename Real>
void add_nary(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count) {
    auto* out = static_cast<AccumulatorOf<Real>*>(dst);
    if (out != srcs[0]) std::memcpy(out, srcs[0], count * sizeof(AccumulatorOf<Real>));
    for (std::size_t s = 1; s < nsrc; ++s) add<Real>(static_cast<const AccumulatorOf<Real>*>(srcs[s]), out, count);
}

template <typename Real>
void to_reals(const AccumulatorOf<Real>* in, const Real* max_magnitude, Real* out, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) out[i] = to_real<Real>(in[i], grid_exponent(max_magnitude[i]));
}

#define ARSHIM_BINNED(Real)                                                                                         \
    template void finite_magnitudes<Real>(const Real*, Real*, std::size_t);                                         \
    template void to_accumulators<Real>(const Real*, const Real*, AccumulatorOf<Real>*, std::size_t);               \
    template void add<Real>(const AccumulatorOf<Real>*, AccumulatorOf<Real>*, std::size_t);                         \
    template void add_nary<Real>(void*, const void* const*, std::size_t, std::size_t);                              \
    template void to_reals<Real>(const AccumulatorOf<Real>*, const Real*, Real*, std::size_t);
ARSHIM_BINNED(double)
ARSHIM_BINNED(float)
#undef ARSHIM_BINNED

}  // namespace arshim::binned
