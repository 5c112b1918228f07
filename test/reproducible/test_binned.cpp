// The order-independent sums of ARSHIM_REPRODUCIBLE=any-np (kernels/binned.h), without MPI: exact and correctly
// rounded against an independent exact reference (128-bit integers over a bounded exponent range), the same bits
// in any order and grouping, IEEE special values, subnormals, overflow, and never less accurate than a rank-order sum.
#include "test/support/catch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/binned.h"

namespace b = arshim::binned;

namespace {

template <typename Real>
struct Sums {
    std::vector<Real> max_magnitude;
};

// The any-np sum of `values[r][i]` over r, reducing the accumulators in the order `order` gives.
template <typename Real>
std::vector<Real> binned_sum(const std::vector<std::vector<Real>>& values, const std::vector<int>& order) {
    const std::size_t n = values[0].size();
    std::vector<Real> max(n, 0), mags(n);
    for (const auto& v : values) {
        b::finite_magnitudes(v.data(), mags.data(), n);
        for (std::size_t i = 0; i < n; ++i) max[i] = std::max(max[i], mags[i]);
    }
    std::vector<b::AccumulatorOf<Real>> acc(n), one(n);
    b::to_accumulators(values[order[0]].data(), max.data(), acc.data(), n);
    for (std::size_t k = 1; k < order.size(); ++k) {
        b::to_accumulators(values[order[k]].data(), max.data(), one.data(), n);
        b::add<Real>(one.data(), acc.data(), n);
    }
    std::vector<Real> out(n);
    b::to_reals(acc.data(), max.data(), out.data(), n);
    return out;
}

std::vector<int> identity(int p) {
    std::vector<int> o(p);
    for (int i = 0; i < p; ++i) o[i] = i;
    return o;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("exact and correctly rounded, whatever the order (double)") {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int> exponent(-40, 20);
    std::uniform_int_distribution<int64_t> mantissa(-(int64_t{1} << 53) + 1, (int64_t{1} << 53) - 1);
    const int p = 7;
    const std::size_t n = 2000;
    std::vector<std::vector<double>> values(p, std::vector<double>(n));
    for (auto& v : values)
        for (double& x : v) x = std::ldexp(static_cast<double>(mantissa(rng)), exponent(rng) - 53);
    // Exact reference: every value is an integer multiple of 2^-93, below 2^20: as 2^-93-scaled __int128 sums.
    std::vector<double> exact(n);
    for (std::size_t i = 0; i < n; ++i) {
        __int128 sum = 0;
        for (int r = 0; r < p; ++r) sum += static_cast<__int128>(std::ldexp(values[r][i], 93));
        exact[i] = std::ldexp(static_cast<double>(sum), -93);  // int128 -> double rounds to nearest even
    }
    const std::vector<double> got = binned_sum(values, identity(p));
    std::vector<int> order = identity(p);
    int worse_than_rank_order = 0, better_than_rank_order = 0;
    for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(same_bits(got[i], exact[i]));
        double rank_order = values[0][i];
        for (int r = 1; r < p; ++r) rank_order += values[r][i];
        const long double exact_ld = exact[i];
        if (std::fabs(got[i] - exact_ld) > std::fabs(rank_order - exact_ld)) ++worse_than_rank_order;
        if (got[i] != rank_order) ++better_than_rank_order;
    }
    CHECK(worse_than_rank_order == 0);
    CHECK(better_than_rank_order > 0);  // the data does make rank-order sums round
    for (int trial = 0; trial < 20; ++trial) {
        std::shuffle(order.begin(), order.end(), rng);
        const std::vector<double> again = binned_sum(values, order);
        for (std::size_t i = 0; i < n; ++i) REQUIRE(same_bits(again[i], got[i]));
    }
}

TEST_CASE("exact and correctly rounded (float)") {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> exponent(-30, 30);
    std::uniform_int_distribution<int32_t> mantissa(-(1 << 24) + 1, (1 << 24) - 1);
    const int p = 5;
    const std::size_t n = 2000;
    std::vector<std::vector<float>> values(p, std::vector<float>(n));
    for (auto& v : values)
        for (float& x : v) x = std::ldexp(static_cast<float>(mantissa(rng)), exponent(rng) - 24);
    const std::vector<float> got = binned_sum(values, identity(p));
    for (std::size_t i = 0; i < n; ++i) {
        __int128 sum = 0;  // every value is an integer multiple of 2^-54, below 2^30
        for (int r = 0; r < p; ++r) sum += static_cast<__int128>(std::ldexp(static_cast<double>(values[r][i]), 54));
        // Correct rounding: within half a float ulp of the exact sum (the exact sum, as a double, is off by at most
        // half a double ulp, far below).
        const double exact = std::ldexp(static_cast<double>(sum), -54);
        const double half_ulp = std::ldexp(1.0, std::ilogb(static_cast<double>(got[i])) - 24);
        REQUIRE(std::fabs(static_cast<double>(got[i]) - exact) <= half_ulp * (1 + 1e-9));
    }
}

TEST_CASE("cancellation keeps the small part that a rank-order sum loses") {
    // 1e16 + 1 - 1e16: rank order gives 0, the exact sum is 1.
    const std::vector<std::vector<double>> values = {{1e16}, {1.0}, {-1e16}};
    CHECK(binned_sum(values, identity(3))[0] == 1.0);
    CHECK(binned_sum(values, {2, 0, 1})[0] == 1.0);
    const std::vector<std::vector<float>> f = {{1e8f}, {1.0f}, {-1e8f}};
    CHECK(binned_sum(f, identity(3))[0] == 1.0f);
}

TEST_CASE("IEEE special values") {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    auto sum = [](std::vector<double> xs) {
        std::vector<std::vector<double>> values;
        for (double x : xs) values.push_back({x});
        return binned_sum(values, identity(static_cast<int>(xs.size())))[0];
    };
    CHECK(std::isnan(sum({1.0, nan, 2.0})));
    CHECK(std::isnan(sum({inf, -inf})));
    CHECK(sum({inf, 1.0, 5.0}) == inf);
    CHECK(sum({-inf, 1.0}) == -inf);
    CHECK(std::signbit(sum({-0.0, -0.0})));
    CHECK(!std::signbit(sum({-0.0, 0.0})));
    CHECK(!std::signbit(sum({1.0, -1.0})));  // an exact zero from cancellation is +0, as IEEE rounding to nearest
    const double big = std::numeric_limits<double>::max();
    CHECK(sum({big, big}) == inf);  // overflow of the correctly rounded sum
    CHECK(sum({big, -big, big}) == big);
    const double tiny = std::numeric_limits<double>::denorm_min();
    CHECK(sum({tiny, tiny, tiny}) == 3 * tiny);  // subnormals, exact
    CHECK(sum({std::numeric_limits<double>::min(), -tiny}) == std::numeric_limits<double>::min() - tiny);
}

TEST_CASE("contributions far below the largest are rounded to the grid, deterministically") {
    // 2^-200 next to 1: below the 159-bit grid, rounded away; the same on every order.
    const std::vector<std::vector<double>> values = {{1.0}, {std::ldexp(1.0, -200)}, {-1.0}};
    CHECK(binned_sum(values, identity(3))[0] == 0.0);
    CHECK(binned_sum(values, {1, 2, 0})[0] == 0.0);
    // Within the grid (2^-150 below 1): kept exactly.
    const std::vector<std::vector<double>> kept = {{1.0}, {std::ldexp(1.0, -150)}, {-1.0}};
    CHECK(binned_sum(kept, identity(3))[0] == std::ldexp(1.0, -150));
}

TEST_CASE("the n-ary form reduces in any grouping to the same bits") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::size_t n = 64;
    std::vector<std::vector<double>> values(4, std::vector<double>(n));
    for (auto& v : values)
        for (double& x : v) x = std::ldexp(u(rng), static_cast<int>(rng() % 200) - 100);
    std::vector<double> max(n, 0), mags(n);
    for (const auto& v : values) {
        b::finite_magnitudes(v.data(), mags.data(), n);
        for (std::size_t i = 0; i < n; ++i) max[i] = std::max(max[i], mags[i]);
    }
    std::vector<std::vector<b::AccumulatorOf<double>>> acc(4, std::vector<b::AccumulatorOf<double>>(n));
    for (int r = 0; r < 4; ++r) b::to_accumulators(values[r].data(), max.data(), acc[r].data(), n);
    std::vector<b::AccumulatorOf<double>> all(n), left(n), right(n);
    const void* four[] = {acc[0].data(), acc[1].data(), acc[2].data(), acc[3].data()};
    b::add_nary<double>(all.data(), four, 4, n);
    const void* a[] = {acc[3].data(), acc[1].data()};
    const void* c[] = {acc[2].data(), acc[0].data()};
    b::add_nary<double>(left.data(), a, 2, n);
    b::add_nary<double>(right.data(), c, 2, n);
    const void* both[] = {left.data(), right.data()};  // dst may alias the first source only
    b::add_nary<double>(left.data(), both, 2, n);
    CHECK(std::memcmp(all.data(), left.data(), n * sizeof all[0]) == 0);
}
