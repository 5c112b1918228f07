// The rules verify mode compares results by (kernels/compare.h), without MPI.
#include "test/support/catch.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/compare.h"

using arshim::compare::compare;
using arshim::compare::element_text;
using arshim::compare::magnitudes;
using arshim::compare::needs_magnitudes;
using arshim::vocab::Op;
using arshim::vocab::Type;

TEST_CASE("integers, logicals and bitwise results compare exactly") {
    const std::vector<int32_t> ref = {1, -2, 3, 4};
    std::vector<int32_t> got = ref;
    CHECK(compare(Op::sum, Type::i32, got.data(), ref.data(), nullptr, 4, 3).same());
    got[2] = 4;
    const auto v = compare(Op::sum, Type::i32, got.data(), ref.data(), nullptr, 4, 3);
    CHECK(v.mismatches == 1);
    CHECK(v.first == 2);
    const std::vector<uint64_t> big = {~uint64_t{0}}, small = {4};
    CHECK(!compare(Op::max, Type::u64, big.data(), small.data(), nullptr, 1, 2).same());
}

TEST_CASE("a floating-point sum may differ by reassociation, within 2 gamma(p-1) sum|x|") {
    // Three ranks contribute 1e16, 1 and -1e16: one order gives 0, another 1. Both are legitimate.
    const double got[] = {0.0}, ref[] = {1.0}, sums[] = {2e16 + 1};
    auto v = compare(Op::sum, Type::f64, got, ref, sums, 1, 3);
    CHECK(v.same());
    CHECK(v.worst_bound_share > 0);
    CHECK(v.worst_bound_share <= 1);
    // A difference of 100 is beyond any order of summing these three numbers.
    const double far[] = {101.0};
    v = compare(Op::sum, Type::f64, far, ref, sums, 1, 3);
    CHECK(v.mismatches == 1);
    // Small magnitudes make a small bound: for two ranks (one addition, 2u |a + b|) four ulps of 1.0 are too much.
    const double exact_sums[] = {1.0};
    const double next[] = {1.0 + 4 * std::numeric_limits<double>::epsilon()};
    CHECK(!compare(Op::sum, Type::f64, next, ref, exact_sums, 1, 2).same());
}

TEST_CASE("the magnitudes of complex numbers are per component") {
    Type mtype = Type::count;
    std::size_t per = 0;
    REQUIRE(needs_magnitudes(Op::sum, Type::c64, &mtype, &per));
    CHECK(mtype == Type::f64);
    CHECK(per == 2);
    CHECK(!needs_magnitudes(Op::prod, Type::f64, &mtype, &per));
    CHECK(!needs_magnitudes(Op::sum, Type::i32, &mtype, &per));
    const std::complex<double> z[] = {{-1.5, 2.0}};
    double m[2] = {};
    magnitudes(Type::c64, z, m, 1);
    CHECK(m[0] == 1.5);
    CHECK(m[1] == 2.0);
    const std::complex<double> got[] = {{0.0, 5.0}}, ref[] = {{1.0, 5.0}};
    const double sums[] = {2e16 + 1, 5.0};
    CHECK(compare(Op::sum, Type::c64, got, ref, sums, 1, 3).same());
    const double tight[] = {1.0, 5.0};
    CHECK(!compare(Op::sum, Type::c64, got, ref, tight, 1, 3).same());
}

TEST_CASE("special values") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    // NaN on both sides is the same result; on one side of a MIN it is unordered (the libraries differ there).
    const double a[] = {nan, 1.0}, b[] = {nan, nan};
    auto v = compare(Op::min, Type::f64, a, b, nullptr, 2, 2);
    CHECK(v.same());
    CHECK(v.unordered == 1);
    // +0 and -0 are the same number.
    const double pz[] = {0.0}, nz[] = {-0.0};
    CHECK(compare(Op::max, Type::f64, pz, nz, nullptr, 1, 2).same());
    // A sum whose magnitudes overflow has no bound: unordered, not a mismatch.
    const double huge[] = {inf}, one[] = {1.0}, inf_sums[] = {inf};
    v = compare(Op::sum, Type::f64, huge, one, inf_sums, 1, 3);
    CHECK(v.same());
    CHECK(v.unordered == 1);
    // With finite magnitudes no partial sum overflows: an infinity is wrong.
    const double finite_sums[] = {3.0};
    CHECK(!compare(Op::sum, Type::f64, huge, one, finite_sums, 1, 3).same());
}

TEST_CASE("products are compared relative to their size") {
    const float ref[] = {3.0f};
    const float close[] = {std::nextafter(3.0f, 4.0f)};
    CHECK(compare(Op::prod, Type::f32, close, ref, nullptr, 1, 4).same());
    const float far[] = {3.01f};
    CHECK(!compare(Op::prod, Type::f32, far, ref, nullptr, 1, 4).same());
    const float tiny[] = {1e-40f}, zero[] = {0.0f};  // a subnormal against zero: underflow order, unordered
    const auto v = compare(Op::prod, Type::f32, tiny, zero, nullptr, 1, 4);
    CHECK(v.same());
    CHECK(v.unordered == 1);
    const std::complex<double> z[] = {{1.0, 1.0}}, zr[] = {{1.0, 1.0 + 1e-15}}, zfar[] = {{1.0, 1.1}};
    CHECK(compare(Op::prod, Type::c64, zr, z, nullptr, 1, 4).same());
    CHECK(!compare(Op::prod, Type::c64, zfar, z, nullptr, 1, 4).same());
}

TEST_CASE("long double and MINLOC pairs compare their values, not their padding") {
    long double x[2], y[2];
    std::memset(x, 0x11, sizeof x);
    std::memset(y, 0x22, sizeof y);
    x[0] = y[0] = 2.5L;
    x[1] = y[1] = -1.0L;
    CHECK(compare(Op::max, Type::f80, x, y, nullptr, 2, 2).same());
    struct DoubleInt {
        double v;
        int k;
    } p[1], q[1];
    std::memset(p, 0x33, sizeof p);
    std::memset(q, 0x44, sizeof q);
    p[0] = {1.0, 7};
    q[0] = {1.0, 7};
    CHECK(compare(Op::minloc, Type::double_int, p, q, nullptr, 1, 2).same());
    q[0].k = 8;
    CHECK(!compare(Op::minloc, Type::double_int, p, q, nullptr, 1, 2).same());
    CHECK(element_text(Type::double_int, q, 0) == "{1, 8}");
}

TEST_CASE("elements as text") {
    const uint8_t u[] = {253};
    CHECK(element_text(Type::u8, u, 0) == "253");
    const int16_t s[] = {-5};
    CHECK(element_text(Type::i16, s, 0) == "-5");
    const double d[] = {0.1};
    CHECK(element_text(Type::f64, d, 0) == "0.10000000000000001");
    const std::complex<float> c[] = {{1.0f, -2.0f}};
    CHECK(element_text(Type::c32, c, 0) == "(1,-2)");
}
