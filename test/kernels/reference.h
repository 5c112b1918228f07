// Test support for the kernels: an independent, deliberately plain reference implementation of every MPI
// reduction, test data with edge values, and element comparison. Written apart from kernels/semantics.inc on
// purpose: a test that reused the kernels' own definition could not catch a wrong definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"

namespace arshim::test {

using kernels::Op;
using kernels::Type;

constexpr Op kAllOps[] = {Op::sum,  Op::prod, Op::min, Op::max,  Op::land,   Op::lor,
                          Op::lxor, Op::band, Op::bor, Op::bxor, Op::minloc, Op::maxloc};

inline std::vector<Type> all_types() {
    std::vector<Type> types;
    for (size_t t = 0; t < kernels::kTypeCount; ++t) types.push_back(static_cast<Type>(t));
    return types;
}

template <class V, class I> struct Pair {
    V v;
    I k;
};
template <class R> struct Complex {
    R re, im;
};

inline bool is_integer(Type t) { return t <= Type::u64; }
inline bool is_pair(Type t) { return t >= Type::float_int; }
inline bool is_floating(Type t) { return t >= Type::f32 && t <= Type::c80; }

// The MPI 4.0 §6.9.2 table, by representation, written out here independently of kernels::defined().
inline bool standard_defines(Op op, Type t) {
    const bool real = t == Type::f32 || t == Type::f64 || t == Type::f80;
    const bool complex = t == Type::c32 || t == Type::c64 || t == Type::c80;
    switch (op) {
    case Op::sum:
    case Op::prod: return is_integer(t) || real || complex;
    case Op::min:
    case Op::max: return is_integer(t) || real;
    case Op::land:
    case Op::lor:
    case Op::lxor: return is_integer(t) || t == Type::boolean;
    case Op::band:
    case Op::bor:
    case Op::bxor: return is_integer(t);
    case Op::minloc:
    case Op::maxloc: return is_pair(t);
    default: return false;
    }
}

// Bytes of a long double that hold its value (x87: 10 of 16).
constexpr size_t kLdBytes = std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);

// ---------------------------------------------------------------------------------------------------------------
// Reference: out = l op r, l = `in`, r = `inout` (MPI's inout = in op inout). Values are read and written field by
// field with memcpy, so padding in `out` keeps whatever it held (as the MPI libraries leave it).
namespace ref {

template <class T> T get(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}
template <class T> void put(uint8_t* p, T v) {
    if constexpr (std::is_same_v<T, long double>)
        std::memcpy(p, &v, kLdBytes);
    else
        std::memcpy(p, &v, sizeof(T));
}

template <class T> T integer(Op op, T l, T r) {
    // Two's complement wrap-around, computed on 64-bit unsigned and truncated.
    const uint64_t a = static_cast<uint64_t>(l), b = static_cast<uint64_t>(r);
    switch (op) {
    case Op::sum: return static_cast<T>(a + b);
    case Op::prod: return static_cast<T>(a * b);
    case Op::min: return l < r ? l : r;  // integers: ties are indistinguishable
    case Op::max: return l > r ? l : r;
    case Op::land: return (l != 0 && r != 0) ? 1 : 0;
    case Op::lor: return (l != 0 || r != 0) ? 1 : 0;
    case Op::lxor: return ((l != 0) != (r != 0)) ? 1 : 0;
    case Op::band: return static_cast<T>(l & r);
    case Op::bor: return static_cast<T>(l | r);
    case Op::bxor: return static_cast<T>(l ^ r);
    default: return 0;
    }
}

// MIN/MAX as MPICH 4.0.2 and Open MPI 4.1's base op compute them (measured): keep inout only when it is
// strictly better; a NaN on either side, or a tie between +0 and -0, gives `in`.
template <class T> T real(Op op, T l, T r) {
    switch (op) {
    case Op::sum: return l + r;
    case Op::prod: return l * r;
    case Op::min:
        if (std::isnan(l) || std::isnan(r)) return l;
        return r < l ? r : l;
    case Op::max:
        if (std::isnan(l) || std::isnan(r)) return l;
        return r > l ? r : l;
    default: return 0;
    }
}

// C11 Annex G.5.1's multiplication (the standard's example _Cmultd, written out): the straightforward product,
// and when both of its parts are NaN, recovery of the infinities that the NaNs hide. This is what C's `*` on
// _Complex values computes and what both MPI libraries do for MPI_C_*_COMPLEX.
template <class R> Complex<R> annex_g_multiply(R a, R b, R c, R d) {
    const R ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    R x = ac - bd, y = ad + bc;
    if (std::isnan(x) && std::isnan(y)) {
        bool recalc = false;
        auto box = [](R v) { return std::copysign(std::isinf(v) ? R(1) : R(0), v); };
        auto unnan = [](R& v) { if (std::isnan(v)) v = std::copysign(R(0), v); };
        if (std::isinf(a) || std::isinf(b)) {
            a = box(a), b = box(b);
            unnan(c), unnan(d);
            recalc = true;
        }
        if (std::isinf(c) || std::isinf(d)) {
            c = box(c), d = box(d);
            unnan(a), unnan(b);
            recalc = true;
        }
        if (!recalc && (std::isinf(ac) || std::isinf(bd) || std::isinf(ad) || std::isinf(bc))) {
            unnan(a), unnan(b), unnan(c), unnan(d);
            recalc = true;
        }
        if (recalc) {
            x = std::numeric_limits<R>::infinity() * (a * c - b * d);
            y = std::numeric_limits<R>::infinity() * (a * d + b * c);
        }
    }
    return {x, y};
}

template <class R> Complex<R> complex(Op op, Complex<R> in, Complex<R> io) {
    if (op == Op::sum) return {in.re + io.re, in.im + io.im};
    return annex_g_multiply(io.re, io.im, in.re, in.im);  // (a + bi) = inout, (c + di) = in
}

template <class V, class I> Pair<V, I> loc(Op op, Pair<V, I> in, Pair<V, I> io) {
    const bool in_better = op == Op::minloc ? in.v < io.v : in.v > io.v;
    if (in_better) return in;
    if (in.v == io.v) return {io.v, io.k < in.k ? io.k : in.k};  // a NaN index (MPI_2REAL) gives in's
    return io;  // inout better, or NaN
}

template <class T> void integer_array(Op op, uint8_t* out, const uint8_t* l, const uint8_t* r, size_t n) {
    for (size_t i = 0; i < n; ++i)
        put(out + i * sizeof(T), integer<T>(op, get<T>(l + i * sizeof(T)), get<T>(r + i * sizeof(T))));
}
template <class T> void real_array(Op op, uint8_t* out, const uint8_t* l, const uint8_t* r, size_t n) {
    for (size_t i = 0; i < n; ++i)
        put(out + i * sizeof(T), real<T>(op, get<T>(l + i * sizeof(T)), get<T>(r + i * sizeof(T))));
}
template <class R> void complex_array(Op op, uint8_t* out, const uint8_t* l, const uint8_t* r, size_t n) {
    constexpr size_t S = 2 * sizeof(R);
    for (size_t i = 0; i < n; ++i) {
        const Complex<R> a{get<R>(l + i * S), get<R>(l + i * S + sizeof(R))};
        const Complex<R> b{get<R>(r + i * S), get<R>(r + i * S + sizeof(R))};
        const Complex<R> c = complex<R>(op, a, b);
        put<R>(out + i * S, c.re);
        put<R>(out + i * S + sizeof(R), c.im);
    }
}
template <class V, class I> void loc_array(Op op, uint8_t* out, const uint8_t* l, const uint8_t* r, size_t n) {
    using P = Pair<V, I>;
    constexpr size_t S = sizeof(P), KO = offsetof(P, k);
    for (size_t i = 0; i < n; ++i) {
        const P a{get<V>(l + i * S), get<I>(l + i * S + KO)};
        const P b{get<V>(r + i * S), get<I>(r + i * S + KO)};
        const P c = loc<V, I>(op, a, b);
        put<V>(out + i * S, c.v);
        put<I>(out + i * S + KO, c.k);
    }
}

inline void array(Op op, Type t, void* out_, const void* l_, const void* r_, size_t n) {
    auto* out = static_cast<uint8_t*>(out_);
    const auto* l = static_cast<const uint8_t*>(l_);
    const auto* r = static_cast<const uint8_t*>(r_);
    switch (t) {
    case Type::i8: return integer_array<int8_t>(op, out, l, r, n);
    case Type::u8:
    case Type::boolean: return integer_array<uint8_t>(op, out, l, r, n);
    case Type::i16: return integer_array<int16_t>(op, out, l, r, n);
    case Type::u16: return integer_array<uint16_t>(op, out, l, r, n);
    case Type::i32: return integer_array<int32_t>(op, out, l, r, n);
    case Type::u32: return integer_array<uint32_t>(op, out, l, r, n);
    case Type::i64: return integer_array<int64_t>(op, out, l, r, n);
    case Type::u64: return integer_array<uint64_t>(op, out, l, r, n);
    case Type::f32: return real_array<float>(op, out, l, r, n);
    case Type::f64: return real_array<double>(op, out, l, r, n);
    case Type::f80: return real_array<long double>(op, out, l, r, n);
    case Type::c32: return complex_array<float>(op, out, l, r, n);
    case Type::c64: return complex_array<double>(op, out, l, r, n);
    case Type::c80: return complex_array<long double>(op, out, l, r, n);
    case Type::float_int: return loc_array<float, int>(op, out, l, r, n);
    case Type::double_int: return loc_array<double, int>(op, out, l, r, n);
    case Type::long_int: return loc_array<long, int>(op, out, l, r, n);
    case Type::int_int: return loc_array<int, int>(op, out, l, r, n);
    case Type::short_int: return loc_array<short, int>(op, out, l, r, n);
    case Type::long_double_int: return loc_array<long double, int>(op, out, l, r, n);
    case Type::float_float: return loc_array<float, float>(op, out, l, r, n);
    case Type::double_double: return loc_array<double, double>(op, out, l, r, n);
    default: return;
    }
}

// dst = srcs[0] op srcs[1] op ... (left fold). One source is a plain copy; otherwise dst's bytes outside the
// values (padding) keep what dst held.
inline void nary(Op op, Type t, void* dst, const std::vector<const void*>& srcs, size_t n) {
    const size_t bytes = n * kernels::type_size(t);
    if (srcs.size() == 1) {
        std::memmove(dst, srcs[0], bytes);
        return;
    }
    std::vector<uint8_t> acc(static_cast<const uint8_t*>(dst), static_cast<const uint8_t*>(dst) + bytes);
    array(op, t, acc.data(), srcs[0], srcs[1], n);
    for (size_t k = 2; k < srcs.size(); ++k) array(op, t, acc.data(), acc.data(), srcs[k], n);
    if (bytes) std::memcpy(dst, acc.data(), bytes);
}

}  // namespace ref

// ---------------------------------------------------------------------------------------------------------------
// Comparison: bitwise, except that two NaNs from SUM/PROD are equal whatever their payloads (which of two NaN
// operands' payload survives an addition is up to the instruction's operand order, not MPI semantics).
struct Mismatch {
    bool any = false;
    size_t index = 0;
    std::string detail;
};

inline bool nan_bytes(const uint8_t* p, size_t component) {
    if (component == 4) return std::isnan(ref::get<float>(p));
    if (component == 8) return std::isnan(ref::get<double>(p));
    return std::isnan(ref::get<long double>(p));
}

inline std::string hex(const uint8_t* p, size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

inline bool same_element(Op op, Type t, const uint8_t* a, const uint8_t* b) {
    const size_t size = kernels::type_size(t);
    if (is_floating(t) && (op == Op::sum || op == Op::prod)) {
        const bool complex = t >= Type::c32;
        const size_t component = complex ? size / 2 : size;
        const size_t value_bytes = component == sizeof(long double) ? kLdBytes : component;
        for (size_t c = 0; c < (complex ? 2u : 1u); ++c) {
            const uint8_t* x = a + c * component;
            const uint8_t* y = b + c * component;
            if (nan_bytes(x, component) && nan_bytes(y, component)) continue;
            if (std::memcmp(x, y, value_bytes) != 0) return false;
        }
        return true;
    }
    return std::memcmp(a, b, size) == 0;
}

inline Mismatch compare(Op op, Type t, const void* got, const void* want, size_t n) {
    const size_t size = kernels::type_size(t);
    const auto* g = static_cast<const uint8_t*>(got);
    const auto* w = static_cast<const uint8_t*>(want);
    if (n == 0 || std::memcmp(g, w, n * size) == 0) return {};  // the common case, fast
    for (size_t i = 0; i < n; ++i) {
        if (!same_element(op, t, g + i * size, w + i * size))
            return {true, i, "element " + std::to_string(i) + ": got " + hex(g + i * size, size) + " want " +
                                 hex(w + i * size, size)};
    }
    return {};
}

// ---------------------------------------------------------------------------------------------------------------
// Test data: random values mixed with each type's edge values (NaN, +-0, +-inf, INT_MIN/MAX, 0/1/other truth
// values, equal values for MINLOC/MAXLOC ties).
class DataGen {
public:
    explicit DataGen(uint64_t seed) : rng_(seed) {}

    void fill(Op op, Type t, void* p, size_t n) {
        auto* b = static_cast<uint8_t*>(p);
        const size_t size = kernels::type_size(t);
        for (size_t i = 0; i < n; ++i) element(op, t, b + i * size);
    }

private:
    template <class T> T integer_value(Op op) {
        const uint64_t r = rng_();
        if (op == Op::land || op == Op::lor || op == Op::lxor) {
            // mostly 0/1, some other truth values (a high bit only, all bits)
            switch (r % 8) {
            case 0:
            case 1:
            case 2: return 0;
            case 3:
            case 4:
            case 5: return 1;
            case 6: return static_cast<T>(static_cast<uint64_t>(1) << (8 * sizeof(T) - 1));
            default: return static_cast<T>(r >> 8);
            }
        }
        switch (r % 16) {
        case 0: return std::numeric_limits<T>::min();
        case 1: return std::numeric_limits<T>::max();
        case 2: return 0;
        case 3: return 1;
        case 4: return static_cast<T>(-1);
        case 5: return static_cast<T>((r >> 8) % 5);  // small values: equal elements on both sides
        default: return static_cast<T>(r >> 4);
        }
    }
    template <class T> T real_value() {
        const uint64_t r = rng_();
        switch (r % 24) {
        case 0: return std::numeric_limits<T>::quiet_NaN();
        case 1: return -std::numeric_limits<T>::quiet_NaN();
        case 2: return T(0);
        case 3: return -T(0);
        case 4: return std::numeric_limits<T>::infinity();
        case 5: return -std::numeric_limits<T>::infinity();
        case 6: return std::numeric_limits<T>::denorm_min();
        case 7: return std::numeric_limits<T>::max();
        case 8: return T(static_cast<int>((r >> 8) % 3));  // ties
        default: {
            std::uniform_real_distribution<double> dist(-1e3, 1e3);
            return static_cast<T>(dist(rng_));
        }
        }
    }
    template <class T> T finite_value() {
        std::uniform_real_distribution<double> dist(-1e3, 1e3);
        return static_cast<T>(dist(rng_));
    }
    template <class V, class I> void pair_value(uint8_t* p) {
        V v;
        if constexpr (std::is_floating_point_v<V>) {
            v = rng_() % 4 == 0 ? real_value<V>() : static_cast<V>(static_cast<int>(rng_() % 4));  // many ties
        } else {
            const uint64_t r = rng_();
            v = r % 8 == 0 ? std::numeric_limits<V>::min() : r % 8 == 1 ? std::numeric_limits<V>::max()
                                                                         : static_cast<V>(static_cast<int>(r % 4) - 1);
        }
        I k = static_cast<I>(static_cast<int>(rng_() % 64) - 8);  // a few negative indices
        ref::put<V>(p, v);
        using P = Pair<V, I>;
        ref::put<I>(p + offsetof(P, k), k);
    }

    void element(Op op, Type t, uint8_t* p) {
        switch (t) {
        case Type::i8: return ref::put(p, integer_value<int8_t>(op));
        case Type::u8: return ref::put(p, integer_value<uint8_t>(op));
        case Type::boolean: {
            const uint64_t r = rng_() % 8;  // C bool should hold 0/1; other bytes must still count as true
            return ref::put<uint8_t>(p, r < 3 ? 0 : r < 7 ? 1 : 0x80);
        }
        case Type::i16: return ref::put(p, integer_value<int16_t>(op));
        case Type::u16: return ref::put(p, integer_value<uint16_t>(op));
        case Type::i32: return ref::put(p, integer_value<int32_t>(op));
        case Type::u32: return ref::put(p, integer_value<uint32_t>(op));
        case Type::i64: return ref::put(p, integer_value<int64_t>(op));
        case Type::u64: return ref::put(p, integer_value<uint64_t>(op));
        case Type::f32: return ref::put(p, real_value<float>());
        case Type::f64: return ref::put(p, real_value<double>());
        case Type::f80: return ref::put(p, real_value<long double>());
        case Type::c32: return complex_value<float>(op, p);
        case Type::c64: return complex_value<double>(op, p);
        case Type::c80: return complex_value<long double>(op, p);
        case Type::float_int: return pair_value<float, int>(p);
        case Type::double_int: return pair_value<double, int>(p);
        case Type::long_int: return pair_value<long, int>(p);
        case Type::int_int: return pair_value<int, int>(p);
        case Type::short_int: return pair_value<short, int>(p);
        case Type::long_double_int: return pair_value<long double, int>(p);
        case Type::float_float: return pair_value<float, float>(p);
        case Type::double_double: return pair_value<double, double>(p);
        default: return;
        }
    }
    template <class R> void complex_value(Op, uint8_t* p) {
        const bool edge = rng_() % 8 == 0;
        ref::put<R>(p, edge ? real_value<R>() : finite_value<R>());
        ref::put<R>(p + sizeof(R), edge ? real_value<R>() : finite_value<R>());
    }

    std::mt19937_64 rng_;
};

}  // namespace arshim::test
