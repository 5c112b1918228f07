// Nelder-Mead over log-parameters (model_fit.h). Log space makes every parameter's scale alike (bandwidths near 1e9,
// latencies near 1e-6) and keeps them positive; the objective is relative error because timings span six decades
// and the small calls matter as much as the large ones.
#include "policy/model_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace arshim::policy::model {

namespace {

constexpr int kDims = 6;
using Vec = std::array<double, kDims>;

// The fitted parameters, in one order.
double* field(MachineParams& m, int i) {
    double* fields[kDims] = {&m.copy_bw, &m.intra_latency, &m.gamma, &m.alpha, &m.net_bw, &m.stream_gain};
    return fields[i];
}

Vec to_log(MachineParams m) {
    Vec v;
    for (int i = 0; i < kDims; ++i) v[i] = std::log(*field(m, i));
    return v;
}

MachineParams from_log(const Vec& v) {
    MachineParams m;
    for (int i = 0; i < kDims; ++i) *field(m, i) = std::exp(v[i]);
    return m;
}

struct Bounds {
    Vec lo, hi;
    Vec clamp(Vec v) const {
        for (int i = 0; i < kDims; ++i) v[i] = std::clamp(v[i], lo[i], hi[i]);
        return v;
    }
};

Bounds bounds_around(const MachineParams& start, unsigned probed) {
    Bounds b;
    const Vec s = to_log(start);
    const double span = std::log(1e4);
    for (int i = 0; i < kDims; ++i) b.lo[i] = s[i] - span, b.hi[i] = s[i] + span;
    constexpr int gain = 5;  // stream_gain: at least 1 (one stream already fills the node) and at most 256
    b.lo[gain] = 0, b.hi[gain] = std::log(256.0);
    // Measured directly: near the measurement (model_fit.h ParamBit says why these factors).
    for (int i = 0; i < gain; ++i) {
        if (!(probed & 1u << i)) continue;
        const bool latency = (1u << i) == kIntraLatency || (1u << i) == kAlpha;
        b.lo[i] = s[i] + std::log(latency ? 0.5 : 0.25);
        b.hi[i] = s[i] + std::log(latency ? 30.0 : 1.5);
    }
    return b;
}

bool usable(const Sample& s, double predicted) { return s.seconds > 0 && std::isfinite(predicted) && predicted > 0; }

// Mean squared log error of the parameters at log-point v; also counts the samples used.
double objective(const Vec& v, const std::vector<Sample>& samples, int* used = nullptr) {
    const MachineParams m = from_log(v);
    double sum = 0;
    int n = 0;
    for (const Sample& s : samples) {
        const double t = predict(m, s.shape, s.decision, s.flavor);
        if (!usable(s, t)) continue;
        const double e = std::log(t) - std::log(s.seconds);
        sum += e * e;
        ++n;
    }
    if (used != nullptr) *used = n;
    return n == 0 ? 0 : sum / n;
}

// One Nelder-Mead run (standard coefficients: reflection 1, expansion 2, contraction 1/2, shrink 1/2) from x0 with
// an initial step of `step` in every log-parameter; points are clamped into the bounds.
Vec nelder_mead(const Vec& x0, double step, const Bounds& bounds, const std::vector<Sample>& samples, int budget,
                int* evaluations) {
    std::array<Vec, kDims + 1> x;
    std::array<double, kDims + 1> f;
    auto eval = [&](const Vec& v) {
        ++*evaluations;
        return objective(v, samples);
    };
    x[0] = bounds.clamp(x0);
    for (int i = 0; i < kDims; ++i) {
        x[i + 1] = x[0];
        x[i + 1][i] += step;
        x[i + 1] = bounds.clamp(x[i + 1]);
        if (x[i + 1][i] == x[0][i]) x[i + 1][i] -= step;  // at the upper bound: step down instead
    }
    for (int i = 0; i <= kDims; ++i) f[i] = eval(x[i]);
    const int start = *evaluations;
    while (*evaluations - start < budget) {
        std::array<int, kDims + 1> order;
        for (int i = 0; i <= kDims; ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](int a, int b) { return f[a] < f[b]; });
        const int best = order[0], worst = order[kDims], second = order[kDims - 1];
        if (f[worst] - f[best] < 1e-14) break;
        Vec centroid{};
        for (int i = 0; i <= kDims; ++i)
            if (i != worst)
                for (int j = 0; j < kDims; ++j) centroid[j] += x[i][j] / kDims;
        auto along = [&](double t) {  // centroid + t (centroid - worst)
            Vec v;
            for (int j = 0; j < kDims; ++j) v[j] = centroid[j] + t * (centroid[j] - x[worst][j]);
            return bounds.clamp(v);
        };
        const Vec r = along(1.0);
        const double fr = eval(r);
        if (fr < f[best]) {
            const Vec e = along(2.0);
            const double fe = eval(e);
            if (fe < fr) x[worst] = e, f[worst] = fe;
            else x[worst] = r, f[worst] = fr;
        } else if (fr < f[second]) {
            x[worst] = r, f[worst] = fr;
        } else {
            const bool outside = fr < f[worst];
            const Vec c = along(outside ? 0.5 : -0.5);
            const double fc = eval(c);
            if (fc < std::min(fr, f[worst])) {
                x[worst] = c, f[worst] = fc;
            } else {
                for (int i = 0; i <= kDims; ++i) {
                    if (i == best) continue;
                    for (int j = 0; j < kDims; ++j) x[i][j] = x[best][j] + 0.5 * (x[i][j] - x[best][j]);
                    f[i] = eval(x[i]);
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= kDims; ++i)
        if (f[i] < f[best]) best = i;
    return x[best];
}

}  // namespace

FitResult fit(const std::vector<Sample>& samples, const MachineParams& start, const FitOptions& options) {
    const Bounds bounds = bounds_around(start, options.probed);
    FitResult result;
    Vec x = bounds.clamp(to_log(start));
    // Restarts with a fresh, smaller simplex: Nelder-Mead can stall on a collapsed simplex, and the first run's
    // large steps (a factor e) explore while later ones refine.
    double step = 1.0;
    for (int run = 0; run < std::max(1, options.restarts); ++run) {
        x = nelder_mead(x, step, bounds, samples, options.max_evaluations, &result.evaluations);
        step *= 0.5;
    }
    result.params = from_log(x);
    result.rms_log_error = std::sqrt(objective(x, samples, &result.samples_used));
    return result;
}

double median_relative_error(const MachineParams& params, const std::vector<Sample>& samples) {
    std::vector<double> errors;
    for (const Sample& s : samples) {
        const double t = predict(params, s.shape, s.decision, s.flavor);
        if (usable(s, t)) errors.push_back(std::abs(t - s.seconds) / s.seconds);
    }
    if (errors.empty()) return std::numeric_limits<double>::quiet_NaN();
    const std::size_t mid = errors.size() / 2;
    std::nth_element(errors.begin(), errors.begin() + mid, errors.end());
    if (errors.size() % 2 == 1) return errors[mid];
    const double upper = errors[mid];
    return (upper + *std::max_element(errors.begin(), errors.begin() + mid)) / 2;
}

}  // namespace arshim::policy::model
