// The vocabulary of reductions: ops, element types and datatype classes, each with its code (the enum) and its name
// (as the policy file, the logs, the statistics log and the tools spell it), plus the one hash. MPI-free and
// header-only; it sits in the lowest layer (kernels/) because every layer reduces. The routing words (paths,
// reasons, size buckets) are the policy's (policy/routing_words.h).
//
// Adding an op or a type means adding one enumerator and one name here; the static_asserts below catch a name table
// that was not extended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace arshim::vocab {

template <typename Enum>
constexpr std::size_t count_of() {
    return static_cast<std::size_t>(Enum::count);
}

// Name of enumerator `value` in `names` (indexed by the enum), "?" when out of range.
template <typename Enum, std::size_t N>
constexpr const char* name_of(const char* const (&names)[N], Enum value) {
    const auto i = static_cast<std::size_t>(value);
    return i < N ? names[i] : "?";
}

// A list of names as a view (the first `count` of an array): what the policy reader offers as allowed values.
struct Words {
    const char* const* words;
    std::size_t count;
    template <std::size_t N>
    constexpr Words(const char* const (&names)[N], std::size_t n = N) : words(names), count(n < N ? n : N) {}
    const char* const* begin() const { return words; }
    const char* const* end() const { return words + count; }
    int find(std::string_view text) const {
        for (std::size_t i = 0; i < count; ++i)
            if (text == words[i]) return static_cast<int>(i);
        return -1;
    }
};

// ---- reductions -------------------------------------------------------------------------------------------------

enum class Op : uint8_t { sum, prod, min, max, land, lor, lxor, band, bor, bxor, minloc, maxloc, count };
constexpr std::size_t kOpCount = count_of<Op>();
inline constexpr const char* kOpNames[] = {"sum", "prod", "min",  "max", "land",   "lor",
                                           "lxor", "band", "bor", "bxor", "minloc", "maxloc"};
inline constexpr const char* kOpMpiNames[] = {"MPI_SUM",  "MPI_PROD", "MPI_MIN",  "MPI_MAX",
                                              "MPI_LAND", "MPI_LOR",  "MPI_LXOR", "MPI_BAND",
                                              "MPI_BOR",  "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC"};
static_assert(std::size(kOpNames) == kOpCount && std::size(kOpMpiNames) == kOpCount, "one name per op");
constexpr const char* op_name(Op op) { return name_of(kOpNames, op); }

// The op column of a statistics row: a predefined reduction (Op), or one of these two.
constexpr uint8_t kRowOpOther = kOpCount;      // MPI_REPLACE, MPI_NO_OP: predefined, not a reduction ARShim computes
constexpr uint8_t kRowOpUser = kOpCount + 1;   // user-defined (MPI_Op_create)
constexpr std::size_t kRowOpCount = kOpCount + 2;
constexpr const char* row_op_name(uint8_t op) {
    return op < kOpCount ? kOpNames[op] : op == kRowOpOther ? "other" : op == kRowOpUser ? "user" : "?";
}

// ---- element types: how the bytes of one element are read ------------------------------------------------------

enum class Type : uint8_t {
    i8, u8, i16, u16, i32, u32, i64, u64,
    f32, f64, f80,              // float, double, long double (x87 80-bit in 16 bytes on x86-64)
    c32, c64, c80,              // complex float / double / long double (pairs of the above)
    boolean,                    // C _Bool / MPI_C_BOOL, one byte, 0 or 1
    // MINLOC/MAXLOC pair types, laid out as the C struct {value; int index;} (MPI_FLOAT_INT, ...)
    float_int, double_int, long_int, int_int, short_int, long_double_int,
    float_float, double_double, // MPI_2REAL, MPI_2DOUBLE_PRECISION: {value; value-as-index}
    count
};
constexpr std::size_t kTypeCount = count_of<Type>();
inline constexpr const char* kTypeNames[] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float", "double", "long_double",
    "complex_float", "complex_double", "complex_long_double", "bool", "float_int", "double_int", "long_int",
    "int_int", "short_int", "long_double_int", "float_float", "double_double"};
static_assert(std::size(kTypeNames) == kTypeCount, "one name per type");
constexpr const char* type_name(Type type) { return name_of(kTypeNames, type); }
constexpr bool is_complex(Type type) { return type == Type::c32 || type == Type::c64 || type == Type::c80; }
// IEEE floating-point values (alone, in a complex number or as a MINLOC/MAXLOC pair's value): signed zeros and NaNs,
// whose MIN/MAX results depend on the operand order.
constexpr bool has_floating_values(Type type) {
    switch (type) {
    case Type::f32: case Type::f64: case Type::f80: case Type::c32: case Type::c64: case Type::c80:
    case Type::float_int: case Type::double_int: case Type::long_double_int: case Type::float_float:
    case Type::double_double: return true;
    default: return false;
    }
}

// ---- datatype classes: the coarse class the policy keys on; `derived` only in the statistics -------------------

enum class DtypeClass : uint8_t { floating, integer, other, derived, count };
constexpr std::size_t kDtypeClassCount = count_of<DtypeClass>();
constexpr std::size_t kPolicyDtypeClassCount = 3;  // a derived datatype never reaches the policy
inline constexpr const char* kDtypeClassNames[] = {"float", "int", "other", "derived"};
static_assert(std::size(kDtypeClassNames) == kDtypeClassCount, "one name per class");
constexpr const char* dtype_class_name(DtypeClass c) { return name_of(kDtypeClassNames, c); }

// ---- the one hash ------------------------------------------------------------------------------------------------

// FNV-1a, 64 bit: digests of settings, communicator shapes, call-site keys and SHARP job ids. Identical input gives
// the identical value on every rank and every build.
class Fnv1a {
public:
    constexpr Fnv1a& bytes(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
        return *this;
    }
    Fnv1a& text(std::string_view s) { return bytes(s.data(), s.size()); }
    // An integer, as 8 little-endian bytes (whatever its width and the host's byte order).
    constexpr Fnv1a& number(long long v) {
        const auto bits = static_cast<unsigned long long>(v);
        for (int byte = 0; byte < 8; ++byte) h_ = (h_ ^ ((bits >> (8 * byte)) & 0xffu)) * 1099511628211ull;
        return *this;
    }
    constexpr uint64_t value() const { return h_; }

private:
    uint64_t h_ = 1469598103934665603ull;
};

// A 64-bit finalizer (MurmurHash3's fmix64): spreads every input bit over the word, for slot indices of tables
// keyed by values that differ only in a few bits (handles, packed keys).
constexpr uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
}

}  // namespace arshim::vocab
