// Fitting the cost model (policy/model_fit.h): synthetic timings from known parameters with +-5% noise, fitted from
// another starting point, give the parameters back and predict the samples within 10% (median).
#include "test/support/catch.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "policy/model_fit.h"
#include "test/policy/decisions.h"

using namespace arshim::policy;
using namespace arshim::policy::testing;
using namespace arshim::policy::model;
using Catch::Approx;

namespace {

// A fixed-seed generator whose output is the same on every platform (std::uniform_real_distribution is not).
struct Noise {
    uint64_t state = 0x9E3779B97F4A7C15ull;
    double next() {  // uniform in [0, 1): splitmix64
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return static_cast<double>((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
    }
    double factor(double spread) { return 1 + spread * (2 * next() - 1); }
};

MachineParams truth() {
    MachineParams m;
    m.copy_bw = 6e9;
    m.intra_latency = 0.8e-6;
    m.gamma = 3e9;
    m.alpha = 8e-6;
    m.net_bw = 1.1e9;
    m.stream_gain = 3;
    return m;
}

std::vector<Decision> candidates(int ppn) {
    std::vector<Decision> out{Decision{}, pipelined(256 << 10, 4)};  // native, pipelined
    for (uint32_t l : {1u, 2u, static_cast<uint32_t>(ppn)})
        for (uint32_t k : {1u, 4u}) out.push_back(multileader(l, k));
    return out;
}

std::vector<Sample> synthetic(const MachineParams& m, double spread) {
    Noise noise;
    std::vector<Sample> samples;
    for (Shape s : {Shape{0, 2, 1}, Shape{0, 4, 1}, Shape{0, 1, 2}, Shape{0, 2, 2}, Shape{0, 4, 2}, Shape{0, 4, 4}})
        for (uint64_t bytes : {8ull, 1024ull, 65536ull, 1048576ull, 16777216ull})
            for (const Decision& d : candidates(s.ppn))
                for (Flavor f : {Flavor::mpich, Flavor::openmpi}) {
                    s.bytes = bytes;
                    samples.push_back(Sample{s, d, f, predict(m, s, d, f) * noise.factor(spread)});
                }
    return samples;
}

}  // namespace

TEST_CASE("the noise is +-5% and deterministic", "[fit]") {
    Noise a, b;
    for (int i = 0; i < 1000; ++i) {
        const double f = a.factor(0.05);
        CHECK(f == b.factor(0.05));
        CHECK(std::abs(f - 1) <= 0.05);
    }
}

TEST_CASE("exact parameters predict exact samples", "[fit]") {
    const std::vector<Sample> samples = synthetic(truth(), 0);
    CHECK(median_relative_error(truth(), samples) == Approx(0).margin(1e-12));
    // the default parameters are not the truth
    CHECK(median_relative_error(MachineParams{}, samples) > 0.1);
}

TEST_CASE("fitting recovers known parameters from noisy timings", "[fit]") {
    const std::vector<Sample> samples = synthetic(truth(), 0.05);
    const FitResult r = fit(samples, MachineParams{});
    CHECK(r.samples_used == static_cast<int>(samples.size()));
    const MachineParams t = truth();
    auto near = [](double got, double want) { return std::abs(got / want - 1) <= 0.2; };
    INFO("copy_bw " << r.params.copy_bw << " intra_latency " << r.params.intra_latency << " gamma " << r.params.gamma
                    << " alpha " << r.params.alpha << " net_bw " << r.params.net_bw << " stream_gain "
                    << r.params.stream_gain << " rms log error " << r.rms_log_error << " evaluations "
                    << r.evaluations);
    CHECK(near(r.params.copy_bw, t.copy_bw));
    CHECK(near(r.params.intra_latency, t.intra_latency));
    CHECK(near(r.params.gamma, t.gamma));
    CHECK(near(r.params.alpha, t.alpha));
    CHECK(near(r.params.net_bw, t.net_bw));
    CHECK(near(r.params.stream_gain, t.stream_gain));
    CHECK(median_relative_error(r.params, samples) <= 0.10);
    // deterministic: the same samples give the same fit
    const FitResult again = fit(samples, MachineParams{});
    CHECK(again.params.alpha == r.params.alpha);
    CHECK(again.params.net_bw == r.params.net_bw);
}

TEST_CASE("samples without a model are left out of fitting and error", "[fit]") {
    Sample sharp;
    sharp.shape = Shape{1024, 2, 2};
    set_path(sharp.decision, Path::sharp);
    sharp.seconds = 1e-5;
    CHECK(std::isnan(median_relative_error(truth(), {sharp})));
    std::vector<Sample> samples = synthetic(truth(), 0);
    samples.push_back(sharp);
    CHECK(median_relative_error(truth(), samples) == Approx(0).margin(1e-12));
    const FitResult r = fit({sharp}, MachineParams{});
    CHECK(r.samples_used == 0);
}
