// Scalar reference kernels: every (op, type) pair the MPI standard defines, in portable C++ built with the
// baseline flags. This table is the definition of kernels::defined(); wider ISAs overwrite entries of a copy.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/isa_impl.h"

namespace arshim::kernels::scalar {
namespace {

#include "kernels/semantics.inc"
#include "kernels/drivers.inc"

// Element type of each kernels::Type. MPI_C_BOOL is read as a byte: a _Bool holding 2 would be UB, a byte is not.
template <Type T> struct CType;
template <> struct CType<Type::i8> { using type = int8_t; };
template <> struct CType<Type::u8> { using type = uint8_t; };
template <> struct CType<Type::i16> { using type = int16_t; };
template <> struct CType<Type::u16> { using type = uint16_t; };
template <> struct CType<Type::i32> { using type = int32_t; };
template <> struct CType<Type::u32> { using type = uint32_t; };
template <> struct CType<Type::i64> { using type = int64_t; };
template <> struct CType<Type::u64> { using type = uint64_t; };
template <> struct CType<Type::f32> { using type = float; };
template <> struct CType<Type::f64> { using type = double; };
template <> struct CType<Type::f80> { using type = long double; };
template <> struct CType<Type::c32> { using type = C32; };
template <> struct CType<Type::c64> { using type = C64; };
template <> struct CType<Type::c80> { using type = C80; };
template <> struct CType<Type::boolean> { using type = uint8_t; };
template <> struct CType<Type::float_int> { using type = Loc<float, int>; };
template <> struct CType<Type::double_int> { using type = Loc<double, int>; };
template <> struct CType<Type::long_int> { using type = Loc<long, int>; };
template <> struct CType<Type::int_int> { using type = Loc<int, int>; };
template <> struct CType<Type::short_int> { using type = Loc<short, int>; };
template <> struct CType<Type::long_double_int> { using type = Loc<long double, int>; };
template <> struct CType<Type::float_float> { using type = Loc<float, float>; };
template <> struct CType<Type::double_double> { using type = Loc<double, double>; };

// Which op the standard (MPI 4.0 §6.9.2) allows on which representation. The shim refines this by MPI datatype
// category (e.g. LAND is not defined on Fortran INTEGER although it is on C int, both i32 here).
constexpr bool is_int(Type t) { return t <= Type::u64; }
constexpr bool is_real(Type t) { return t == Type::f32 || t == Type::f64 || t == Type::f80; }
constexpr bool is_pair(Type t) { return t >= Type::float_int && t < Type::count; }

constexpr bool legal(Op op, Type t) {
    switch (op) {
    case Op::sum:
    case Op::prod: return is_int(t) || is_real(t) || is_complex(t);
    case Op::min:
    case Op::max: return is_int(t) || is_real(t);
    case Op::land:
    case Op::lor:
    case Op::lxor: return is_int(t) || t == Type::boolean;
    case Op::band:
    case Op::bor:
    case Op::bxor: return is_int(t);
    case Op::minloc:
    case Op::maxloc: return is_pair(t);
    case Op::count: break;
    }
    return false;
}

// Loads and stores through memcpy: MPI buffers need not be aligned to their element type, and a misaligned
// T* is UB the vectorizer may exploit (aligned loads after a peeling loop that never reaches alignment).
template <class T> T load(const char* p) {
    T v;
    __builtin_memcpy(&v, p, sizeof(T));
    return v;
}
template <class T> void store(char* p, const T& v) { __builtin_memcpy(p, &v, sizeof(T)); }
// x87 long double keeps 10 value bytes in 16: store only those, so the result never carries stack garbage in
// its padding (and the padding of inout is left as it was, as the libraries' own loops do).
constexpr size_t kLongDoubleValueBytes = __LDBL_MANT_DIG__ == 64 ? 10 : sizeof(long double);
void store(char* p, const long double& v) { __builtin_memcpy(p, &v, kLongDoubleValueBytes); }
void store(char* p, const C80& v) {
    store(p + __builtin_offsetof(C80, re), v.re);
    store(p + __builtin_offsetof(C80, im), v.im);
}
// Pairs field by field: the padding of inout (MPI_DOUBLE_INT's 4 bytes after the index, ...) is left as it was,
// as MPICH's and Open MPI's loops leave it, so results compare bitwise with the library's whole buffers.
template <class V, class I> void store(char* p, const Loc<V, I>& v) {
    store(p + __builtin_offsetof(Loc<V, I>, v), v.v);
    store(p + __builtin_offsetof(Loc<V, I>, k), v.k);
}

// Typed stores for buffers aligned to their element type: field by field, so padding is left alone as above, but
// straight to memory (an x87 fstpt writes the 10 value bytes itself) instead of through a stack copy, which costs
// a store-forwarding stall per element (docs/kernels.md "Kernel choices, measured").
template <class T> void store_aligned(T* p, const T& v) { *p = v; }
template <class R> void store_aligned(C<R>* p, const C<R>& v) {
    p->re = v.re;
    p->im = v.im;
}
template <class V, class I> void store_aligned(Loc<V, I>* p, const Loc<V, I>& v) {
    p->v = v.v;
    p->k = v.k;
}

template <Op O, class T> struct ScalarKernel {
    static constexpr size_t size = sizeof(T);
    static void run(char* out, const char* l, const char* r, size_t n) {
        constexpr uintptr_t kMisaligned = alignof(T) - 1;
        if (((reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(l) | reinterpret_cast<uintptr_t>(r)) &
             kMisaligned) == 0) {
            T* o = reinterpret_cast<T*>(out);
            const T* a = reinterpret_cast<const T*>(l);
            const T* b = reinterpret_cast<const T*>(r);
            for (size_t i = 0; i < n; ++i) store_aligned(o + i, apply<O>(a[i], b[i]));
            return;
        }
        for (size_t i = 0; i < n; ++i) store(out + i * size, apply<O>(load<T>(l + i * size), load<T>(r + i * size)));
    }
};

// MINLOC/MAXLOC on MPI_LONG_DOUBLE_INT {long double v; int k;}: only comparisons, no arithmetic, so the winning
// value's 10 bytes are copied with integer moves from whichever operand won (a conditional pointer) instead of a
// round trip through the x87 stack. Same result as apply_loc, bit for bit (the value bytes are the winner's).
template <Op O> struct LongDoubleIntLoc {
    using P = Loc<long double, int>;
    static constexpr size_t size = sizeof(P);
    static void run(char* out, const char* l, const char* r, size_t n) {
        constexpr size_t v_at = __builtin_offsetof(P, v), k_at = __builtin_offsetof(P, k);
        for (size_t i = 0; i < n; ++i) {
            const char* le = l + i * size;
            const char* re = r + i * size;
            char* oe = out + i * size;
            const long double lv = load<long double>(le + v_at), rv = load<long double>(re + v_at);
            const int lk = load<int>(le + k_at), rk = load<int>(re + k_at);
            const bool better = O == Op::minloc ? lv < rv : lv > rv;
            const bool equal = lv == rv;
            const int k = select(better, lk, select(equal, rk < lk ? rk : lk, rk));
            // Unconditional (out == r copies r's bytes onto themselves): a branch here would mispredict.
            const uintptr_t winner = select(better, reinterpret_cast<uintptr_t>(le), reinterpret_cast<uintptr_t>(re));
            __builtin_memmove(oe + v_at, reinterpret_cast<const char*>(winner) + v_at, kLongDoubleValueBytes);
            store(oe + k_at, k);
        }
    }
};

template <size_t OpIndex, size_t TypeIndex> void install_one(KernelTable& table) {
    constexpr Op op = static_cast<Op>(OpIndex);
    constexpr Type type = static_cast<Type>(TypeIndex);
    if constexpr (legal(op, type)) install<ScalarKernel<op, typename CType<type>::type>>(table, op, type);
}

template <size_t OpIndex, size_t... TypeIndex>
void install_op(KernelTable& table, std::index_sequence<TypeIndex...>) {
    (install_one<OpIndex, TypeIndex>(table), ...);
}

template <size_t... OpIndex> void install_all(KernelTable& table, std::index_sequence<OpIndex...>) {
    (install_op<OpIndex>(table, std::make_index_sequence<kTypeCount>()), ...);
}

}  // namespace

void fill(KernelTable& table) {
    table = KernelTable{};
    table.isa = Isa::scalar;
    install_all(table, std::make_index_sequence<kOpCount>());
    install<LongDoubleIntLoc<Op::minloc>>(table, Op::minloc, Type::long_double_int);
    install<LongDoubleIntLoc<Op::maxloc>>(table, Op::maxloc, Type::long_double_int);
}

}  // namespace arshim::kernels::scalar
