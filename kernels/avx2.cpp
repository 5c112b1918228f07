// AVX2 kernels. Built with -mavx2 -mfma (kernels/meson.build) and nothing else may be: every symbol is in
// arshim::kernels::avx2 with internal linkage, and only fill() is visible.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/isa_impl.h"

#if !defined(__AVX2__)
#error "avx2.cpp must be compiled with -mavx2"
#endif

namespace arshim::kernels::avx2 {
namespace {

#include "kernels/semantics.inc"
#include "kernels/drivers.inc"

using V = __m256i;
constexpr size_t kVecBytes = 32;

V load(const char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
void store(char* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

template <class T> constexpr bool kFloat = static_cast<T>(0.5) != static_cast<T>(0);
template <class T> constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);

template <size_t Bytes> V is_zero(V v) {  // all-ones lanes where v == 0
    const V zero = _mm256_setzero_si256();
    if constexpr (Bytes == 1) return _mm256_cmpeq_epi8(v, zero);
    if constexpr (Bytes == 2) return _mm256_cmpeq_epi16(v, zero);
    if constexpr (Bytes == 4) return _mm256_cmpeq_epi32(v, zero);
    if constexpr (Bytes == 8) return _mm256_cmpeq_epi64(v, zero);
}
template <size_t Bytes> V one() {
    if constexpr (Bytes == 1) return _mm256_set1_epi8(1);
    if constexpr (Bytes == 2) return _mm256_set1_epi16(1);
    if constexpr (Bytes == 4) return _mm256_set1_epi32(1);
    if constexpr (Bytes == 8) return _mm256_set1_epi64x(1);
}

// No 8-bit multiply: multiply even and odd bytes as 16-bit lanes and keep each low byte.
V mul_epi8(V a, V b) {
    const V even = _mm256_mullo_epi16(a, b);
    const V odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
    return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00FF)), _mm256_slli_epi16(odd, 8));
}
// No 64-bit multiply before AVX-512DQ: lo*lo + ((lo*hi + hi*lo) << 32), which is the product mod 2^64.
V mul_epi64(V a, V b) {
    const V lolo = _mm256_mul_epu32(a, b);
    const V cross = _mm256_add_epi64(_mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)),
                                     _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b));
    return _mm256_add_epi64(lolo, _mm256_slli_epi64(cross, 32));
}
// No 64-bit min/max before AVX-512F: compare (unsigned: with the sign bits flipped) and blend.
template <bool Signed> V greater_epi64(V a, V b) {
    if constexpr (Signed) return _mm256_cmpgt_epi64(a, b);
    const V flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
}

template <Op O, class T> V vop_float(V l, V r) {
    // Operand order matters on NaN and +-0: _mm256_min_ps(a, b) is `a < b ? a : b`, so (r, l) gives
    // semantics.inc's `inout < in ? inout : in`.
    if constexpr (sizeof(T) == 4) {
        const __m256 a = _mm256_castsi256_ps(r), b = _mm256_castsi256_ps(l);
        if constexpr (O == Op::sum) return _mm256_castps_si256(_mm256_add_ps(a, b));
        if constexpr (O == Op::prod) return _mm256_castps_si256(_mm256_mul_ps(a, b));
        if constexpr (O == Op::min) return _mm256_castps_si256(_mm256_min_ps(a, b));
        if constexpr (O == Op::max) return _mm256_castps_si256(_mm256_max_ps(a, b));
    } else {
        const __m256d a = _mm256_castsi256_pd(r), b = _mm256_castsi256_pd(l);
        if constexpr (O == Op::sum) return _mm256_castpd_si256(_mm256_add_pd(a, b));
        if constexpr (O == Op::prod) return _mm256_castpd_si256(_mm256_mul_pd(a, b));
        if constexpr (O == Op::min) return _mm256_castpd_si256(_mm256_min_pd(a, b));
        if constexpr (O == Op::max) return _mm256_castpd_si256(_mm256_max_pd(a, b));
    }
}

template <Op O, class T> V vop_int(V l, V r) {
    constexpr size_t B = sizeof(T);
    if constexpr (O == Op::sum) {  // two's complement: the same instruction wraps signed and unsigned alike
        if constexpr (B == 1) return _mm256_add_epi8(l, r);
        if constexpr (B == 2) return _mm256_add_epi16(l, r);
        if constexpr (B == 4) return _mm256_add_epi32(l, r);
        if constexpr (B == 8) return _mm256_add_epi64(l, r);
    } else if constexpr (O == Op::prod) {  // the low half of the product is the same for signed and unsigned
        if constexpr (B == 1) return mul_epi8(l, r);
        if constexpr (B == 2) return _mm256_mullo_epi16(l, r);
        if constexpr (B == 4) return _mm256_mullo_epi32(l, r);
        if constexpr (B == 8) return mul_epi64(l, r);
    } else if constexpr (O == Op::min) {
        if constexpr (B == 1) return kSigned<T> ? _mm256_min_epi8(l, r) : _mm256_min_epu8(l, r);
        if constexpr (B == 2) return kSigned<T> ? _mm256_min_epi16(l, r) : _mm256_min_epu16(l, r);
        if constexpr (B == 4) return kSigned<T> ? _mm256_min_epi32(l, r) : _mm256_min_epu32(l, r);
        if constexpr (B == 8) return _mm256_blendv_epi8(r, l, greater_epi64<kSigned<T>>(r, l));
    } else if constexpr (O == Op::max) {
        if constexpr (B == 1) return kSigned<T> ? _mm256_max_epi8(l, r) : _mm256_max_epu8(l, r);
        if constexpr (B == 2) return kSigned<T> ? _mm256_max_epi16(l, r) : _mm256_max_epu16(l, r);
        if constexpr (B == 4) return kSigned<T> ? _mm256_max_epi32(l, r) : _mm256_max_epu32(l, r);
        if constexpr (B == 8) return _mm256_blendv_epi8(r, l, greater_epi64<kSigned<T>>(l, r));
    } else if constexpr (O == Op::land) {  // exactly 0 or 1
        return _mm256_andnot_si256(_mm256_or_si256(is_zero<B>(l), is_zero<B>(r)), one<B>());
    } else if constexpr (O == Op::lor) {
        return _mm256_andnot_si256(_mm256_and_si256(is_zero<B>(l), is_zero<B>(r)), one<B>());
    } else if constexpr (O == Op::lxor) {
        return _mm256_and_si256(_mm256_xor_si256(is_zero<B>(l), is_zero<B>(r)), one<B>());
    } else if constexpr (O == Op::band) {
        return _mm256_and_si256(l, r);
    } else if constexpr (O == Op::bor) {
        return _mm256_or_si256(l, r);
    } else {
        return _mm256_xor_si256(l, r);
    }
}

template <Op O, class T> V vop(V l, V r) {
    if constexpr (kFloat<T>) return vop_float<O, T>(l, r);
    else return vop_int<O, T>(l, r);
}

template <Op O, class T> void tail(char* out, const char* l, const char* r, size_t bytes) {
    scalar_loop<O, T>(out, l, r, bytes / sizeof(T));
}

#include "kernels/simd_body.inc"

// MINLOC/MAXLOC on MPI_DOUBLE_INT {double v; int k; 4 bytes padding}, two per vector, branch-free (the scalar
// loop's branches mispredict on real data). Per element, as apply_loc: l strictly better -> l; equal values ->
// r's value with min(l.k, r.k); otherwise (r better, or NaN) -> r. The padding dword is never stored, as the
// scalar kernel and the libraries leave it.
template <Op O> struct DoubleIntLoc {
    static constexpr size_t size = 16;
    static V combine(V l, V r) {
        // Compare the value qwords only: the index qwords (an int and padding) read as doubles can be signalling
        // NaNs, which raise FE_INVALID even in a quiet compare and kill a program that traps it. Zeroed there,
        // they compare as 0.0 and their verdicts are never used.
        const __m256d values = _mm256_castsi256_pd(_mm256_setr_epi64x(-1, 0, -1, 0));
        const __m256d lv = _mm256_and_pd(_mm256_castsi256_pd(l), values);
        const __m256d rv = _mm256_and_pd(_mm256_castsi256_pd(r), values);
        constexpr int kBetter = O == Op::minloc ? _CMP_LT_OQ : _CMP_GT_OQ;
        // compare the value qwords; copy each element's verdict to both of its qwords
        const __m256d better = _mm256_permute_pd(_mm256_cmp_pd(lv, rv, kBetter), 0x0);
        const __m256d equal = _mm256_permute_pd(_mm256_cmp_pd(lv, rv, _CMP_EQ_OQ), 0x0);
        const V taken = _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(r), _mm256_castsi256_pd(l), better));
        const V index_lane = _mm256_setr_epi32(0, 0, -1, 0, 0, 0, -1, 0);  // dword 2 of each element
        const V use_min = _mm256_and_si256(_mm256_castpd_si256(equal), index_lane);
        return _mm256_blendv_epi8(taken, _mm256_min_epi32(l, r), use_min);
    }
    static void run(char* out, const char* l, const char* r, size_t n) {
        // Full 32-byte stores whose padding dwords (3 and 7) hold what `out` already held: the padding is left as
        // it was, as by the scalar kernel and the libraries. A masked store (vpmaskmovd) would say the same more
        // directly, but it is microcoded on AMD Zen, slower than the scalar loop
        // (docs/kernels.md "Kernel choices, measured").
        constexpr int kPaddingDwords = 0x88;
        size_t i = 0;
        if (out == r) {  // the binary form: r's padding is out's
            for (; i + 2 <= n; i += 2) {
                const V rv = load(r + i * 16);
                store(out + i * 16, _mm256_blend_epi32(combine(load(l + i * 16), rv), rv, kPaddingDwords));
            }
        } else {
            for (; i + 2 <= n; i += 2) {
                const V combined = combine(load(l + i * 16), load(r + i * 16));
                store(out + i * 16, _mm256_blend_epi32(combined, load(out + i * 16), kPaddingDwords));
            }
        }
        if (i < n) {  // one element left: masked loads and store touch only its 16 (stored: 12) bytes
            const V first = _mm256_setr_epi32(-1, -1, -1, -1, 0, 0, 0, 0);
            const V no_padding = _mm256_setr_epi32(-1, -1, -1, 0, -1, -1, -1, 0);
            const V lv = _mm256_maskload_epi32(reinterpret_cast<const int*>(l + i * 16), first);
            const V rv = _mm256_maskload_epi32(reinterpret_cast<const int*>(r + i * 16), first);
            _mm256_maskstore_epi32(reinterpret_cast<int*>(out + i * 16), _mm256_and_si256(first, no_padding),
                                   combine(lv, rv));
        }
    }
};

// Complex PROD on MPI_C_FLOAT_COMPLEX / MPI_C_DOUBLE_COMPLEX: the straightforward product as semantics.inc's
// complex_multiply computes it (each product rounded, then one subtraction or addition: addsub gives exactly
// re = ar*br - ai*bi, im = ar*bi + ai*br), with a = inout and b = in. A vector where some element came out NaN in
// both parts is redone by the scalar code, which applies C's Annex G recovery there, as the libraries do.
template <class R> struct ComplexProd {
    using Cx = C<R>;
    static constexpr size_t size = sizeof(Cx);
    static constexpr size_t per = kVecBytes / size;
    static bool both_parts_nan(int lanes) {  // bit 2e: real part of element e is NaN, bit 2e+1: imaginary part
        return (lanes & (lanes >> 1) & (sizeof(R) == 4 ? 0x55 : 0x5)) != 0;
    }
    static void run(char* out, const char* l, const char* r, size_t n) {
        size_t i = 0;
        for (; i + per <= n; i += per) {
            const size_t at = i * size;
            if constexpr (sizeof(R) == 4) {
                const __m256 a = _mm256_loadu_ps(reinterpret_cast<const float*>(r + at));
                const __m256 b = _mm256_loadu_ps(reinterpret_cast<const float*>(l + at));
                const __m256 x = _mm256_mul_ps(_mm256_moveldup_ps(a), b);                           // ar*br, ar*bi
                const __m256 y = _mm256_mul_ps(_mm256_movehdup_ps(a), _mm256_permute_ps(b, 0xB1));  // ai*bi, ai*br
                const __m256 c = _mm256_addsub_ps(x, y);
                if (both_parts_nan(_mm256_movemask_ps(_mm256_cmp_ps(c, c, _CMP_UNORD_Q))))
                    scalar_loop<Op::prod, Cx>(out + at, l + at, r + at, per);
                else
                    _mm256_storeu_ps(reinterpret_cast<float*>(out + at), c);
            } else {
                const __m256d a = _mm256_loadu_pd(reinterpret_cast<const double*>(r + at));
                const __m256d b = _mm256_loadu_pd(reinterpret_cast<const double*>(l + at));
                const __m256d x = _mm256_mul_pd(_mm256_movedup_pd(a), b);
                const __m256d y = _mm256_mul_pd(_mm256_permute_pd(a, 0xF), _mm256_permute_pd(b, 0x5));
                const __m256d c = _mm256_addsub_pd(x, y);
                if (both_parts_nan(_mm256_movemask_pd(_mm256_cmp_pd(c, c, _CMP_UNORD_Q))))
                    scalar_loop<Op::prod, Cx>(out + at, l + at, r + at, per);
                else
                    _mm256_storeu_pd(reinterpret_cast<double*>(out + at), c);
            }
        }
        scalar_loop<Op::prod, Cx>(out + i * size, l + i * size, r + i * size, n - i);
    }
};

}  // namespace

void fill(KernelTable& table) {
    install_vectorized(table);
    install<DoubleIntLoc<Op::minloc>>(table, Op::minloc, Type::double_int);
    install<DoubleIntLoc<Op::maxloc>>(table, Op::maxloc, Type::double_int);
    install<ComplexProd<float>>(table, Op::prod, Type::c32);
    install<ComplexProd<double>>(table, Op::prod, Type::c64);
}

}  // namespace arshim::kernels::avx2
