// `arshim-policy tune-table`: the arithmetic half of `arshim tune` (tools/tune/arshim_tune.py runs the jobs and
// hands over what they measured as JSON; docs/tuning.md "arshim tune"). Fits the model, decides, writes the table.
#include "tools/policy/tune_table_cli.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "policy/rules.h"
#include "policy/text.h"
#include "policy/tuned_table.h"

namespace arshim::policy {

namespace {

using nlohmann::json;

Decision decision_of(const json& m) {
    Path path = Path::native;
    if (!parse_path(m.at("path").get<std::string>(), &path)) throw std::runtime_error("unknown path " + m.at("path").dump());
    Decision d = decision_for(path);
    if (path == Path::multileader) {
        auto& p = d.get<MultileaderParams>();
        p.leaders = m.value("leaders", 1u);
        p.pipeline_k = m.value("pipeline_k", 1u);
    } else if (path == Path::pipelined) {
        auto& p = d.get<PipelinedParams>();
        p.segment_bytes = m.value("segment_bytes", uint64_t{0});
        p.window = m.value("window", 8u);
        // segments = 1 with no segment size: the whole message as one non-blocking allreduce (the tuner's small sizes)
        p.segments = p.segment_bytes == 0 ? m.value("segments", 0u) : 0;
    }
    return d;
}

tuned::Request read_request(const std::string& file) {
    // A bounded regular file (a FIFO or a device planted at the name is refused, not read), like a policy file.
    std::string text, problem;
    if (!read_regular_file(file, uint64_t{256} << 20, &text, &problem)) throw std::runtime_error(problem);
    const json j = json::parse(text, nullptr, true, false);
    tuned::Request r;
    if (!parse_flavor(j.at("flavor").get<std::string>(), &r.flavor)) throw std::runtime_error("unknown flavor");
    r.max_bytes = j.value("max_bytes", r.max_bytes);
    r.predict_nodes = j.value("predict_nodes", std::vector<uint32_t>{});
    r.predict_ppn = j.value("predict_ppn", std::vector<uint32_t>{});
    // Machine parameters the probe measured directly ({"name": value}, SI units), if any.
    std::vector<std::pair<std::string, double>> probed;
    const json params = j.value("params", json::object());
    for (const auto& [key, value] : params.items())
        if (value.is_number()) probed.emplace_back(key, value.get<double>());
    r.probed_params = tuned::params_from_keys(probed, &r.probed);
    const json origin = j.value("origin", json::object());
    for (const auto& [key, value] : origin.items())
        r.origin.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
    for (const json& m : j.at("measurements")) {
        tuned::Measurement x;
        x.nodes = m.at("nodes").get<uint32_t>();
        x.ppn = m.at("ppn").get<uint32_t>();
        x.bytes = m.at("bytes").get<uint64_t>();
        x.decision = decision_of(m);
        x.p25_us = m.at("p25").get<double>();
        x.median_us = m.at("median").get<double>();
        x.p75_us = m.at("p75").get<double>();
        x.native_p25_us = m.at("native_p25").get<double>();
        x.native_us = m.at("native").get<double>();
        x.native_p75_us = m.at("native_p75").get<double>();
        const int64_t launch_round = m.value("round", int64_t{0});  // 1: the tuner's confirming launch (tuned_table.h)
        if (launch_round != 0 && launch_round != 1) throw std::runtime_error("a measurement's round is not 0 or 1");
        x.launch_round = static_cast<uint32_t>(launch_round);
        if (x.nodes == 0 || x.ppn == 0 || !(x.median_us > 0) || !(x.native_us > 0))
            throw std::runtime_error("a measurement with no layout or no time");
        r.measured.push_back(x);
    }
    if (r.measured.empty()) throw std::runtime_error("no measurements");
    return r;
}

}  // namespace

int run_tune_table(const std::string& samples_file, bool crossovers) {
    tuned::Request request;
    try {
        request = read_request(samples_file);
    } catch (const std::exception& e) {
        std::cerr << "arshim-policy tune-table: " << samples_file << ": " << e.what() << "\n";
        return 1;
    }
    if (crossovers) {
        // Where the model says the ranking changes, per measured layout: the tuner's next sizes.
        tuned::Result fitted = tuned::build(request);
        json out;
        out["median_error"] = fitted.median_error;
        for (const auto& [key, value] : tuned::params_to_keys(fitted.params)) out["params"][key] = value;
        out["crossovers"] = json::array();
        std::set<std::pair<uint32_t, uint32_t>> layouts;
        for (const auto& m : request.measured) layouts.emplace(m.nodes, m.ppn);
        for (const auto& [nodes, ppn] : layouts) {
            for (uint64_t b : tuned::crossover_sizes(fitted.params, request.flavor, nodes, ppn,
                                                     tuned::candidates_for(request.measured, ppn), 8, request.max_bytes))
                out["crossovers"].push_back({{"nodes", nodes}, {"ppn", ppn}, {"bytes", b}, {"from", "model"}});
            for (uint64_t b : tuned::measured_changes(request.measured, nodes, ppn))
                out["crossovers"].push_back({{"nodes", nodes}, {"ppn", ppn}, {"bytes", b}, {"from", "measured"}});
        }
        std::cout << out.dump() << "\n";
        return 0;
    }
    const tuned::Result result = tuned::build(request);
    for (const std::string& note : result.notes) std::cerr << "arshim-policy tune-table: " << note << "\n";
    // The table must read back cleanly: a tuner that writes a table the shim rejects is worse than none.
    const Table check = read_table(result.toml, "tuned table");
    if (!check.problems.empty()) {
        std::cerr << "arshim-policy tune-table: internal error, the table does not read back: " << check.problems.front()
                  << "\n";
        return 1;
    }
    std::cout << result.toml;
    return 0;
}

}  // namespace arshim::policy
