// SVE kernels, aarch64 only (built with -march=armv8.2-a+sve when meson's host cpu_family is aarch64, chosen at
// run time from HWCAP_SVE). Vector-length agnostic: one predicated loop, whose last iteration's predicate covers
// the tail (seeds/002 §3.6), so there is no scalar epilogue. Internal linkage in arshim::kernels::sve; only
// fill() is visible.
#include <arm_sve.h>

#include <cstddef>
#include <cstdint>

#include "kernels/isa_impl.h"

#if !defined(__ARM_FEATURE_SVE)
#error "sve.cpp must be compiled with SVE enabled (-march=armv8.2-a+sve)"
#endif

namespace arshim::kernels::sve {
namespace {

#include "kernels/semantics.inc"
#include "kernels/drivers.inc"

// Lanes per vector and the "first n lanes" predicate, by element width.
template <class T> uint64_t lanes() {
    if constexpr (sizeof(T) == 1) return svcntb();
    else if constexpr (sizeof(T) == 2) return svcnth();
    else if constexpr (sizeof(T) == 4) return svcntw();
    else return svcntd();
}
template <class T> svbool_t first(uint64_t i, uint64_t n) {
    if constexpr (sizeof(T) == 1) return svwhilelt_b8(i, n);
    else if constexpr (sizeof(T) == 2) return svwhilelt_b16(i, n);
    else if constexpr (sizeof(T) == 4) return svwhilelt_b32(i, n);
    else return svwhilelt_b64(i, n);
}

template <class T> constexpr bool kFloat = static_cast<T>(0.5) != static_cast<T>(0);
template <class T> constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);

// A vector with every lane `x` (integer T only: the logical ops' 0 and 1).
template <class T> auto dup(T x) {
    if constexpr (sizeof(T) == 1) {
        if constexpr (kSigned<T>) return svdup_n_s8(x); else return svdup_n_u8(x);
    } else if constexpr (sizeof(T) == 2) {
        if constexpr (kSigned<T>) return svdup_n_s16(x); else return svdup_n_u16(x);
    } else if constexpr (sizeof(T) == 4) {
        if constexpr (kSigned<T>) return svdup_n_s32(x); else return svdup_n_u32(x);
    } else {
        if constexpr (kSigned<T>) return svdup_n_s64(x); else return svdup_n_u64(x);
    }
}

// One vector of lanes of T: l = in, r = inout. The ACLE intrinsics are overloaded on the element type.
template <Op O, class T, class W> W vop(svbool_t pg, W l, W r) {
    if constexpr (O == Op::sum) return svadd_x(pg, r, l);  // integers wrap; floats as `inout + in`
    else if constexpr (O == Op::prod) return svmul_x(pg, r, l);
    else if constexpr (O == Op::min) {
        if constexpr (kFloat<T>) return svsel(svcmplt(pg, r, l), r, l);  // FMIN would propagate NaN / order -0
        else return svmin_x(pg, r, l);
    } else if constexpr (O == Op::max) {
        if constexpr (kFloat<T>) return svsel(svcmpgt(pg, r, l), r, l);
        else return svmax_x(pg, r, l);
    } else if constexpr (O == Op::land || O == Op::lor || O == Op::lxor) {
        const svbool_t a = svcmpne(pg, l, static_cast<T>(0)), b = svcmpne(pg, r, static_cast<T>(0));
        const svbool_t t = O == Op::land ? svand_z(pg, a, b) : O == Op::lor ? svorr_z(pg, a, b) : sveor_z(pg, a, b);
        return svsel(t, dup<T>(1), dup<T>(0));  // exactly 0 or 1
    } else if constexpr (O == Op::band) return svand_x(pg, l, r);
    else if constexpr (O == Op::bor) return svorr_x(pg, l, r);
    else return sveor_x(pg, l, r);
}

template <Op O, class T> struct Kernel {
    static constexpr size_t size = sizeof(T);
    static void run(char* out, const char* l, const char* r, size_t n) {
        T* o = reinterpret_cast<T*>(out);
        const T* a = reinterpret_cast<const T*>(l);
        const T* b = reinterpret_cast<const T*>(r);
        for (uint64_t i = 0; i < n; i += lanes<T>()) {
            const svbool_t pg = first<T>(i, n);
            svst1(pg, o + i, vop<O, T>(pg, svld1(pg, a + i), svld1(pg, b + i)));
        }
    }
};

template <class Real> struct ComplexSum {  // {re, im} pairs add component-wise
    static constexpr size_t size = 2 * sizeof(Real);
    static void run(char* out, const char* l, const char* r, size_t n) { Kernel<Op::sum, Real>::run(out, l, r, 2 * n); }
};

template <class T> void install_integer(KernelTable& table, Type type) {
    install<Kernel<Op::sum, T>>(table, Op::sum, type);
    install<Kernel<Op::prod, T>>(table, Op::prod, type);
    install<Kernel<Op::min, T>>(table, Op::min, type);
    install<Kernel<Op::max, T>>(table, Op::max, type);
    install<Kernel<Op::land, T>>(table, Op::land, type);
    install<Kernel<Op::lor, T>>(table, Op::lor, type);
    install<Kernel<Op::lxor, T>>(table, Op::lxor, type);
    install<Kernel<Op::band, T>>(table, Op::band, type);
    install<Kernel<Op::bor, T>>(table, Op::bor, type);
    install<Kernel<Op::bxor, T>>(table, Op::bxor, type);
}

template <class T> void install_real(KernelTable& table, Type type) {
    install<Kernel<Op::sum, T>>(table, Op::sum, type);
    install<Kernel<Op::prod, T>>(table, Op::prod, type);
    install<Kernel<Op::min, T>>(table, Op::min, type);
    install<Kernel<Op::max, T>>(table, Op::max, type);
}

}  // namespace

// The same set as simd_body.inc's install_vectorized() (SVE's sizeless vectors do not fit that generic body).
void fill(KernelTable& table) {
    install_integer<int8_t>(table, Type::i8);
    install_integer<uint8_t>(table, Type::u8);
    install_integer<int16_t>(table, Type::i16);
    install_integer<uint16_t>(table, Type::u16);
    install_integer<int32_t>(table, Type::i32);
    install_integer<uint32_t>(table, Type::u32);
    install_integer<int64_t>(table, Type::i64);
    install_integer<uint64_t>(table, Type::u64);
    install_real<float>(table, Type::f32);
    install_real<double>(table, Type::f64);
    install<Kernel<Op::land, uint8_t>>(table, Op::land, Type::boolean);
    install<Kernel<Op::lor, uint8_t>>(table, Op::lor, Type::boolean);
    install<Kernel<Op::lxor, uint8_t>>(table, Op::lxor, Type::boolean);
    install<ComplexSum<float>>(table, Op::sum, Type::c32);
    install<ComplexSum<double>>(table, Op::sum, Type::c64);
}

}  // namespace arshim::kernels::sve
