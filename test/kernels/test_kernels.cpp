// Unit tests of kernels/ (no MPI): every defined (op, type) at every ISA level this CPU has, binary and n-ary, on
// lengths 0..257 and 1<<20 + 3, unaligned, against the independent reference in reference.h.
#include "test/support/catch.h"

#include <cstdlib>
#include <memory>
#include <set>
#include <tuple>

#include "kernels/kernels.h"
#include "test/kernels/reference.h"

using namespace arshim;
using namespace arshim::test;

namespace {

// 64-byte aligned storage, so that the offsets the tests add give exactly the misalignments intended.
struct Buffer {
    explicit Buffer(size_t bytes)
        : size(bytes + 128), data(static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64)), &std::free) {}
    uint8_t* at(size_t offset) const { return data.get() + offset; }
    size_t size;  // bytes + 128 of slack for the offsets
    std::unique_ptr<uint8_t, decltype(&std::free)> data;
};

std::string label(const char* level, Op op, Type type, size_t n, const std::string& form) {
    return std::string(level) + " " + kernels::op_name(op) + "(" + kernels::type_name(type) + ") n=" +
           std::to_string(n) + " " + form;
}

constexpr size_t kMaxSmall = 257;
constexpr size_t kMaxSources = 9;
constexpr size_t kLarge = (size_t{1} << 20) + 3;

// One level, one (op, type): all small lengths with both forms, each at its own misalignment.
size_t check_small(const char* level, const kernels::KernelTable& table, Op op, Type type) {
    const size_t size = kernels::type_size(type);
    const auto o = static_cast<size_t>(op);
    const auto t = static_cast<size_t>(type);
    DataGen gen(1000 * o + t);
    std::vector<Buffer> src;
    for (size_t k = 0; k < kMaxSources; ++k) {
        src.emplace_back(kMaxSmall * size);
        gen.fill(op, type, src.back().at(0), (src.back().size - 64) / size);
    }
    Buffer got(kMaxSmall * size), want(kMaxSmall * size);
    size_t failures = 0;
    auto fail = [&](const std::string& what, const Mismatch& m) {
        if (++failures <= 5) FAIL_CHECK(what << ": " << m.detail);
    };

    for (size_t n = 0; n <= kMaxSmall; ++n) {
        // binary: inout = in op inout, in and inout misaligned differently
        const uint8_t* in = src[0].at(n % 13);
        const uint8_t* inout0 = src[1].at(n % 7);
        const size_t out_off = (n * 5) % 11;
        std::memcpy(got.at(out_off), inout0, n * size);
        std::memcpy(want.at(out_off), inout0, n * size);
        table.binary[o][t](in, got.at(out_off), n);
        ref::array(op, type, want.at(out_off), in, want.at(out_off), n);
        Mismatch m = compare(op, type, got.at(out_off), want.at(out_off), n);
        if (m.any) fail(label(level, op, type, n, "binary"), m);

        // n-ary with 1..9 sources; dst aliases srcs[0] on every third count (the in-place form)
        for (size_t nsrc = 1; nsrc <= kMaxSources; ++nsrc) {
            std::vector<const void*> srcs;
            for (size_t k = 0; k < nsrc; ++k) srcs.push_back(src[k].at((n + 3 * k) % 17));
            const bool alias = (n + nsrc) % 3 == 0;
            std::vector<uint8_t> first(static_cast<const uint8_t*>(srcs[0]),
                                       static_cast<const uint8_t*>(srcs[0]) + n * size);
            void* dst = got.at(out_off);
            std::vector<const void*> kernel_srcs = srcs;
            if (alias) {
                std::memcpy(dst, first.data(), n * size);
                kernel_srcs[0] = dst;
            } else {
                std::memset(dst, 0xA5, n * size);  // garbage, to see that padding is left alone
            }
            std::memcpy(want.at(out_off), dst, n * size);
            std::vector<const void*> ref_srcs = srcs;
            ref_srcs[0] = first.data();
            table.nary[o][t](dst, kernel_srcs.data(), nsrc, n);
            ref::nary(op, type, want.at(out_off), ref_srcs, n);
            m = compare(op, type, dst, want.at(out_off), n);
            if (m.any) fail(label(level, op, type, n, "nary nsrc=" + std::to_string(nsrc) + (alias ? " in-place" : "")), m);
        }
    }
    return failures;
}

// Large vectors (several n-ary tiles, the unrolled main loops), tested once per distinct kernel function: the
// auto level and the pairs a wider level inherits run the very same code.
size_t check_large(const char* level, const kernels::KernelTable& table, Op op, Type type) {
    static std::set<std::tuple<void*, void*, int, int>> done;
    const auto o = static_cast<size_t>(op);
    const auto t = static_cast<size_t>(type);
    if (!done.emplace(reinterpret_cast<void*>(table.binary[o][t]), reinterpret_cast<void*>(table.nary[o][t]),
                      static_cast<int>(o), static_cast<int>(t)).second)
        return 0;
    const size_t size = kernels::type_size(type);
    DataGen gen(77 * o + t);
    std::vector<Buffer> src;
    for (size_t k = 0; k < 3; ++k) {
        // Random data for a prime-length block, repeated: varied at every vector position and tile boundary,
        // and fast to make (the generator costs more than the kernels under test).
        constexpr size_t kBlock = 65537;
        src.emplace_back(kLarge * size);
        uint8_t* p = src.back().at(k + 1);
        gen.fill(op, type, p, kBlock);
        for (size_t done = kBlock; done < kLarge; done += kBlock)
            std::memcpy(p + done * size, p, std::min(kBlock, kLarge - done) * size);
    }
    Buffer got(kLarge * size), want(kLarge * size);
    size_t failures = 0;
    std::memcpy(got.at(5), src[1].at(2), kLarge * size);
    std::memcpy(want.at(5), src[1].at(2), kLarge * size);
    table.binary[o][t](src[0].at(1), got.at(5), kLarge);
    ref::array(op, type, want.at(5), src[0].at(1), want.at(5), kLarge);
    Mismatch m = compare(op, type, got.at(5), want.at(5), kLarge);
    if (m.any) {
        ++failures;
        FAIL_CHECK(label(level, op, type, kLarge, "binary") << ": " << m.detail);
    }
    const std::vector<const void*> srcs = {src[0].at(1), src[1].at(2), src[2].at(3)};
    std::memset(got.at(5), 0x5A, kLarge * size);
    std::memcpy(want.at(5), got.at(5), kLarge * size);
    table.nary[o][t](got.at(5), srcs.data(), srcs.size(), kLarge);
    ref::nary(op, type, want.at(5), srcs, kLarge);
    m = compare(op, type, got.at(5), want.at(5), kLarge);
    if (m.any) {
        ++failures;
        FAIL_CHECK(label(level, op, type, kLarge, "nary nsrc=3") << ": " << m.detail);
    }
    return failures;
}

void check_level(const char* name, kernels::Isa isa, bool explicit_level) {
    if (explicit_level && !(kernels::isa_compiled(isa) && kernels::isa_supported_by_cpu(isa))) {
        WARN("level " << name << " skipped: " << (kernels::isa_compiled(isa) ? "this CPU lacks it" : "not in this build"));
        return;
    }
    const kernels::KernelTable& table = explicit_level ? kernels::table(isa) : kernels::active();
    if (explicit_level) REQUIRE(table.isa == isa);
    size_t failures = 0, pairs = 0;
    for (Op op : kAllOps)
        for (Type type : all_types()) {
            if (!kernels::defined(op, type)) continue;
            ++pairs;
            failures += check_small(name, table, op, type);
            failures += check_large(name, table, op, type);
        }
    INFO("level " << name << " (" << kernels::isa_name(table.isa) << "): " << pairs << " (op, type) pairs");
    CHECK(failures == 0);
}

}  // namespace

TEST_CASE("defined() is exactly the MPI standard's op x type table", "[kernels]") {
    for (Op op : kAllOps)
        for (Type type : all_types()) {
            INFO(kernels::op_name(op) << "(" << kernels::type_name(type) << ")");
            CHECK(kernels::defined(op, type) == standard_defines(op, type));
        }
    CHECK_FALSE(kernels::defined(Op::count, Type::i32));
    CHECK_FALSE(kernels::defined(Op::sum, Type::count));
}

TEST_CASE("every level's table holds a kernel for exactly the defined pairs", "[kernels]") {
    for (size_t i = 0; i < kernels::kIsaCount; ++i) {
        const auto isa = static_cast<kernels::Isa>(i);
        const kernels::KernelTable& table = kernels::table(isa);
        for (Op op : kAllOps)
            for (Type type : all_types()) {
                INFO(kernels::isa_name(isa) << " " << kernels::op_name(op) << "(" << kernels::type_name(type) << ")");
                const bool has = table.binary[static_cast<size_t>(op)][static_cast<size_t>(type)] != nullptr;
                CHECK(has == kernels::defined(op, type));
                CHECK((table.nary[static_cast<size_t>(op)][static_cast<size_t>(type)] != nullptr) == has);
            }
    }
}

TEST_CASE("names and sizes", "[kernels]") {
    std::set<std::string> names;
    for (Type type : all_types()) names.insert(kernels::type_name(type));
    CHECK(names.size() == kernels::kTypeCount);
    CHECK(kernels::type_size(Type::i8) == 1);
    CHECK(kernels::type_size(Type::u64) == 8);
    CHECK(kernels::type_size(Type::f80) == sizeof(long double));
    CHECK(kernels::type_size(Type::c64) == 16);
    CHECK(kernels::type_size(Type::boolean) == sizeof(bool));
    CHECK(kernels::type_size(Type::float_int) == sizeof(Pair<float, int>));
    CHECK(kernels::type_size(Type::double_int) == sizeof(Pair<double, int>));
    CHECK(kernels::type_size(Type::short_int) == sizeof(Pair<short, int>));
    CHECK(kernels::type_size(Type::long_double_int) == sizeof(Pair<long double, int>));
    CHECK(std::string(kernels::op_name(Op::maxloc)) == "maxloc");
    CHECK(std::string(kernels::isa_name(kernels::Isa::avx512)) == "avx512");
}

TEST_CASE("ISA selection", "[kernels]") {
    const kernels::Isa best = kernels::best_isa();
    CHECK(kernels::isa_compiled(best));
    CHECK(kernels::isa_supported_by_cpu(best));
    CHECK(kernels::isa_compiled(kernels::Isa::scalar));
    std::string warning = "stale";
    CHECK(kernels::select_isa("auto", &warning) == best);
    CHECK(warning.empty());
    CHECK(&kernels::active() == &kernels::table(best));
    CHECK(kernels::select_isa("scalar", &warning) == kernels::Isa::scalar);
    CHECK(warning.empty());
    CHECK(kernels::active().isa == kernels::Isa::scalar);
    CHECK(kernels::select_isa("fastest", &warning) == best);
    CHECK(warning.find("unknown kernel level 'fastest'") != std::string::npos);
    CHECK(warning.find('\n') == std::string::npos);
#if defined(__x86_64__)
    CHECK(kernels::select_isa("sve", &warning) == best);
    CHECK(warning == "sve kernels are not in this build; using " + std::string(kernels::isa_name(best)));
#endif
    for (const char* level : {"avx2", "avx512", "neon"}) {
        const kernels::Isa got = kernels::select_isa(level, &warning);
        if (warning.empty()) {
            CHECK(std::string(kernels::isa_name(got)) == level);
        } else {
            CHECK(got == best);
            CHECK(warning.find(std::string("; using ") + kernels::isa_name(best)) != std::string::npos);
        }
    }
    kernels::select_isa("auto", nullptr);
    CHECK(kernels::active().isa == best);
}

TEST_CASE("vector levels really install vector kernels", "[kernels]") {
    for (kernels::Isa isa : {kernels::Isa::avx2, kernels::Isa::avx512, kernels::Isa::neon, kernels::Isa::sve}) {
        if (!kernels::isa_compiled(isa) || !kernels::isa_supported_by_cpu(isa)) continue;
        const auto& scalar = kernels::table(kernels::Isa::scalar);
        const auto& wide = kernels::table(isa);
        for (auto [op, type] : std::initializer_list<std::pair<Op, Type>>{{Op::sum, Type::f32}, {Op::sum, Type::f64},
                 {Op::max, Type::f32}, {Op::sum, Type::i32}, {Op::sum, Type::i8}, {Op::bxor, Type::u64}}) {
            INFO(kernels::isa_name(isa) << " " << kernels::op_name(op) << "(" << kernels::type_name(type) << ")");
            CHECK(wide.binary[static_cast<size_t>(op)][static_cast<size_t>(type)] !=
                  scalar.binary[static_cast<size_t>(op)][static_cast<size_t>(type)]);
        }
    }
}

// The cases the MPI libraries get wrong or that are easy to get wrong, spelled out, at every level.
TEST_CASE("semantics of the tricky cases", "[kernels]") {
    for (size_t i = 0; i < kernels::kIsaCount; ++i) {
        const auto isa = static_cast<kernels::Isa>(i);
        if (!kernels::isa_compiled(isa) || !kernels::isa_supported_by_cpu(isa)) continue;
        const auto& table = kernels::table(isa);
        auto run = [&](Op op, Type type, const auto& in, auto inout) {
            // 67 copies: long enough for the vector body and the tail of every level
            using T = std::decay_t<decltype(in)>;
            std::vector<T> a(67, in), b(67, inout);
            table.binary[static_cast<size_t>(op)][static_cast<size_t>(type)](a.data(), b.data(), b.size());
            if constexpr (std::is_arithmetic_v<T>)  // (structs: padding bytes may differ)
                for (const T& x : b) CHECK(std::memcmp(&x, &b[0], sizeof(T)) == 0);
            return b[0];
        };
        INFO("level " << kernels::isa_name(isa));
        // pmodels/mpich#6083: MPICH compares unsigned types as signed in MIN/MAX. The kernels must not.
        CHECK(run(Op::min, Type::u8, uint8_t{253}, uint8_t{4}) == 4);
        CHECK(run(Op::max, Type::u8, uint8_t{253}, uint8_t{4}) == 253);
        CHECK(run(Op::min, Type::u16, uint16_t{65000}, uint16_t{7}) == 7);
        CHECK(run(Op::min, Type::u32, uint32_t{4000000000u}, uint32_t{7}) == 7);
        CHECK(run(Op::max, Type::u64, uint64_t{1} << 63, uint64_t{7}) == uint64_t{1} << 63);
        CHECK(run(Op::min, Type::i64, int64_t{-5}, int64_t{7}) == -5);
        // ompi#8045: Open MPI's op/avx saturates uint8/uint16 SUM. MPI sums wrap around.
        CHECK(run(Op::sum, Type::u8, uint8_t{200}, uint8_t{100}) == 44);
        CHECK(run(Op::sum, Type::u16, uint16_t{60000}, uint16_t{10000}) == 4464);
        CHECK(run(Op::sum, Type::i8, int8_t{127}, int8_t{1}) == -128);
        CHECK(run(Op::prod, Type::i32, std::numeric_limits<int32_t>::min(), int32_t{-1}) ==
              std::numeric_limits<int32_t>::min());
        CHECK(run(Op::prod, Type::u64, uint64_t{0x100000001ull}, uint64_t{0x100000001ull}) == 0x200000001ull);
        CHECK(run(Op::prod, Type::i8, int8_t{-7}, int8_t{19}) == static_cast<int8_t>(-133));
        // logical ops: any non-zero bit is true, the result is exactly 0 or 1
        CHECK(run(Op::land, Type::i32, int32_t{0x100}, int32_t{-1}) == 1);
        CHECK(run(Op::lxor, Type::i64, int64_t{1} << 40, int64_t{2}) == 0);
        CHECK(run(Op::lor, Type::u16, uint16_t{0}, uint16_t{0x8000}) == 1);
        CHECK(run(Op::land, Type::boolean, uint8_t{0x80}, uint8_t{1}) == 1);
        // floating MIN/MAX: a NaN or a +-0 tie gives `in`, as MPICH's and Open MPI's scalar code do
        const float nan = std::numeric_limits<float>::quiet_NaN();
        CHECK(std::isnan(run(Op::min, Type::f32, nan, 1.0f)));
        CHECK(run(Op::min, Type::f32, 1.0f, nan) == 1.0f);
        CHECK(std::isnan(run(Op::max, Type::f32, nan, 1.0f)));
        CHECK(run(Op::max, Type::f32, 1.0f, nan) == 1.0f);
        CHECK_FALSE(std::signbit(run(Op::min, Type::f32, 0.0f, -0.0f)));
        CHECK(std::signbit(run(Op::min, Type::f32, -0.0f, 0.0f)));
        CHECK(std::signbit(run(Op::max, Type::f64, -0.0, 0.0)));
        CHECK(run(Op::min, Type::f64, 2.0, -std::numeric_limits<double>::infinity()) ==
              -std::numeric_limits<double>::infinity());
        // MINLOC/MAXLOC: ties take the lower index
        using DI = Pair<double, int>;
        const DI di = run(Op::minloc, Type::double_int, DI{1.5, 9}, DI{1.5, 4});
        CHECK(di.v == 1.5);
        CHECK(di.k == 4);
        const DI dj = run(Op::maxloc, Type::double_int, DI{2.5, 3}, DI{1.5, 4});
        CHECK(dj.k == 3);
        using SI = Pair<short, int>;
        CHECK(run(Op::maxloc, Type::short_int, SI{-1, -3}, SI{-1, 2}).k == -3);
        // complex PROD: (1+2i)(3+4i) = -5+10i
        using C = Complex<double>;
        const C c = run(Op::prod, Type::c64, C{1, 2}, C{3, 4});
        CHECK(c.re == -5.0);
        CHECK(c.im == 10.0);
    }
}

TEST_CASE("kernels match the reference: scalar", "[kernels][exhaustive]") { check_level("scalar", kernels::Isa::scalar, true); }
TEST_CASE("kernels match the reference: avx2", "[kernels][exhaustive]") { check_level("avx2", kernels::Isa::avx2, true); }
TEST_CASE("kernels match the reference: avx512", "[kernels][exhaustive]") { check_level("avx512", kernels::Isa::avx512, true); }
TEST_CASE("kernels match the reference: neon", "[kernels][exhaustive]") { check_level("neon", kernels::Isa::neon, true); }
TEST_CASE("kernels match the reference: sve", "[kernels][exhaustive]") { check_level("sve", kernels::Isa::sve, true); }
TEST_CASE("kernels match the reference: auto", "[kernels][exhaustive]") {
    kernels::select_isa("auto", nullptr);
    check_level("auto", kernels::best_isa(), false);
}
