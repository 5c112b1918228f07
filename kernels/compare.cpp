#include "kernels/compare.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

namespace arshim::compare {

namespace {

template <class V, class I>
struct Loc {
    V v;
    I k;
};
template <class R>
struct Cplx {
    R re, im;
};

// gamma(k) = k u / (1 - k u) for the unit roundoff u of R.
template <class R>
long double gamma(long double k) {
    const long double u = std::numeric_limits<R>::epsilon() / 2;
    const long double ku = k * u;
    return ku < 1 ? ku / (1 - ku) : std::numeric_limits<long double>::infinity();
}

void mismatch(Verdict& v, std::size_t i) {
    if (v.mismatches++ == 0) v.first = i;
}

template <class R>
void note_relative(Verdict& v, long double diff, long double ref, long double bound) {
    if (diff == 0) return;
    const long double rel = ref != 0 ? diff / std::fabs(ref) : std::numeric_limits<long double>::infinity();
    if (rel > v.worst_relative) v.worst_relative = static_cast<double>(rel);
    const long double share = bound > 0 ? diff / bound : std::numeric_limits<long double>::infinity();
    if (share > v.worst_bound_share) v.worst_bound_share = static_cast<double>(share);
}

// Numbers compared as numbers: +0 == -0, NaN == NaN; a NaN on one side only is unordered.
template <class R>
void exact_real(Verdict& v, R got, R ref, std::size_t i) {
    if (got == ref || (std::isnan(got) && std::isnan(ref))) return;
    if (std::isnan(got) || std::isnan(ref)) {
        ++v.unordered;
        return;
    }
    mismatch(v, i);
}

// One component of a floating-point sum against its bound 2 gamma(p-1) S, S = sum of magnitudes (itself summed in
// floating point: gamma(p) more of slack).
template <class R>
void sum_component(Verdict& v, R got, R ref, R magnitude_sum, int p, std::size_t i) {
    if (got == ref || (std::isnan(got) && std::isnan(ref))) return;
    const long double s = magnitude_sum;
    if (!std::isfinite(s)) {  // an infinity or NaN among the inputs, or partial sums that may overflow: no bound
        ++v.unordered;
        return;
    }
    // With a finite S no partial sum can overflow, so an infinity or NaN on one side is wrong.
    if (!std::isfinite(got) || !std::isfinite(ref)) {
        mismatch(v, i);
        return;
    }
    const long double bound = 2 * gamma<R>(p - 1) * s * (1 + 2 * gamma<R>(p));
    const long double diff = std::fabs(static_cast<long double>(got) - static_cast<long double>(ref));
    note_relative<R>(v, diff, ref, bound);
    if (diff > bound) mismatch(v, i);
}

template <class R>
bool normal_or_equal(R a, R b) {
    return std::isnormal(a) && std::isnormal(b);
}

template <class R>
void prod_real(Verdict& v, R got, R ref, int p, std::size_t i) {
    if (got == ref || (std::isnan(got) && std::isnan(ref))) return;
    if (!normal_or_equal(got, ref)) {  // zero, subnormal, infinite or NaN on one side: underflow/overflow order
        ++v.unordered;
        return;
    }
    const long double g = got, r = ref;
    const long double bound = 2 * gamma<R>(p - 1) * std::fmax(std::fabs(g), std::fabs(r)) * (1 + gamma<R>(p));
    const long double diff = std::fabs(g - r);
    note_relative<R>(v, diff, r, bound);
    if (diff > bound) mismatch(v, i);
}

template <class R>
void prod_complex(Verdict& v, const Cplx<R>& got, const Cplx<R>& ref, int p, std::size_t i) {
    if (got.re == ref.re && got.im == ref.im) return;
    const long double gm = std::hypot(static_cast<long double>(got.re), static_cast<long double>(got.im));
    const long double rm = std::hypot(static_cast<long double>(ref.re), static_cast<long double>(ref.im));
    const long double least_normal = std::numeric_limits<R>::min();
    if (!std::isfinite(gm) || !std::isfinite(rm) || gm < least_normal || rm < least_normal) {
        ++v.unordered;
        return;
    }
    const long double u = std::numeric_limits<R>::epsilon() / 2;
    const long double per_product = (std::sqrt(5.0L) + 1) * u;
    const long double bound = 2 * (p - 1) * per_product * std::fmax(gm, rm) * (1 + 4 * p * u);
    const long double diff = std::hypot(static_cast<long double>(got.re) - ref.re,
                                        static_cast<long double>(got.im) - ref.im);
    note_relative<R>(v, diff, rm, bound);
    if (diff > bound) mismatch(v, i);
}

template <class T>
void compare_integer(Verdict& v, const T* got, const T* ref, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (got[i] != ref[i]) mismatch(v, i);
}

template <class R>
void compare_real(Verdict& v, Op op, const R* got, const R* ref, const R* sums, std::size_t n, int p) {
    for (std::size_t i = 0; i < n; ++i) {
        if (op == Op::sum) sum_component(v, got[i], ref[i], sums[i], p, i);
        else if (op == Op::prod) prod_real(v, got[i], ref[i], p, i);
        else exact_real(v, got[i], ref[i], i);
    }
}

template <class R>
void compare_complex(Verdict& v, Op op, const Cplx<R>* got, const Cplx<R>* ref, const R* sums, std::size_t n, int p) {
    for (std::size_t i = 0; i < n; ++i) {
        if (op == Op::sum) {
            const std::size_t before = v.mismatches;
            sum_component(v, got[i].re, ref[i].re, sums[2 * i], p, i);
            if (v.mismatches == before) sum_component(v, got[i].im, ref[i].im, sums[2 * i + 1], p, i);
        } else {
            prod_complex(v, got[i], ref[i], p, i);
        }
    }
}

template <class V, class I>
void compare_loc(Verdict& v, const Loc<V, I>* got, const Loc<V, I>* ref, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<V>) {
            const std::size_t before = v.mismatches;
            exact_real(v, got[i].v, ref[i].v, i);
            if (v.mismatches != before) continue;
        } else if (got[i].v != ref[i].v) {
            mismatch(v, i);
            continue;
        }
        if (!(got[i].k == ref[i].k)) mismatch(v, i);
    }
}

template <class R>
void magnitudes_of(const R* in, R* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = std::fabs(in[i]);
}

std::string number_text(long double x) {
    char text[64];
    std::snprintf(text, sizeof text, "%.21Lg", x);
    return text;
}
std::string number_text(double x) {
    char text[48];
    std::snprintf(text, sizeof text, "%.17g", x);
    return text;
}
std::string number_text(float x) {
    char text[48];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(x));
    return text;
}
template <class T>
std::string integer_text(T x) {
    if constexpr (std::is_signed_v<T>)
        return std::to_string(static_cast<long long>(x));
    else
        return std::to_string(static_cast<unsigned long long>(x));
}
template <class T>
std::string any_text(T x) {
    if constexpr (std::is_floating_point_v<T>)
        return number_text(x);
    else
        return integer_text(x);
}

template <class T>
const T* as(const void* p) {
    return static_cast<const T*>(p);
}

}  // namespace

bool needs_magnitudes(Op op, Type type, Type* magnitude_type, std::size_t* per_element) {
    if (op != Op::sum) return false;
    switch (type) {
    case Type::f32: *magnitude_type = Type::f32; *per_element = 1; return true;
    case Type::f64: *magnitude_type = Type::f64; *per_element = 1; return true;
    case Type::f80: *magnitude_type = Type::f80; *per_element = 1; return true;
    case Type::c32: *magnitude_type = Type::f32; *per_element = 2; return true;
    case Type::c64: *magnitude_type = Type::f64; *per_element = 2; return true;
    case Type::c80: *magnitude_type = Type::f80; *per_element = 2; return true;
    default: return false;
    }
}

void magnitudes(Type type, const void* input, void* out, std::size_t count) {
    switch (type) {
    case Type::f32: magnitudes_of(as<float>(input), static_cast<float*>(out), count); break;
    case Type::f64: magnitudes_of(as<double>(input), static_cast<double*>(out), count); break;
    case Type::f80: magnitudes_of(as<long double>(input), static_cast<long double*>(out), count); break;
    case Type::c32: magnitudes_of(as<float>(input), static_cast<float*>(out), 2 * count); break;
    case Type::c64: magnitudes_of(as<double>(input), static_cast<double*>(out), 2 * count); break;
    case Type::c80: magnitudes_of(as<long double>(input), static_cast<long double*>(out), 2 * count); break;
    default: break;
    }
}

Verdict compare(Op op, Type type, const void* got, const void* ref, const void* sums, std::size_t n, int p) {
    Verdict v;
    switch (type) {
    case Type::i8: compare_integer(v, as<int8_t>(got), as<int8_t>(ref), n); break;
    case Type::u8:
    case Type::boolean: compare_integer(v, as<uint8_t>(got), as<uint8_t>(ref), n); break;
    case Type::i16: compare_integer(v, as<int16_t>(got), as<int16_t>(ref), n); break;
    case Type::u16: compare_integer(v, as<uint16_t>(got), as<uint16_t>(ref), n); break;
    case Type::i32: compare_integer(v, as<int32_t>(got), as<int32_t>(ref), n); break;
    case Type::u32: compare_integer(v, as<uint32_t>(got), as<uint32_t>(ref), n); break;
    case Type::i64: compare_integer(v, as<int64_t>(got), as<int64_t>(ref), n); break;
    case Type::u64: compare_integer(v, as<uint64_t>(got), as<uint64_t>(ref), n); break;
    case Type::f32: compare_real(v, op, as<float>(got), as<float>(ref), as<float>(sums), n, p); break;
    case Type::f64: compare_real(v, op, as<double>(got), as<double>(ref), as<double>(sums), n, p); break;
    case Type::f80: compare_real(v, op, as<long double>(got), as<long double>(ref), as<long double>(sums), n, p); break;
    case Type::c32: compare_complex(v, op, as<Cplx<float>>(got), as<Cplx<float>>(ref), as<float>(sums), n, p); break;
    case Type::c64: compare_complex(v, op, as<Cplx<double>>(got), as<Cplx<double>>(ref), as<double>(sums), n, p); break;
    case Type::c80:
        compare_complex(v, op, as<Cplx<long double>>(got), as<Cplx<long double>>(ref), as<long double>(sums), n, p);
        break;
    case Type::float_int: compare_loc(v, as<Loc<float, int>>(got), as<Loc<float, int>>(ref), n); break;
    case Type::double_int: compare_loc(v, as<Loc<double, int>>(got), as<Loc<double, int>>(ref), n); break;
    case Type::long_int: compare_loc(v, as<Loc<long, int>>(got), as<Loc<long, int>>(ref), n); break;
    case Type::int_int: compare_loc(v, as<Loc<int, int>>(got), as<Loc<int, int>>(ref), n); break;
    case Type::short_int: compare_loc(v, as<Loc<short, int>>(got), as<Loc<short, int>>(ref), n); break;
    case Type::long_double_int:
        compare_loc(v, as<Loc<long double, int>>(got), as<Loc<long double, int>>(ref), n);
        break;
    case Type::float_float: compare_loc(v, as<Loc<float, float>>(got), as<Loc<float, float>>(ref), n); break;
    case Type::double_double: compare_loc(v, as<Loc<double, double>>(got), as<Loc<double, double>>(ref), n); break;
    case Type::count: break;
    }
    return v;
}

std::string element_text(Type type, const void* base, std::size_t i) {
    switch (type) {
    case Type::i8: return any_text(as<int8_t>(base)[i]);
    case Type::u8:
    case Type::boolean: return any_text(as<uint8_t>(base)[i]);
    case Type::i16: return any_text(as<int16_t>(base)[i]);
    case Type::u16: return any_text(as<uint16_t>(base)[i]);
    case Type::i32: return any_text(as<int32_t>(base)[i]);
    case Type::u32: return any_text(as<uint32_t>(base)[i]);
    case Type::i64: return any_text(as<int64_t>(base)[i]);
    case Type::u64: return any_text(as<uint64_t>(base)[i]);
    case Type::f32: return any_text(as<float>(base)[i]);
    case Type::f64: return any_text(as<double>(base)[i]);
    case Type::f80: return any_text(as<long double>(base)[i]);
    case Type::c32: return "(" + any_text(as<float>(base)[2 * i]) + "," + any_text(as<float>(base)[2 * i + 1]) + ")";
    case Type::c64: return "(" + any_text(as<double>(base)[2 * i]) + "," + any_text(as<double>(base)[2 * i + 1]) + ")";
    case Type::c80:
        return "(" + any_text(as<long double>(base)[2 * i]) + "," + any_text(as<long double>(base)[2 * i + 1]) + ")";
#define ARSHIM_LOC_TEXT(T, V, I)                                                        \
    case Type::T: {                                                                     \
        const auto& e = as<Loc<V, I>>(base)[i];                                         \
        return "{" + any_text(e.v) + ", " + any_text(e.k) + "}";                        \
    }
        ARSHIM_LOC_TEXT(float_int, float, int)
        ARSHIM_LOC_TEXT(double_int, double, int)
        ARSHIM_LOC_TEXT(long_int, long, int)
        ARSHIM_LOC_TEXT(int_int, int, int)
        ARSHIM_LOC_TEXT(short_int, short, int)
        ARSHIM_LOC_TEXT(long_double_int, long double, int)
        ARSHIM_LOC_TEXT(float_float, float, float)
        ARSHIM_LOC_TEXT(double_double, double, double)
#undef ARSHIM_LOC_TEXT
    case Type::count: break;
    }
    return "?";
}

}  // namespace arshim::compare
