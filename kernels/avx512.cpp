// AVX-512 (F, BW, DQ, VL) kernels. Built with exactly those flags (kernels/meson.build) and nothing else may be:
// every symbol is in arshim::kernels::avx512 with internal linkage, and only fill() is visible.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/isa_impl.h"

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "avx512.cpp must be compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl"
#endif

// GCC 12's AVX-512 intrinsics trip a false -Wmaybe-uninitialized on _mm512_undefined_epi32() (GCC PR105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace arshim::kernels::avx512 {
namespace {

#include "kernels/semantics.inc"
#include "kernels/drivers.inc"

using V = __m512i;
constexpr size_t kVecBytes = 64;

V load(const char* p) { return _mm512_loadu_si512(p); }
void store(char* p, V v) { _mm512_storeu_si512(p, v); }

template <class T> constexpr bool kFloat = static_cast<T>(0.5) != static_cast<T>(0);
template <class T> constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);

// 0/1 in every lane where `k` is set (logical ops return exactly 0 or 1).
template <size_t Bytes, class Mask> V ones_where(Mask k) {
    if constexpr (Bytes == 1) return _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(1));
    if constexpr (Bytes == 2) return _mm512_maskz_mov_epi16(k, _mm512_set1_epi16(1));
    if constexpr (Bytes == 4) return _mm512_maskz_mov_epi32(k, _mm512_set1_epi32(1));
    if constexpr (Bytes == 8) return _mm512_maskz_mov_epi64(k, _mm512_set1_epi64(1));
}
template <size_t Bytes> auto nonzero(V v) {
    if constexpr (Bytes == 1) return _mm512_test_epi8_mask(v, v);
    if constexpr (Bytes == 2) return _mm512_test_epi16_mask(v, v);
    if constexpr (Bytes == 4) return _mm512_test_epi32_mask(v, v);
    if constexpr (Bytes == 8) return _mm512_test_epi64_mask(v, v);
}

// There is no 8-bit multiply: multiply even and odd bytes as 16-bit lanes and keep each low byte.
V mul_epi8(V a, V b) {
    const V even = _mm512_mullo_epi16(a, b);
    const V odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
    return _mm512_mask_blend_epi8(0xAAAAAAAAAAAAAAAAull, even, _mm512_slli_epi16(odd, 8));
}

template <Op O, class T> V vop_float(V l, V r) {
    // Operand order matters on NaN and +-0: _mm512_min_ps(a, b) is `a < b ? a : b`, so (r, l) gives
    // semantics.inc's `inout < in ? inout : in`.
    if constexpr (sizeof(T) == 4) {
        const __m512 a = _mm512_castsi512_ps(r), b = _mm512_castsi512_ps(l);
        if constexpr (O == Op::sum) return _mm512_castps_si512(_mm512_add_ps(a, b));
        if constexpr (O == Op::prod) return _mm512_castps_si512(_mm512_mul_ps(a, b));
        if constexpr (O == Op::min) return _mm512_castps_si512(_mm512_min_ps(a, b));
        if constexpr (O == Op::max) return _mm512_castps_si512(_mm512_max_ps(a, b));
    } else {
        const __m512d a = _mm512_castsi512_pd(r), b = _mm512_castsi512_pd(l);
        if constexpr (O == Op::sum) return _mm512_castpd_si512(_mm512_add_pd(a, b));
        if constexpr (O == Op::prod) return _mm512_castpd_si512(_mm512_mul_pd(a, b));
        if constexpr (O == Op::min) return _mm512_castpd_si512(_mm512_min_pd(a, b));
        if constexpr (O == Op::max) return _mm512_castpd_si512(_mm512_max_pd(a, b));
    }
}

template <Op O, class T> V vop_int(V l, V r) {
    constexpr size_t B = sizeof(T);
    if constexpr (O == Op::sum) {  // two's complement: the same instruction wraps signed and unsigned alike
        if constexpr (B == 1) return _mm512_add_epi8(l, r);
        if constexpr (B == 2) return _mm512_add_epi16(l, r);
        if constexpr (B == 4) return _mm512_add_epi32(l, r);
        if constexpr (B == 8) return _mm512_add_epi64(l, r);
    } else if constexpr (O == Op::prod) {  // the low half of the product is the same for signed and unsigned
        if constexpr (B == 1) return mul_epi8(l, r);
        if constexpr (B == 2) return _mm512_mullo_epi16(l, r);
        if constexpr (B == 4) return _mm512_mullo_epi32(l, r);
        if constexpr (B == 8) return _mm512_mullo_epi64(l, r);
    } else if constexpr (O == Op::min) {
        if constexpr (B == 1) return kSigned<T> ? _mm512_min_epi8(l, r) : _mm512_min_epu8(l, r);
        if constexpr (B == 2) return kSigned<T> ? _mm512_min_epi16(l, r) : _mm512_min_epu16(l, r);
        if constexpr (B == 4) return kSigned<T> ? _mm512_min_epi32(l, r) : _mm512_min_epu32(l, r);
        if constexpr (B == 8) return kSigned<T> ? _mm512_min_epi64(l, r) : _mm512_min_epu64(l, r);
    } else if constexpr (O == Op::max) {
        if constexpr (B == 1) return kSigned<T> ? _mm512_max_epi8(l, r) : _mm512_max_epu8(l, r);
        if constexpr (B == 2) return kSigned<T> ? _mm512_max_epi16(l, r) : _mm512_max_epu16(l, r);
        if constexpr (B == 4) return kSigned<T> ? _mm512_max_epi32(l, r) : _mm512_max_epu32(l, r);
        if constexpr (B == 8) return kSigned<T> ? _mm512_max_epi64(l, r) : _mm512_max_epu64(l, r);
    } else if constexpr (O == Op::land) {
        return ones_where<B>(nonzero<B>(l) & nonzero<B>(r));
    } else if constexpr (O == Op::lor) {
        return ones_where<B>(nonzero<B>(l) | nonzero<B>(r));
    } else if constexpr (O == Op::lxor) {
        return ones_where<B>(nonzero<B>(l) ^ nonzero<B>(r));
    } else if constexpr (O == Op::band) {
        return _mm512_and_si512(l, r);
    } else if constexpr (O == Op::bor) {
        return _mm512_or_si512(l, r);
    } else {
        return _mm512_xor_si512(l, r);
    }
}

template <Op O, class T> V vop(V l, V r) {
    if constexpr (kFloat<T>) return vop_float<O, T>(l, r);
    else return vop_int<O, T>(l, r);
}

// The last partial vector with byte-masked loads and stores (they never touch, or fault on, masked-out bytes):
// no scalar epilogue, which seeds/002 §3.5 found costly for short vectors.
template <Op O, class T> void tail(char* out, const char* l, const char* r, size_t bytes) {
    const __mmask64 mask = (1ull << bytes) - 1;  // bytes < 64
    const V lv = _mm512_maskz_loadu_epi8(mask, l), rv = _mm512_maskz_loadu_epi8(mask, r);
    _mm512_mask_storeu_epi8(out, mask, vop<O, T>(lv, rv));
}

#include "kernels/simd_body.inc"

}  // namespace

// MINLOC/MAXLOC on MPI_DOUBLE_INT keeps the AVX2 kernel this table inherits: a 512-bit version needs its
// compare masks moved between k-registers and lane layouts, which made it slower than AVX2's blends
// (docs/kernels.md "Kernel choices, measured").
void fill(KernelTable& table) { install_vectorized(table); }

}  // namespace arshim::kernels::avx512
