// The kernels against this MPI's own MPI_Reduce_local, the datatype/op mapping (shim/base/mpi_types.cpp) and the
// registered SIMD ops (shim/core/simd_ops.cpp). Built once per MPI flavor; runs as an MPI singleton (no mpirun).
//
// A disagreement with the library fails the test, except the library bugs listed in docs/library-bugs.md, which
// are recognized element by element (the library's value must be exactly what the bug produces) and reported by
// name as a warning. The kernels themselves are always held to the independent reference.
#define CATCH_CONFIG_RUNNER
#include "test/support/catch.h"
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "shim/base/mpi_types.h"
#include "shim/core/simd_ops.h"
#include "test/kernels/reference.h"

using namespace arshim;
using namespace arshim::test;

namespace {

#if defined(ARSHIM_FLAVOR_MPICH)
constexpr bool kMpich = true;
#else
constexpr bool kMpich = false;
#endif

// ---- what the standard says, written independently of shim/base/mpi_types.cpp ------------------------------------
enum class Cat { c_int, f_int, multi, real, complex, logical, byte, pair, none };

bool legal(Cat c, Op op) {
    switch (op) {
    case Op::sum:
    case Op::prod: return c == Cat::c_int || c == Cat::f_int || c == Cat::multi || c == Cat::real || c == Cat::complex;
    case Op::min:
    case Op::max: return c == Cat::c_int || c == Cat::f_int || c == Cat::multi || c == Cat::real;
    case Op::land:
    case Op::lor:
    case Op::lxor: return c == Cat::c_int || c == Cat::logical;
    case Op::band:
    case Op::bor:
    case Op::bxor: return c == Cat::c_int || c == Cat::f_int || c == Cat::multi || c == Cat::byte;
    case Op::minloc:
    case Op::maxloc: return c == Cat::pair;
    default: return false;
    }
}

struct Expected {
    MPI_Datatype handle;
    const char* name;
    Cat cat;
    Type type;  // Type::count: must not be mapped (absent from this MPI build)
};

Type sized_int(MPI_Datatype dt, bool is_signed) {
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS) return Type::count;
    switch (size) {
    case 1: return is_signed ? Type::i8 : Type::u8;
    case 2: return is_signed ? Type::i16 : Type::u16;
    case 4: return is_signed ? Type::i32 : Type::u32;
    case 8: return is_signed ? Type::i64 : Type::u64;
    default: return Type::count;
    }
}
Type sized_real(MPI_Datatype dt, Type four, Type eight) {
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS) return Type::count;
    return size == static_cast<int>(kernels::type_size(four)) ? four
           : size == static_cast<int>(kernels::type_size(eight)) ? eight : Type::count;
}

Type real_pair(MPI_Datatype real) {  // MPI_2REAL etc.: {value, index} both of the Fortran real kind
    const Type t = sized_real(real, Type::f32, Type::f64);
    return t == Type::f32 ? Type::float_float : t == Type::f64 ? Type::double_double : Type::count;
}

#define E(h, cat, type) Expected{h, #h, Cat::cat, type}
std::vector<Expected> expected_types() {
    static_assert(sizeof(long) == 8, "these expectations are for LP64");
    std::vector<Expected> v = {
        E(MPI_SIGNED_CHAR, c_int, Type::i8), E(MPI_SHORT, c_int, Type::i16), E(MPI_INT, c_int, Type::i32),
        E(MPI_LONG, c_int, Type::i64), E(MPI_LONG_LONG_INT, c_int, Type::i64), E(MPI_LONG_LONG, c_int, Type::i64),
        E(MPI_INT8_T, c_int, Type::i8), E(MPI_INT16_T, c_int, Type::i16), E(MPI_INT32_T, c_int, Type::i32),
        E(MPI_INT64_T, c_int, Type::i64), E(MPI_UNSIGNED_CHAR, c_int, Type::u8),
        E(MPI_UNSIGNED_SHORT, c_int, Type::u16), E(MPI_UNSIGNED, c_int, Type::u32),
        E(MPI_UNSIGNED_LONG, c_int, Type::u64), E(MPI_UNSIGNED_LONG_LONG, c_int, Type::u64),
        E(MPI_UINT8_T, c_int, Type::u8), E(MPI_UINT16_T, c_int, Type::u16), E(MPI_UINT32_T, c_int, Type::u32),
        E(MPI_UINT64_T, c_int, Type::u64), E(MPI_AINT, multi, Type::i64), E(MPI_OFFSET, multi, Type::i64),
        E(MPI_COUNT, multi, Type::i64), E(MPI_FLOAT, real, Type::f32), E(MPI_DOUBLE, real, Type::f64),
        E(MPI_LONG_DOUBLE, real, Type::f80), E(MPI_C_COMPLEX, complex, Type::c32),
        E(MPI_C_FLOAT_COMPLEX, complex, Type::c32), E(MPI_C_DOUBLE_COMPLEX, complex, Type::c64),
        E(MPI_C_LONG_DOUBLE_COMPLEX, complex, Type::c80), E(MPI_C_BOOL, logical, Type::boolean),
        E(MPI_CXX_BOOL, logical, Type::boolean), E(MPI_CXX_FLOAT_COMPLEX, complex, Type::c32),
        E(MPI_CXX_DOUBLE_COMPLEX, complex, Type::c64), E(MPI_CXX_LONG_DOUBLE_COMPLEX, complex, Type::c80),
        E(MPI_BYTE, byte, Type::u8),
        E(MPI_INTEGER, f_int, sized_int(MPI_INTEGER, true)), E(MPI_INTEGER1, f_int, sized_int(MPI_INTEGER1, true)),
        E(MPI_INTEGER2, f_int, sized_int(MPI_INTEGER2, true)), E(MPI_INTEGER4, f_int, sized_int(MPI_INTEGER4, true)),
        E(MPI_INTEGER8, f_int, sized_int(MPI_INTEGER8, true)),
        E(MPI_REAL, real, sized_real(MPI_REAL, Type::f32, Type::f64)),
        E(MPI_DOUBLE_PRECISION, real, sized_real(MPI_DOUBLE_PRECISION, Type::f32, Type::f64)),
        E(MPI_REAL4, real, sized_real(MPI_REAL4, Type::f32, Type::f64)),
        E(MPI_REAL8, real, sized_real(MPI_REAL8, Type::f32, Type::f64)),
        E(MPI_COMPLEX, complex, sized_real(MPI_COMPLEX, Type::c32, Type::c64)),
        E(MPI_DOUBLE_COMPLEX, complex, sized_real(MPI_DOUBLE_COMPLEX, Type::c32, Type::c64)),
        E(MPI_COMPLEX8, complex, sized_real(MPI_COMPLEX8, Type::c32, Type::c64)),
        E(MPI_COMPLEX16, complex, sized_real(MPI_COMPLEX16, Type::c32, Type::c64)),
        E(MPI_LOGICAL, logical, sized_int(MPI_LOGICAL, true)),
        E(MPI_FLOAT_INT, pair, Type::float_int), E(MPI_DOUBLE_INT, pair, Type::double_int),
        E(MPI_LONG_INT, pair, Type::long_int), E(MPI_2INT, pair, Type::int_int),
        E(MPI_SHORT_INT, pair, Type::short_int), E(MPI_LONG_DOUBLE_INT, pair, Type::long_double_int),
        E(MPI_2REAL, pair, real_pair(MPI_REAL)), E(MPI_2DOUBLE_PRECISION, pair, real_pair(MPI_DOUBLE_PRECISION)),
        E(MPI_2INTEGER, pair, sized_int(MPI_INTEGER, true) == Type::i32 ? Type::int_int : Type::count),
        // predefined, but reduction by no op
        E(MPI_CHAR, none, Type::u8), E(MPI_WCHAR, none, Type::u32), E(MPI_PACKED, none, Type::u8),
        E(MPI_CHARACTER, none, Type::u8),
    };
    return v;
}
#undef E

// ---- known library bugs, each recognized by the exact wrong value it produces ---------------------------------
bool is_unsigned_int(Type t) { return t == Type::u8 || t == Type::u16 || t == Type::u32 || t == Type::u64; }

template <class U> bool signed_minmax_bug(Op op, const uint8_t* in, const uint8_t* inout, const uint8_t* lib) {
    // pmodels/mpich#6083: MPICH 4.0.2 compares unsigned types as if they were signed in MIN/MAX.
    using S = std::make_signed_t<U>;
    const S a = static_cast<S>(ref::get<U>(in)), b = static_cast<S>(ref::get<U>(inout));
    const S want = op == Op::min ? (b < a ? b : a) : (b > a ? b : a);
    return ref::get<U>(lib) == static_cast<U>(want);
}

template <class T> bool saturating_sum_bug(const uint8_t* in, const uint8_t* inout, const uint8_t* lib) {
    // ompi#8045: Open MPI 4.1's op/avx adds 8- and 16-bit integers with saturating instructions (adds_epi8,
    // adds_epu16, ...) where MPI's sum wraps around.
    const int64_t s = int64_t{ref::get<T>(in)} + int64_t{ref::get<T>(inout)};
    const int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    return ref::get<T>(lib) == static_cast<T>(s < lo ? lo : s > hi ? hi : s);
}

template <class R> bool avx_minmax_order(const uint8_t* in, const uint8_t* inout, const uint8_t* lib) {
    // Open MPI 4.1's op/avx computes MIN/MAX as _mm*_min_p*(in, inout), which yields inout where its own base
    // op (and MPICH) yield in: on a NaN operand and on a +0/-0 tie.
    const R a = ref::get<R>(in), b = ref::get<R>(inout);
    if (!(std::isnan(a) || std::isnan(b) || a == b)) return false;
    return std::memcmp(lib, inout, sizeof(R)) == 0;
}

template <class R> bool straightforward_complex_prod(const uint8_t* in, const uint8_t* inout, const uint8_t* lib) {
    // MPICH multiplies its Fortran and C++ complex types with the plain formula, without the C99 Annex G
    // infinity recovery it (and Open MPI, and C) applies to MPI_C_*_COMPLEX.
    const R a = ref::get<R>(inout), b = ref::get<R>(inout + sizeof(R));
    const R c = ref::get<R>(in), d = ref::get<R>(in + sizeof(R));
    const R x = a * c - b * d, y = a * d + b * c;
    auto same = [](R u, R v) { return (std::isnan(u) && std::isnan(v)) || u == v; };
    return same(ref::get<R>(lib), x) && same(ref::get<R>(lib + sizeof(R)), y);
}

bool is_one_of(MPI_Datatype dt, std::initializer_list<MPI_Datatype> list) {
    for (MPI_Datatype d : list)
        if (d == dt) return true;
    return false;
}

// Which known library bug, if any, explains the library's value for one element: the bug must produce exactly
// that value. Anything else is a disagreement the test fails on.
const char* known_bug(MPI_Datatype dt, Op op, Type t, const uint8_t* in, const uint8_t* inout, const uint8_t* lib) {
    const bool minmax = op == Op::min || op == Op::max;
    if (kMpich) {
        if (minmax && is_unsigned_int(t)) {
            const bool match = t == Type::u8    ? signed_minmax_bug<uint8_t>(op, in, inout, lib)
                               : t == Type::u16 ? signed_minmax_bug<uint16_t>(op, in, inout, lib)
                               : t == Type::u32 ? signed_minmax_bug<uint32_t>(op, in, inout, lib)
                                                : signed_minmax_bug<uint64_t>(op, in, inout, lib);
            if (match) return "pmodels/mpich#6083 (unsigned MIN/MAX compared as signed)";
        }
        if (op == Op::prod && (t == Type::c32 || t == Type::c64 || t == Type::c80) &&
            !is_one_of(dt, {MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX})) {
            const bool match = t == Type::c32   ? straightforward_complex_prod<float>(in, inout, lib)
                               : t == Type::c64 ? straightforward_complex_prod<double>(in, inout, lib)
                                                : straightforward_complex_prod<long double>(in, inout, lib);
            if (match) return "MPICH Fortran/C++ complex PROD without C99 Annex G infinity recovery (docs/library-bugs.md)";
        }
        return nullptr;
    }
    if (op == Op::sum && (t == Type::u8 || t == Type::u16 || t == Type::i8 || t == Type::i16)) {
        const bool match = t == Type::u8    ? saturating_sum_bug<uint8_t>(in, inout, lib)
                           : t == Type::u16 ? saturating_sum_bug<uint16_t>(in, inout, lib)
                           : t == Type::i8  ? saturating_sum_bug<int8_t>(in, inout, lib)
                                            : saturating_sum_bug<int16_t>(in, inout, lib);
        if (match) return "ompi#8045 (op/avx saturating 8/16-bit integer SUM)";
    }
    if (minmax && dt == MPI_UNSIGNED_LONG && signed_minmax_bug<uint64_t>(op, in, inout, lib))
        return "open-mpi/ompi#10525 (MPI_UNSIGNED_LONG MIN/MAX compared as signed long)";
    if (minmax && dt == MPI_OFFSET) {
        // the mirror image: the signed MPI_OFFSET compared as unsigned
        const uint64_t a = ref::get<uint64_t>(in), b = ref::get<uint64_t>(inout);
        const uint64_t want = op == Op::min ? (b < a ? b : a) : (b > a ? b : a);
        if (ref::get<uint64_t>(lib) == want) return "Open MPI MPI_OFFSET MIN/MAX compared as unsigned (docs/library-bugs.md)";
    }
    if (minmax && (t == Type::f32 || t == Type::f64)) {
        const bool match = t == Type::f32 ? avx_minmax_order<float>(in, inout, lib)
                                          : avx_minmax_order<double>(in, inout, lib);
        if (match) return "Open MPI op/avx MIN/MAX NaN and +-0 operand order (docs/library-bugs.md)";
    }
    return nullptr;
}

std::vector<uint8_t> make_data(Op op, Type t, size_t n, uint64_t seed) {
    std::vector<uint8_t> v(n * kernels::type_size(t));
    DataGen gen(seed);
    gen.fill(op, t, v.data(), n);
    // A C/C++ bool object holding anything but 0 or 1 is undefined behaviour for the library's compiled code;
    // the kernels' handling of other bytes is tested in test_kernels.cpp.
    if (t == Type::boolean)
        for (auto& b : v) b = b != 0;
    return v;
}

const std::vector<kernels::Isa>& levels() {
    static const std::vector<kernels::Isa> list = [] {
        std::vector<kernels::Isa> l;
        for (size_t i = 0; i < kernels::kIsaCount; ++i) {
            const auto isa = static_cast<kernels::Isa>(i);
            if (kernels::isa_compiled(isa) && kernels::isa_supported_by_cpu(isa)) l.push_back(isa);
        }
        return l;
    }();
    return list;
}

MPI_Op mpi_op(Op op) {
    const MPI_Op ops[] = {MPI_SUM,  MPI_PROD, MPI_MIN, MPI_MAX,  MPI_LAND,   MPI_LOR,
                          MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    return ops[static_cast<size_t>(op)];
}

}  // namespace

TEST_CASE("every predefined datatype maps to its kernel type and size", "[kernels][mpi]") {
    for (const Expected& e : expected_types()) {
        INFO(e.name);
        const TypeInfo info = type_info(e.handle);
        if (e.type == Type::count || e.handle == MPI_DATATYPE_NULL) {
            CHECK_FALSE(info.predefined);
            continue;
        }
        REQUIRE(info.predefined);
        CHECK(info.type == e.type);
        CHECK(info.size == kernels::type_size(e.type));
        MPI_Aint lb = 0, extent = 0;
        PMPI_Type_get_extent(e.handle, &lb, &extent);
        CHECK(static_cast<MPI_Aint>(info.size) == extent);
        CHECK(std::string(datatype_name(e.handle)).rfind("MPI_", 0) == 0);
        const bool floating = e.cat == Cat::real || e.cat == Cat::complex;
        CHECK((info.dclass == vocab::DtypeClass::floating) == floating);
        for (Op op : kAllOps) {
            INFO(kernels::op_name(op));
            CHECK(kernel_supports(mpi_op(op), e.handle) == legal(e.cat, op));
        }
    }
}

TEST_CASE("ops, derived datatypes and names", "[kernels][mpi]") {
    for (Op op : kAllOps) {
        Op got = Op::count;
        CHECK(kernel_op(mpi_op(op), &got));
        CHECK(got == op);
        CHECK(std::string(mpi_op_name(mpi_op(op))) == std::string("MPI_") + [&] {
                  std::string s = kernels::op_name(op);
                  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                  return s;
              }());
    }
    CHECK_FALSE(kernel_op(MPI_REPLACE, nullptr));
    CHECK_FALSE(kernel_op(MPI_NO_OP, nullptr));
    CHECK(std::string(mpi_op_name(MPI_REPLACE)) == "MPI_REPLACE");
    CHECK(std::string(datatype_name(MPI_DOUBLE)) == "MPI_DOUBLE");

    MPI_Datatype pair = MPI_DATATYPE_NULL;
    PMPI_Type_contiguous(2, MPI_INT, &pair);
    PMPI_Type_commit(&pair);
    CHECK_FALSE(type_info(pair).predefined);
    CHECK_FALSE(kernel_supports(MPI_SUM, pair));
    CHECK(std::string(datatype_name(pair)) == "derived");
    PMPI_Type_free(&pair);
    CHECK_FALSE(type_info(MPI_DATATYPE_NULL).predefined);
    CHECK_FALSE(kernel_supports(MPI_SUM, MPI_DATATYPE_NULL));

    MPI_Op user = MPI_OP_NULL;
    PMPI_Op_create([](void*, void*, int*, MPI_Datatype*) {}, 1, &user);
    CHECK_FALSE(kernel_op(user, nullptr));
    CHECK_FALSE(kernel_supports(user, MPI_INT));
    CHECK(std::string(mpi_op_name(user)) == "user");
    CHECK(simd_op_for(user) == MPI_OP_NULL);
    PMPI_Op_free(&user);
}

// Lengths: 1 (the libraries' scalar code), and one that covers every vector body and tail.
TEST_CASE("kernels agree with the library's MPI_Reduce_local", "[kernels][mpi]") {
    size_t pairs = 0, known = 0;
    for (const Expected& e : expected_types()) {
        const TypeInfo info = type_info(e.handle);
        if (!info.predefined) continue;
        for (Op op : kAllOps) {
            if (!kernel_supports(mpi_op(op), e.handle)) continue;
            ++pairs;
            for (size_t n : {size_t{1}, size_t{3}, size_t{1031}}) {
                const Type t = info.type;
                const size_t size = kernels::type_size(t);
                const auto in = make_data(op, t, n, 31 * pairs + n);
                const auto inout = make_data(op, t, n, 37 * pairs + n + 1);
                std::vector<uint8_t> lib = inout, want = inout;
                REQUIRE(PMPI_Reduce_local(in.data(), lib.data(), static_cast<int>(n), e.handle, mpi_op(op)) ==
                        MPI_SUCCESS);
                ref::array(op, t, want.data(), in.data(), want.data(), n);
                const std::string what = std::string(e.name) + " " + kernels::op_name(op) + " n=" + std::to_string(n);

                // 1. every level of the kernels equals the independent reference, whatever the library says
                for (kernels::Isa isa : levels()) {
                    std::vector<uint8_t> got = inout;
                    kernels::table(isa).binary[static_cast<size_t>(op)][static_cast<size_t>(t)](in.data(), got.data(), n);
                    const Mismatch m = compare(op, t, got.data(), want.data(), n);
                    if (m.any) FAIL_CHECK(what << " level " << kernels::isa_name(isa) << ": " << m.detail);
                }
                // 2. the library equals the reference, except where a known bug explains its value exactly
                const char* bug = nullptr;
                size_t bug_elements = 0;
                for (size_t i = 0; i < n; ++i) {
                    const size_t o = i * size;
                    if (same_element(op, t, lib.data() + o, want.data() + o)) continue;
                    const char* why = known_bug(e.handle, op, t, in.data() + o, inout.data() + o, lib.data() + o);
                    if (!why) {
                        FAIL_CHECK(what << ": library disagrees at element " << i << ": in "
                                        << hex(in.data() + o, size) << " inout " << hex(inout.data() + o, size)
                                        << " library " << hex(lib.data() + o, size) << " ARShim "
                                        << hex(want.data() + o, size));
                        break;
                    }
                    bug = why;
                    ++bug_elements;
                }
                if (bug) {
                    ++known;
                    WARN("known library bug " << bug << ": " << what << ", " << bug_elements
                                              << " element(s) differ; ARShim's kernels give the correct value");
                }
            }
        }
    }
    INFO(pairs << " (datatype, op) pairs compared, " << known << " runs hit a known library bug");
    CHECK(pairs > 200);
}

TEST_CASE("the registered SIMD ops compute exactly the kernels' result", "[kernels][mpi]") {
    for (Op op : kAllOps) {
        const MPI_Op simd = simd_op_for(mpi_op(op));
        REQUIRE(simd != MPI_OP_NULL);
        int commute = 0;
        PMPI_Op_commutative(simd, &commute);
        CHECK(commute == 1);
    }
    CHECK(simd_op_for(MPI_REPLACE) == MPI_OP_NULL);
    CHECK(simd_op_for(MPI_OP_NULL) == MPI_OP_NULL);

    for (kernels::Isa isa : levels()) {
        kernels::select_isa(kernels::isa_name(isa), nullptr);
        for (const Expected& e : expected_types()) {
            const TypeInfo info = type_info(e.handle);
            if (!info.predefined) continue;
            for (Op op : kAllOps) {
                if (!kernel_supports(mpi_op(op), e.handle)) continue;
                const size_t n = 1000;
                const auto in = make_data(op, info.type, n, 5);
                std::vector<uint8_t> got = make_data(op, info.type, n, 6), want = got;
                REQUIRE(PMPI_Reduce_local(in.data(), got.data(), static_cast<int>(n), e.handle,
                                          simd_op_for(mpi_op(op))) == MPI_SUCCESS);
                kernels::active().binary[static_cast<size_t>(op)][static_cast<size_t>(info.type)](in.data(), want.data(), n);
                INFO(e.name << " " << kernels::op_name(op) << " level " << kernels::isa_name(isa));
                CHECK(std::memcmp(got.data(), want.data(), got.size()) == 0);
            }
        }
    }
    kernels::select_isa("auto", nullptr);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    build_type_map();
    create_simd_ops();
    const int rc = Catch::Session().run(argc, argv);
    free_simd_ops();
    MPI_Finalize();
    return rc;
}
