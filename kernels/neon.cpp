// NEON (AdvSIMD) kernels, aarch64 only: built when meson's host cpu_family is aarch64, where AdvSIMD is part of
// the base ISA. Same structure as avx2.cpp: internal linkage in arshim::kernels::neon, only fill() visible.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "kernels/isa_impl.h"

#if !defined(__ARM_NEON) || !defined(__aarch64__)
#error "neon.cpp is for aarch64 (AdvSIMD)"
#endif

namespace arshim::kernels::neon {
namespace {

#include "kernels/semantics.inc"
#include "kernels/drivers.inc"

using V = uint8x16_t;
constexpr size_t kVecBytes = 16;

V load(const char* p) { return vld1q_u8(reinterpret_cast<const uint8_t*>(p)); }
void store(char* p, V v) { vst1q_u8(reinterpret_cast<uint8_t*>(p), v); }

template <class T> constexpr bool kFloat = static_cast<T>(0.5) != static_cast<T>(0);
template <class T> constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);

template <Op O, class T> V vop_float(V l, V r) {
    // NEON's FMIN/FMAX propagate NaN and order -0 < +0, which is not MPI's `inout < in ? inout : in`:
    // compare and select instead.
    if constexpr (sizeof(T) == 4) {
        const float32x4_t a = vreinterpretq_f32_u8(r), b = vreinterpretq_f32_u8(l);
        if constexpr (O == Op::sum) return vreinterpretq_u8_f32(vaddq_f32(a, b));
        if constexpr (O == Op::prod) return vreinterpretq_u8_f32(vmulq_f32(a, b));
        if constexpr (O == Op::min) return vreinterpretq_u8_f32(vbslq_f32(vcltq_f32(a, b), a, b));
        if constexpr (O == Op::max) return vreinterpretq_u8_f32(vbslq_f32(vcgtq_f32(a, b), a, b));
    } else {
        const float64x2_t a = vreinterpretq_f64_u8(r), b = vreinterpretq_f64_u8(l);
        if constexpr (O == Op::sum) return vreinterpretq_u8_f64(vaddq_f64(a, b));
        if constexpr (O == Op::prod) return vreinterpretq_u8_f64(vmulq_f64(a, b));
        if constexpr (O == Op::min) return vreinterpretq_u8_f64(vbslq_f64(vcltq_f64(a, b), a, b));
        if constexpr (O == Op::max) return vreinterpretq_u8_f64(vbslq_f64(vcgtq_f64(a, b), a, b));
    }
}

uint8x16_t mul8(uint8x16_t a, uint8x16_t b) { return vmulq_u8(a, b); }
uint16x8_t mul16(uint16x8_t a, uint16x8_t b) { return vmulq_u16(a, b); }
uint32x4_t mul32(uint32x4_t a, uint32x4_t b) { return vmulq_u32(a, b); }
uint64x2_t mul64(uint64x2_t a, uint64x2_t b) {  // no 64-bit vector multiply in AdvSIMD
    const uint64_t lo = vgetq_lane_u64(a, 0) * vgetq_lane_u64(b, 0);
    const uint64_t hi = vgetq_lane_u64(a, 1) * vgetq_lane_u64(b, 1);
    return vcombine_u64(vcreate_u64(lo), vcreate_u64(hi));
}

// MIN/MAX on integers are exact, so operand order does not matter.
template <Op O, bool Signed> V minmax8(V lv, V rv) {
    if constexpr (Signed) {
        const int8x16_t l = vreinterpretq_s8_u8(lv), r = vreinterpretq_s8_u8(rv);
        return vreinterpretq_u8_s8(O == Op::min ? vminq_s8(l, r) : vmaxq_s8(l, r));
    } else {
        return O == Op::min ? vminq_u8(lv, rv) : vmaxq_u8(lv, rv);
    }
}
template <Op O, bool Signed> V minmax16(V lv, V rv) {
    if constexpr (Signed) {
        const int16x8_t l = vreinterpretq_s16_u8(lv), r = vreinterpretq_s16_u8(rv);
        return vreinterpretq_u8_s16(O == Op::min ? vminq_s16(l, r) : vmaxq_s16(l, r));
    } else {
        const uint16x8_t l = vreinterpretq_u16_u8(lv), r = vreinterpretq_u16_u8(rv);
        return vreinterpretq_u8_u16(O == Op::min ? vminq_u16(l, r) : vmaxq_u16(l, r));
    }
}
template <Op O, bool Signed> V minmax32(V lv, V rv) {
    if constexpr (Signed) {
        const int32x4_t l = vreinterpretq_s32_u8(lv), r = vreinterpretq_s32_u8(rv);
        return vreinterpretq_u8_s32(O == Op::min ? vminq_s32(l, r) : vmaxq_s32(l, r));
    } else {
        const uint32x4_t l = vreinterpretq_u32_u8(lv), r = vreinterpretq_u32_u8(rv);
        return vreinterpretq_u8_u32(O == Op::min ? vminq_u32(l, r) : vmaxq_u32(l, r));
    }
}
template <Op O, bool Signed> V minmax64(V lv, V rv) {  // no 64-bit vmin/vmax: compare and select
    if constexpr (Signed) {
        const int64x2_t l = vreinterpretq_s64_u8(lv), r = vreinterpretq_s64_u8(rv);
        const uint64x2_t take_r = O == Op::min ? vcltq_s64(r, l) : vcgtq_s64(r, l);
        return vreinterpretq_u8_s64(vbslq_s64(take_r, r, l));
    } else {
        const uint64x2_t l = vreinterpretq_u64_u8(lv), r = vreinterpretq_u64_u8(rv);
        const uint64x2_t take_r = O == Op::min ? vcltq_u64(r, l) : vcgtq_u64(r, l);
        return vreinterpretq_u8_u64(vbslq_u64(take_r, r, l));
    }
}

// Lane-width views of the same 128 bits, for the ops whose instruction depends only on the lane width.
struct L8 {
    using T = uint8x16_t;
    static T from(V v) { return v; }
    static V to(T t) { return t; }
    static T add(T a, T b) { return vaddq_u8(a, b); }
    static T mul(T a, T b) { return mul8(a, b); }
    static T truth(T a) { return vtstq_u8(a, a); }  // all ones where a != 0
    static T one() { return vdupq_n_u8(1); }
};
struct L16 {
    using T = uint16x8_t;
    static T from(V v) { return vreinterpretq_u16_u8(v); }
    static V to(T t) { return vreinterpretq_u8_u16(t); }
    static T add(T a, T b) { return vaddq_u16(a, b); }
    static T mul(T a, T b) { return mul16(a, b); }
    static T truth(T a) { return vtstq_u16(a, a); }
    static T one() { return vdupq_n_u16(1); }
};
struct L32 {
    using T = uint32x4_t;
    static T from(V v) { return vreinterpretq_u32_u8(v); }
    static V to(T t) { return vreinterpretq_u8_u32(t); }
    static T add(T a, T b) { return vaddq_u32(a, b); }
    static T mul(T a, T b) { return mul32(a, b); }
    static T truth(T a) { return vtstq_u32(a, a); }
    static T one() { return vdupq_n_u32(1); }
};
struct L64 {
    using T = uint64x2_t;
    static T from(V v) { return vreinterpretq_u64_u8(v); }
    static V to(T t) { return vreinterpretq_u8_u64(t); }
    static T add(T a, T b) { return vaddq_u64(a, b); }
    static T mul(T a, T b) { return mul64(a, b); }
    static T truth(T a) { return vtstq_u64(a, a); }
    static T one() { return vdupq_n_u64(1); }
};

template <Op O, bool Signed, class L, V (*MinMax)(V, V)> V vop_int(V lv, V rv) {
    const typename L::T l = L::from(lv), r = L::from(rv);
    // The truth masks are all-ones or zero in every lane; ANDed with 1 they become exactly 0 or 1.
    if constexpr (O == Op::sum) return L::to(L::add(l, r));  // wraps for signed and unsigned alike
    else if constexpr (O == Op::prod) return L::to(L::mul(l, r));
    else if constexpr (O == Op::min || O == Op::max) return MinMax(lv, rv);
    else if constexpr (O == Op::land) return vandq_u8(vandq_u8(L::to(L::truth(l)), L::to(L::truth(r))), L::to(L::one()));
    else if constexpr (O == Op::lor) return vandq_u8(vorrq_u8(L::to(L::truth(l)), L::to(L::truth(r))), L::to(L::one()));
    else if constexpr (O == Op::lxor) return vandq_u8(veorq_u8(L::to(L::truth(l)), L::to(L::truth(r))), L::to(L::one()));
    else if constexpr (O == Op::band) return vandq_u8(lv, rv);
    else if constexpr (O == Op::bor) return vorrq_u8(lv, rv);
    else return veorq_u8(lv, rv);
}

template <Op O, class T> V vop(V l, V r) {
    if constexpr (kFloat<T>) return vop_float<O, T>(l, r);
    else if constexpr (sizeof(T) == 1) return vop_int<O, kSigned<T>, L8, minmax8<O, kSigned<T>>>(l, r);
    else if constexpr (sizeof(T) == 2) return vop_int<O, kSigned<T>, L16, minmax16<O, kSigned<T>>>(l, r);
    else if constexpr (sizeof(T) == 4) return vop_int<O, kSigned<T>, L32, minmax32<O, kSigned<T>>>(l, r);
    else return vop_int<O, kSigned<T>, L64, minmax64<O, kSigned<T>>>(l, r);
}

template <Op O, class T> void tail(char* out, const char* l, const char* r, size_t bytes) {
    scalar_loop<O, T>(out, l, r, bytes / sizeof(T));
}

#include "kernels/simd_body.inc"

}  // namespace

void fill(KernelTable& table) { install_vectorized(table); }

}  // namespace arshim::kernels::neon
