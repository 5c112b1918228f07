// `arshim tune`'s decisions (tuned_table.h).
#include "policy/tuned_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "policy/model_fit.h"
#include "policy/rule_merge.h"

namespace arshim::policy::tuned {

namespace {

constexpr uint32_t kCarryReach = 4;  // a measured layout's decisions carry to node counts within this factor of it
constexpr double kPredictedMargin = 0.9;  // a predicted choice must beat native by 10%: the model's median error is
                                          // about that, and a wrong guess must not cost more than native

// The library's allreduce: every measurement's baseline.
Decision native_decision() { return decision_for(vocab::kLibraryPath); }

// Where a decision applies is its path's spec's (policy/path_spec.h: Applies, serves_layout, sensible_at,
// internode_step_changes): f(const P&) on whichever path's parameters the decision holds.
template <typename F>
bool ask_spec(const Decision& d, F&& f) {
    return std::visit(
        [&](const auto& p) {
            if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) return false;
            else return f(p);
        },
        d.params);
}

}  // namespace

bool serves(const Decision& d, uint32_t ppn) {
    return ask_spec(d, [&](const auto& p) {
        const Need need = std::decay_t<decltype(p)>::kApplies.ranks_per_node;
        return (need != Need::several || ppn > 1) && (need != Need::one || ppn == 1) && policy::serves_layout(p, ppn);
    });
}

bool sensible_at(const Decision& d, uint64_t bytes) {
    return ask_spec(d, [&](const auto& p) {
        return bytes <= std::decay_t<decltype(p)>::kApplies.max_bytes && policy::sensible_at(p, bytes);
    });
}

namespace {

// [lo, hi) of the size buckets the table decides one by one: [0, 16), then powers of two up to max_bytes, then the
// rest. The policy's byte bounds are powers of two, so a decision is constant within a bucket.
std::vector<std::pair<uint64_t, uint64_t>> byte_ranges(uint64_t max_bytes) {
    std::vector<std::pair<uint64_t, uint64_t>> out{{0, 16}};
    uint64_t lo = 16;
    while (lo < max_bytes) {
        out.emplace_back(lo, lo * 2);
        lo *= 2;
    }
    out.emplace_back(lo, kUnbounded);
    return out;
}

// A representative size of [lo, hi): the geometric middle, a multiple of 4 (MPI_FLOAT); 2 lo for the open range.
uint64_t middle(uint64_t lo, uint64_t hi) {
    if (hi == kUnbounded) return lo * 2;
    const double m = std::sqrt(static_cast<double>(std::max<uint64_t>(lo, 4)) * static_cast<double>(hi));
    return std::max<uint64_t>(4, static_cast<uint64_t>(m) / 4 * 4);
}

// The measurements of one candidate at the sizes of a range, summed: time and the noise bounds.
struct Tally {
    double p25 = 0, median = 0, p75 = 0;
    double native_p25 = 0, native = 0, native_p75 = 0;
    int sizes = 0;
};

// Whether `d` wins at the sizes of [lo, hi) measured on (nodes, ppn): in one launch it beats native beyond the noise
// (its upper quartile below native's lower quartile, each summed over those sizes), and every launch that measured
// there measured it faster than native (summed medians). A win the sweep's launch saw and the confirming launch
// reversed is the launches' noise, not a win: a launch's state moves short calls by more than most wins
// (docs/tuning.md "On the tuned shape itself"). Asking for a win beyond the noise in every launch was tried: it also
// dropped wins both launches saw, which the goal benchmark then confirmed, and chose native where a faster option
// existed (docs/tuning.md "Scored on the same figures").
bool confirmed_win(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn, uint64_t lo, uint64_t hi,
                   const Decision& d) {
    std::map<uint32_t, Tally> rounds;  // each round that measured there: d's tally in it (none: not confirmed)
    for (const Measurement& m : measured) {
        if (m.nodes != nodes || m.ppn != ppn || m.bytes < lo || m.bytes >= hi) continue;
        Tally& t = rounds[m.launch_round];
        if (!same_action(m.decision, d)) continue;
        t.p75 += m.p75_us, t.median += m.median_us, t.native_p25 += m.native_p25_us, t.native += m.native_us;
        ++t.sizes;
    }
    const auto beyond_noise = [](const auto& round) { return round.second.p75 < round.second.native_p25; };
    const auto faster = [](const auto& round) {
        return round.second.sizes > 0 && round.second.median < round.second.native;
    };
    return std::all_of(rounds.begin(), rounds.end(), faster) &&
           std::any_of(rounds.begin(), rounds.end(), beyond_noise);
}

// The size measured on (nodes, ppn) nearest to `bytes` in log scale, 0 counted as 1 (as measurements at it match);
// 0 when the layout has no measurement.
uint64_t nearest_size(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn, uint64_t bytes) {
    uint64_t nearest = 0;
    double distance = 0;
    for (const Measurement& m : measured) {
        if (m.nodes != nodes || m.ppn != ppn) continue;
        const double d = std::fabs(std::log2(static_cast<double>(std::max<uint64_t>(m.bytes, 1))) -
                                   std::log2(static_cast<double>(std::max<uint64_t>(bytes, 1))));
        if (nearest == 0 || d < distance) nearest = std::max<uint64_t>(m.bytes, 1), distance = d;
    }
    return nearest;
}

// Appends `d` to `out` unless an option there takes the same action.
void add_distinct(std::vector<Decision>& out, const Decision& d) {
    if (std::none_of(out.begin(), out.end(), [&](const Decision& o) { return same_action(o, d); })) out.push_back(d);
}

// The decision the measurements make at the measured size nearest to `bytes`: the fastest candidate measured there
// when it beats native beyond the noise and can be applied at `bytes`, else native.
Decision nearest_measured(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn, uint64_t bytes,
                          const std::vector<Decision>& options) {
    const uint64_t nearest = nearest_size(measured, nodes, ppn, bytes);
    const Measurement* best = nullptr;
    for (const Measurement& m : measured) {
        if (m.nodes != nodes || m.ppn != ppn || std::max<uint64_t>(m.bytes, 1) != nearest) continue;
        if (!confirmed_win(measured, nodes, ppn, m.bytes, m.bytes + 1, m.decision)) continue;
        if (best == nullptr || m.median_us / m.native_us < best->median_us / best->native_us) best = &m;
    }
    // A segmented decision does not carry down to sizes below one segment (sensible_at): the library's own there.
    if (best == nullptr || !sensible_at(best->decision, bytes)) return options[0];
    for (const Decision& d : options)
        if (same_action(d, best->decision)) return d;
    return options[0];
}

// Each option's measured time over the model's prediction at the size measured on (nodes, ppn) nearest to `bytes`
// (log scale): how far the fitted model is off for that option there. NaN where the option was not measured.
std::vector<double> corrections(const std::vector<Measurement>& measured, const model::MachineParams& params,
                                Flavor flavor, uint32_t nodes, uint32_t ppn, uint64_t bytes,
                                const std::vector<Decision>& options) {
    std::vector<double> out(options.size(), std::nan(""));
    const uint64_t nearest = nearest_size(measured, nodes, ppn, bytes);
    const model::Shape shape{nearest, static_cast<int>(ppn), static_cast<int>(nodes)};
    for (const Measurement& m : measured) {
        if (m.nodes != nodes || m.ppn != ppn || std::max<uint64_t>(m.bytes, 1) != nearest) continue;
        for (std::size_t i = 0; i < options.size(); ++i) {
            const bool native = i == 0;
            if (!native && !same_action(options[i], m.decision)) continue;
            const double t = native ? m.native_us : m.median_us;
            const double predicted = model::predict(params, shape, options[i], flavor) * 1e6;
            if (t > 0 && predicted > 0 && std::isfinite(predicted)) out[i] = t / predicted;
        }
    }
    return out;
}

}  // namespace

bool internode_step_changes(const Decision& d, uint32_t from_nodes, uint32_t to_nodes, uint32_t ppn, uint64_t bytes) {
    return ask_spec(d, [&](const auto& p) {
        return policy::internode_step_changes(p, from_nodes, to_nodes, ppn, bytes);
    });
}

std::vector<Decision> candidates_for(const std::vector<Measurement>& measured, uint32_t ppn) {
    std::vector<Decision> out{native_decision()};
    for (const Measurement& m : measured)
        if (serves(m.decision, ppn)) add_distinct(out, m.decision);
    return out;
}

std::vector<Decision> measured_options(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn) {
    std::vector<Decision> out = candidates_for(measured, ppn);
    for (const Measurement& m : measured)
        if (m.nodes == nodes && m.ppn == ppn && m.decision.path() != vocab::kLibraryPath) add_distinct(out, m.decision);
    return out;
}

std::vector<uint64_t> crossover_sizes(const model::MachineParams& params, Flavor flavor, uint32_t nodes, uint32_t ppn,
                                      const std::vector<Decision>& candidates, uint64_t lo, uint64_t hi) {
    std::vector<uint64_t> out;
    auto best_at = [&](uint64_t bytes) {
        const model::Shape shape{bytes, static_cast<int>(ppn), static_cast<int>(nodes)};
        int best = -1;
        double best_t = 0;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            if (!sensible_at(candidates[i], bytes)) continue;
            const double t = model::predict(params, shape, candidates[i], flavor);
            if (std::isfinite(t) && (best < 0 || t < best_t)) best = static_cast<int>(i), best_t = t;
        }
        return best;
    };
    // Steps of 2^(1/4): fine enough to place a change within its bucket, cheap (the model is arithmetic).
    lo = std::max<uint64_t>(lo, 4);
    int previous = best_at(lo);
    for (double b = static_cast<double>(lo) * 1.189; b <= static_cast<double>(hi); b *= 1.189) {
        const uint64_t bytes = static_cast<uint64_t>(b) / 4 * 4;
        const int now = best_at(bytes);
        if (now != previous) out.push_back(bytes);
        previous = now;
    }
    return out;
}

std::vector<uint64_t> measured_changes(const std::vector<Measurement>& measured, uint32_t nodes, uint32_t ppn) {
    std::set<uint64_t> sizes;
    for (const Measurement& m : measured)
        if (m.nodes == nodes && m.ppn == ppn && m.bytes > 0) sizes.insert(m.bytes);
    const std::vector<Decision> options = measured_options(measured, nodes, ppn);
    std::vector<uint64_t> out;
    uint64_t previous = 0;
    Decision previous_decision;
    for (uint64_t bytes : sizes) {
        const Decision d = nearest_measured(measured, nodes, ppn, bytes, options);
        if (previous != 0 && !same_action(d, previous_decision)) {
            const uint64_t middle = static_cast<uint64_t>(std::sqrt(static_cast<double>(previous) * bytes)) / 4 * 4;
            if (middle > previous && middle < bytes) out.push_back(middle);
        }
        previous = bytes;
        previous_decision = d;
    }
    return out;
}

std::vector<std::pair<std::string, double>> params_to_keys(const model::MachineParams& p) {
    std::vector<std::pair<std::string, double>> out = {
        {"copy_bw", p.copy_bw}, {"intra_latency", p.intra_latency}, {"gamma", p.gamma},
        {"alpha", p.alpha},     {"net_bw", p.net_bw},               {"stream_gain", p.stream_gain}};
    if (p.intra_bw > 0) out.emplace_back("intra_bw", p.intra_bw);  // set by a simulated machine only, never fitted
    return out;
}

model::MachineParams params_from_keys(const std::vector<std::pair<std::string, double>>& keys, unsigned* found) {
    model::MachineParams p;
    const std::pair<const char*, std::pair<double*, unsigned>> fields[] = {
        {"copy_bw", {&p.copy_bw, model::kCopyBw}}, {"intra_latency", {&p.intra_latency, model::kIntraLatency}},
        {"gamma", {&p.gamma, model::kGamma}},       {"alpha", {&p.alpha, model::kAlpha}},
        {"net_bw", {&p.net_bw, model::kNetBw}},     {"stream_gain", {&p.stream_gain, model::kStreamGain}},
        {"intra_bw", {&p.intra_bw, 0u}}};
    if (found != nullptr) *found = 0;
    for (const auto& [key, value] : keys) {
        if (!std::isfinite(value) || value <= 0) continue;
        for (const auto& [name, target] : fields)
            if (key == name) {
                *target.first = value;
                if (found != nullptr) *found |= target.second;
            }
    }
    return p;
}

Result build(const Request& request) {
    Result result;
    // (1) Fit the model to every measurement: each candidate's median and the native median beside it.
    std::vector<model::Sample> samples;
    for (const Measurement& m : request.measured) {
        const model::Shape shape{m.bytes, static_cast<int>(m.ppn), static_cast<int>(m.nodes)};
        if (m.median_us > 0) samples.push_back({shape, m.decision, request.flavor, m.median_us * 1e-6});
        if (m.native_us > 0) samples.push_back({shape, native_decision(), request.flavor, m.native_us * 1e-6});
    }
    model::FitOptions options;
    options.probed = request.probed;
    const model::FitResult fitted = model::fit(samples, request.probed_params, options);
    result.params = fitted.params;
    result.median_error = model::median_relative_error(fitted.params, samples);

    // (2) The layouts to decide: the measured ones from the measurements, the others from the model.
    std::set<std::pair<uint32_t, uint32_t>> measured_layouts, layouts;
    std::set<uint32_t> ppns(request.predict_ppn.begin(), request.predict_ppn.end());
    std::set<uint32_t> nodes_list(request.predict_nodes.begin(), request.predict_nodes.end());
    uint32_t most_nodes = 0;
    for (const Measurement& m : request.measured) {
        measured_layouts.emplace(m.nodes, m.ppn);
        ppns.insert(m.ppn);
        nodes_list.insert(m.nodes);
        most_nodes = std::max(most_nodes, m.nodes);
    }
    // The network's parameters are fitted only from measurements across nodes: a table tuned on one node does not
    // guess for several (the default table decides there), and predictions reach out from the measured node count.
    if (most_nodes < 2) {
        nodes_list = {1};
        result.notes.emplace_back("measured on one node: the table decides one-node calls only (other layouts: "
                                  "no rule, so the library's allreduce; tune across nodes to cover them)");
    }
    for (uint32_t n : nodes_list)
        for (uint32_t p : ppns) layouts.emplace(n, p);

    // The measured layout of the same ppn whose decisions carry to `nodes` (the nearest node count in log scale,
    // within kCarryReach): both across nodes, so the same kind of network carries the same kind of decision. Not
    // from two ranks alone (2 nodes x 1): every allreduce of two ranks is one exchange, so what wins there says
    // nothing about three or more (the segmented path measured very differently there and on 3 and 4 nodes:
    // docs/tuning.md "arshim tune").
    auto carried_from = [&](uint32_t nodes, uint32_t ppn) -> uint32_t {
        uint32_t from = 0;
        double distance = 0;
        if (nodes < 2) return 0;
        for (const auto& [n, p] : measured_layouts) {
            if (p != ppn || n < 2 || n * p < 3 || nodes > n * kCarryReach || n > nodes * kCarryReach) continue;
            const double d = std::fabs(std::log2(static_cast<double>(n) / nodes));
            if (from == 0 || d < distance) from = n, distance = d;
        }
        return from;
    };

    // Measured layouts first: the layouts carried from them look their decisions up.
    std::vector<std::pair<uint32_t, uint32_t>> order;
    for (const auto& layout : layouts)
        if (measured_layouts.count(layout)) order.push_back(layout);
    for (const auto& layout : layouts)
        if (!measured_layouts.count(layout)) order.push_back(layout);

    std::vector<PointDecision> points;
    for (const auto& [nodes, ppn] : order) {
        const bool measured_layout = measured_layouts.count({nodes, ppn}) != 0;
        const uint32_t carry_nodes = measured_layout ? 0 : carried_from(nodes, ppn);
        // The model alone weighs the candidates that serve the ppn; a measured layout, and a carried decision
        // calibrated on one, weigh everything measured there, the whole message as one MPI_Iallreduce included at
        // several ranks per node (serves() keeps it from the model alone): measured, its cost is known, not guessed.
        // On 3 nodes x 2, MPICH's non-blocking allreduce over all ranks crosses nodes in 2 rounds where the node
        // roots' blocking one takes 3.
        const std::vector<Decision> model_options = candidates_for(request.measured, ppn);
        const std::vector<Decision> options =
            measured_layout ? measured_options(request.measured, nodes, ppn) : model_options;
        const std::vector<Decision> carry_options =
            carry_nodes != 0 ? measured_options(request.measured, carry_nodes, ppn) : model_options;
        for (const auto& [lo, hi] : byte_ranges(request.max_bytes)) {
            PointDecision point;
            point.nodes = nodes;
            point.ppn = ppn;
            point.lo = lo;
            point.hi = hi;
            // Measured: each candidate's times summed over the sizes measured in this range; the winner must beat
            // native beyond the noise (its upper quartile below native's lower quartile, summed alike) in a launch,
            // and be faster than native in every launch that measured the range (confirmed_win).
            std::vector<Tally> tallies(options.size());
            if (measured_layout)
                for (const Measurement& m : request.measured) {
                    if (m.nodes != nodes || m.ppn != ppn || m.bytes < lo || m.bytes >= hi) continue;
                    for (std::size_t i = 0; i < options.size(); ++i)
                        if (same_action(options[i], m.decision)) {
                            Tally& t = tallies[i];
                            t.p25 += m.p25_us, t.median += m.median_us, t.p75 += m.p75_us;
                            t.native_p25 += m.native_p25_us, t.native += m.native_us, t.native_p75 += m.native_p75_us;
                            ++t.sizes;
                        }
                }
            int best = -1;
            for (std::size_t i = 1; i < options.size(); ++i) {
                const Tally& t = tallies[i];
                if (t.sizes == 0 || !confirmed_win(request.measured, nodes, ppn, lo, hi, options[i])) continue;
                if (best < 0 || t.median / t.native < tallies[best].median / tallies[best].native)
                    best = static_cast<int>(i);
            }
            const bool any_measured = std::any_of(tallies.begin() + 1, tallies.end(), [](const Tally& t) {
                return t.sizes > 0;
            });
            const model::Shape shape{middle(lo, hi), static_cast<int>(ppn), static_cast<int>(nodes)};
            const double native_predicted = model::predict(fitted.params, shape, options[0], request.flavor);
            if (any_measured) {
                point.evidence = EvidenceKind::measured;
                const Tally& t = tallies[best < 0 ? 0 : best];
                const Tally& any = *std::find_if(tallies.begin() + 1, tallies.end(), [](const Tally& x) {
                    return x.sizes > 0;
                });
                point.decision = best < 0 ? options[0] : options[best];
                point.native_us = (best < 0 ? any.native : t.native) / std::max(1, (best < 0 ? any : t).sizes);
                point.measured_us = best < 0 ? point.native_us : t.median / t.sizes;
                point.predicted_us = model::predict(fitted.params, shape, point.decision, request.flavor) * 1e6;
                ++result.points_measured;
            } else if (measured_layout) {
                // A size between the measured ones on the measured layout: the measured decision of the nearest
                // measured size (in log scale) -- the measurement is closer to the truth than the model.
                point.evidence = EvidenceKind::predicted;
                point.decision = nearest_measured(request.measured, nodes, ppn, shape.bytes, options);
                point.predicted_us = model::predict(fitted.params, shape, point.decision, request.flavor) * 1e6;
                point.native_us = native_predicted * 1e6;
                ++result.points_predicted;
            } else if (carry_nodes != 0) {
                // A node count near a measured one, same ppn: the measured layout's decision for this bucket. The
                // model's extrapolation across node counts is the weak part (its fitted parameters trade off against
                // each other); what won across 2 nodes is the better guess for 3 or 4 (docs/tuning.md) -- unless
                // the model, calibrated on the measured layout (each option's measured / predicted time there),
                // puts another option measured there ahead at this node count by more than its margin: a
                // structural change the model knows, such as the libraries' fold on a node count that is not a
                // power of two, which ARShim's inter-node ring avoids.
                const auto from = std::find_if(points.begin(), points.end(), [&](const PointDecision& q) {
                    return q.nodes == carry_nodes && q.ppn == point.ppn && q.lo == point.lo;
                });
                point.evidence = EvidenceKind::predicted;
                point.decision = from != points.end() ? from->decision : options[0];
                // A calibration describes the algorithms run where it was measured. Where the multi-leader path's
                // inter-node step is another one here (ARShim's ring on 3 nodes, the library's allreduce on 2, which
                // under Open MPI is slow between two leaders), nothing measured says how the options compare: the
                // rules after the table decide. (Carried, Open MPI's segmented decisions from 2 x 2 ran well behind
                // the best on 3 x 2, where two leaders on the ring were close to it:
                // docs/tuning.md "The goal benchmark on the fixed rig".)
                const uint32_t here_nodes = nodes, here_ppn = ppn;  // (a lambda cannot capture a structured binding)
                if (std::any_of(carry_options.begin(), carry_options.end(), [&](const Decision& d) {
                        return internode_step_changes(d, carry_nodes, here_nodes, here_ppn, shape.bytes);
                    })) {
                    ++result.points_deferred;
                    continue;
                }
                const std::vector<double> scale = corrections(request.measured, fitted.params, request.flavor,
                                                              carry_nodes, ppn, shape.bytes, carry_options);
                auto calibrated = [&](std::size_t i) {
                    return scale[i] * model::predict(fitted.params, shape, carry_options[i], request.flavor);
                };
                std::size_t carried = 0;
                while (carried < carry_options.size() && !same_action(carry_options[carried], point.decision))
                    ++carried;
                const double carried_t = carried < carry_options.size() ? calibrated(carried) : std::nan("");
                double best_t = carried_t;
                for (std::size_t i = 0; std::isfinite(carried_t) && i < carry_options.size(); ++i) {
                    const double t = calibrated(i);
                    if (i != carried && sensible_at(carry_options[i], shape.bytes) && std::isfinite(t) &&
                        t < kPredictedMargin * carried_t && t < best_t)
                        point.decision = carry_options[i], best_t = t;
                }
                point.predicted_us = model::predict(fitted.params, shape, point.decision, request.flavor) * 1e6;
                point.native_us = native_predicted * 1e6;
                // A carried decision is a rule only when it is a positive one the model does not contradict here.
                // The library's allreduce carried means only that nothing beat it on the measured layout, and an
                // ARShim path the uncalibrated model puts behind the library at this node count is a structural
                // change the calibration hid (Open MPI's non-blocking allreduce, faster than the library's on 2 x 2
                // at 8 B and slower on 3 x 2: docs/tuning.md "arshim tune"). Neither is evidence: the rules after the
                // table decide, as where the model alone sees no win (docs/tuning.md "The 10 Gbit/s half").
                if (point.decision.path() == vocab::kLibraryPath || point.predicted_us > point.native_us) {
                    ++result.points_deferred;
                    continue;
                }
                ++result.points_predicted;
            } else {
                // Predicted: the fastest modelled candidate, when it beats native by the model's margin. Where the
                // model sees no such win the table has no rule: the model cannot know how far the library's own
                // algorithms fall short of it, so the rules after the table (the built-in ones, under
                // ARSHIM_POLICY_MODE=prepend) decide there.
                int chosen = 0;
                double chosen_t = native_predicted;
                for (std::size_t i = 1; i < model_options.size(); ++i) {
                    if (!sensible_at(model_options[i], shape.bytes)) continue;
                    const double t = model::predict(fitted.params, shape, model_options[i], request.flavor);
                    if (std::isfinite(t) && t < chosen_t && t < kPredictedMargin * native_predicted)
                        chosen = static_cast<int>(i), chosen_t = t;
                }
                if (chosen == 0) {
                    ++result.points_deferred;
                    continue;
                }
                point.evidence = EvidenceKind::predicted;
                point.decision = model_options[chosen];
                point.predicted_us = chosen_t * 1e6;
                point.native_us = native_predicted * 1e6;
                ++result.points_predicted;
            }
            points.push_back(point);
        }
    }

    const std::vector<MergedRule> rules = merge_points(points);
    result.rules = static_cast<int>(rules.size());
    result.toml = render_rules(rules, request.origin, params_to_keys(fitted.params));
    char line[200];
    std::snprintf(line, sizeof line,
                  "model: median prediction error %.0f%% over %zu timings; %d points measured, %d predicted, %d left "
                  "to the rules after the table; %d rules",
                  100 * result.median_error, samples.size(), result.points_measured, result.points_predicted,
                  result.points_deferred, result.rules);
    result.notes.emplace_back(line);
    return result;
}

}  // namespace arshim::policy::tuned
