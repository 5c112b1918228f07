// TEST CODE ONLY. The element arithmetic of the SHARP test double (fake_sharp_coll.cpp): what one reduction
// computes for each SHARP datatype and operator it supports, accumulated in member order (acc = acc op next).
// Integer sums wrap; MINLOC/MAXLOC pairs are {value; int32 index} without padding, ties keep the lower index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shim/sharp/declarations.h"

namespace fake_sharp {

inline std::size_t dtype_size(int dtype) {
    switch (dtype) {
    case SHARP_DTYPE_UNSIGNED: case SHARP_DTYPE_INT: case SHARP_DTYPE_FLOAT: return 4;
    case SHARP_DTYPE_UNSIGNED_LONG: case SHARP_DTYPE_LONG: case SHARP_DTYPE_DOUBLE: return 8;
    case SHARP_DTYPE_UNSIGNED_SHORT: case SHARP_DTYPE_SHORT: return 2;
    case SHARP_DTYPE_UINT8: case SHARP_DTYPE_INT8: return 1;
    default: return 0;
    }
}

template <typename T>
void combine(int op, T* acc, const T* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        T& a = acc[i];
        const T b = in[i];
        switch (op) {
        case SHARP_OP_SUM:
            if constexpr (std::is_integral_v<T>) {
                using U = std::make_unsigned_t<T>;
                a = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
            } else {
                a = a + b;
            }
            break;
        case SHARP_OP_MIN: a = b < a ? b : a; break;
        case SHARP_OP_MAX: a = b > a ? b : a; break;
        case SHARP_OP_LAND: a = static_cast<T>((a != 0) && (b != 0)); break;
        case SHARP_OP_LOR: a = static_cast<T>((a != 0) || (b != 0)); break;
        case SHARP_OP_LXOR: a = static_cast<T>((a != 0) != (b != 0)); break;
        default:
            if constexpr (std::is_integral_v<T>) {
                if (op == SHARP_OP_BAND) a = static_cast<T>(a & b);
                else if (op == SHARP_OP_BOR) a = static_cast<T>(a | b);
                else if (op == SHARP_OP_BXOR) a = static_cast<T>(a ^ b);
            }
            break;
        }
    }
}

template <typename V>
void combine_loc(int op, void* acc_bytes, const void* in_bytes, std::size_t n) {
    struct Pair {
        V value;
        int32_t index;
    };
    static_assert(sizeof(Pair) == 8, "no padding");
    auto* acc = static_cast<Pair*>(acc_bytes);
    const auto* in = static_cast<const Pair*>(in_bytes);
    for (std::size_t i = 0; i < n; ++i) {
        const bool better = op == SHARP_OP_MINLOC ? in[i].value < acc[i].value : in[i].value > acc[i].value;
        if (better) acc[i] = in[i];
        else if (in[i].value == acc[i].value && in[i].index < acc[i].index) acc[i].index = in[i].index;
    }
}

inline void combine_any(int dtype, int op, void* acc, const void* in, std::size_t n) {
    if (op == SHARP_OP_MINLOC || op == SHARP_OP_MAXLOC) {
        if (dtype == SHARP_DTYPE_FLOAT) combine_loc<float>(op, acc, in, n);
        else combine_loc<int32_t>(op, acc, in, n);
        return;
    }
    switch (dtype) {
    case SHARP_DTYPE_UNSIGNED: combine(op, static_cast<uint32_t*>(acc), static_cast<const uint32_t*>(in), n); break;
    case SHARP_DTYPE_INT: combine(op, static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), n); break;
    case SHARP_DTYPE_UNSIGNED_LONG: combine(op, static_cast<uint64_t*>(acc), static_cast<const uint64_t*>(in), n); break;
    case SHARP_DTYPE_LONG: combine(op, static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), n); break;
    case SHARP_DTYPE_FLOAT: combine(op, static_cast<float*>(acc), static_cast<const float*>(in), n); break;
    case SHARP_DTYPE_DOUBLE: combine(op, static_cast<double*>(acc), static_cast<const double*>(in), n); break;
    case SHARP_DTYPE_UNSIGNED_SHORT: combine(op, static_cast<uint16_t*>(acc), static_cast<const uint16_t*>(in), n); break;
    case SHARP_DTYPE_SHORT: combine(op, static_cast<int16_t*>(acc), static_cast<const int16_t*>(in), n); break;
    case SHARP_DTYPE_UINT8: combine(op, static_cast<uint8_t*>(acc), static_cast<const uint8_t*>(in), n); break;
    case SHARP_DTYPE_INT8: combine(op, static_cast<int8_t*>(acc), static_cast<const int8_t*>(in), n); break;
    default: break;
    }
}

}  // namespace fake_sharp
