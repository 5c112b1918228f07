// `arshim-policy predict`: what the cost model (policy/cost_model.h) predicts for a list of call shapes, and for which
// decisions: the library's own allreduce, the built-in table's choice, a policy file's choice, and every path as
// ARSHIM_PATH forces it. One process answers a whole sweep (`arshim simulate` asks once per run for its model_us
// column, docs/scale.md). The decisions come from the same policy library the shim uses.
#include "tools/policy/predict_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "policy/config.h"
#include "policy/cost_model.h"
#include "policy/policy.h"
#include "policy/rules.h"
#include "policy/text.h"
#include "policy/tuned_table.h"

extern char** environ;

namespace arshim::policy {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxShapesBytes = uint64_t{64} << 20;
constexpr std::size_t kMaxShapes = 1u << 20;

struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ShapeIn {
    uint32_t nodes = 1, ppn = 1;
    uint64_t bytes = 0;
    std::vector<std::pair<std::string, double>> params;  // this shape's own machine parameters
    std::vector<model::MachineParams::SizeSection> network;  // its network's corrections by message size
};

// "network": [[above, lat, bw, overhead, overhead_per_byte], ...], ascending bounds (arshim simulate --network).
std::vector<model::MachineParams::SizeSection> network_of(const json& list) {
    if (!list.is_array() || list.size() > static_cast<std::size_t>(model::MachineParams::kMaxSizeSections))
        throw BadInput("--shapes: network must be a list of at most 64 sections");
    std::vector<model::MachineParams::SizeSection> out;
    for (const json& row : list) {
        if (!row.is_array() || row.size() != 5 ||
            !std::all_of(row.begin(), row.end(), [](const json& v) { return v.is_number(); }))
            throw BadInput("--shapes: a network section is [above, lat, bw, overhead, overhead_per_byte]");
        model::MachineParams::SizeSection s{row[0].get<double>(), row[1].get<double>(), row[2].get<double>(),
                                            row[3].get<double>(), row[4].get<double>()};
        if (!std::isfinite(s.above) || s.above < 0 || !std::isfinite(s.lat) || s.lat < 0 || !std::isfinite(s.bw) ||
            s.bw <= 0 || !std::isfinite(s.overhead) || s.overhead < 0 || !std::isfinite(s.overhead_per_byte) ||
            s.overhead_per_byte < 0 || (!out.empty() && s.above <= out.back().above))
            throw BadInput("--shapes: network sections need ascending bounds of at least 0, factors at least 0 "
                           "(bandwidth above 0) and overheads of at least 0");
        out.push_back(s);
    }
    return out;
}

// Text from the command line or a file in a message: one line, escaped, between single quotes.
std::string quote(const std::string& text) { return "'" + printable(text, 60) + "'"; }

// Every machine parameter, the optional ones (listed only when set) included.
model::MachineParams every_param() {
    model::MachineParams m;
    m.intra_bw = 1;
    return m;
}

bool known_param(const std::string& name) {
    for (const auto& [key, value] : tuned::params_to_keys(every_param()))
        if (key == name) return true;
    return false;
}

std::string param_names() {
    std::string out;
    for (const auto& [key, value] : tuned::params_to_keys(every_param()))
        out += (out.empty() ? "" : ", ") + key;
    return out;
}

// A machine parameter as a caller gives it: a known [model] name and a positive, finite value.
std::pair<std::string, double> checked_param(const std::string& name, double value) {
    if (!known_param(name)) throw BadInput("unknown machine parameter " + quote(name) + "; known: " + param_names());
    if (!std::isfinite(value) || value <= 0) throw BadInput("machine parameter " + name + " must be a positive number");
    return {name, value};
}

std::pair<std::string, double> parse_param(const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos) throw BadInput("--param " + quote(text) + ": write NAME=VALUE");
    const std::string name = text.substr(0, eq), value = text.substr(eq + 1);
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != value.size()) throw BadInput("--param " + quote(text) + ": not a number");
    return checked_param(name, v);
}

uint32_t count_of(const json& j, const char* what, uint64_t limit) {
    if (!j.is_number_integer() && !j.is_number_unsigned()) throw BadInput(std::string(what) + ": not a whole number");
    const auto v = j.get<int64_t>();
    if (v < 1 || static_cast<uint64_t>(v) > limit) throw BadInput(std::string(what) + " out of range");
    return static_cast<uint32_t>(v);
}

std::vector<ShapeIn> shapes_from_layouts(const PredictArgs& args) {
    std::vector<ShapeIn> out;
    std::vector<uint64_t> sizes;
    std::stringstream list(args.sizes);
    for (std::string item; std::getline(list, item, ',');) {
        int64_t bytes = 0;
        if (!parse_size(item, &bytes) || bytes < 0) throw BadInput("--sizes: " + quote(item) + " is not a size");
        sizes.push_back(static_cast<uint64_t>(bytes));
    }
    if (sizes.empty()) throw BadInput("--sizes: give at least one size, e.g. 8,64K,4M");
    for (const std::string& layout : args.layouts) {
        const auto x = layout.find('x');
        unsigned long long nodes = 0, ppn = 0;
        char end = 0;
        if (x == std::string::npos ||
            std::sscanf(layout.c_str(), "%llux%llu%c", &nodes, &ppn, &end) != 2 || nodes < 1 || ppn < 1 ||
            nodes > 0xFFFFFFFFull || ppn > 0xFFFFFFFFull || nodes * ppn > 0xFFFFFFFFull)
            throw BadInput("--layout " + quote(layout) + ": write NODESxPPN, e.g. 64x16");
        for (uint64_t bytes : sizes)
            out.push_back({static_cast<uint32_t>(nodes), static_cast<uint32_t>(ppn), bytes, {}, {}});
    }
    return out;
}

// {"shapes": [{"nodes": N, "ppn": P, "bytes": B, "params": {"alpha": 1e-6, ...}}, ...]}
std::vector<ShapeIn> shapes_from_file(const std::string& file) {
    std::string text, problem;
    if (file == "-") {
        std::string chunk(1 << 16, '\0');
        while (std::cin.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || std::cin.gcount() > 0) {
            text.append(chunk.data(), static_cast<std::size_t>(std::cin.gcount()));
            if (text.size() > kMaxShapesBytes) throw BadInput("--shapes -: more than 64 MiB");
        }
    } else if (!read_regular_file(file, kMaxShapesBytes, &text, &problem)) {
        throw BadInput("--shapes " + printable(file, 200) + ": " + problem);
    }
    const json j = json::parse(text, nullptr, false, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("shapes") || !j["shapes"].is_array())
        throw BadInput("--shapes: not a JSON object with a \"shapes\" list");
    if (j["shapes"].size() > kMaxShapes) throw BadInput("--shapes: more than 1048576 shapes");
    std::vector<ShapeIn> out;
    for (const json& s : j["shapes"]) {
        if (!s.is_object() || !s.contains("nodes") || !s.contains("ppn") || !s.contains("bytes"))
            throw BadInput("--shapes: every shape needs nodes, ppn and bytes");
        ShapeIn in;
        in.nodes = count_of(s["nodes"], "nodes", 0xFFFFFFFFull);
        in.ppn = count_of(s["ppn"], "ppn", 0xFFFFFFFFull);
        if (uint64_t{in.nodes} * in.ppn > 0xFFFFFFFFull)
            throw BadInput("--shapes: nodes x ppn does not fit a communicator");
        if (!s["bytes"].is_number_unsigned() && !(s["bytes"].is_number_integer() && s["bytes"].get<int64_t>() >= 0))
            throw BadInput("--shapes: bytes must be a whole number of at least 0");
        in.bytes = s["bytes"].get<uint64_t>();
        if (s.contains("params")) {
            if (!s["params"].is_object()) throw BadInput("--shapes: params must be an object of numbers");
            for (const auto& [key, value] : s["params"].items()) {
                if (!value.is_number())
                    throw BadInput("--shapes: machine parameter " + quote(key) + " is not a number");
                in.params.push_back(checked_param(key, value.get<double>()));
            }
        }
        if (s.contains("network")) in.network = network_of(s["network"]);
        out.push_back(std::move(in));
    }
    return out;
}

json params_json(const model::MachineParams& m) {
    json out = json::object();
    for (const auto& [key, value] : tuned::params_to_keys(m)) out[key] = value;
    return out;
}

json us(double seconds) { return std::isfinite(seconds) ? json(seconds * 1e6) : json(nullptr); }

// The effective policies, loaded once per deciding flavor: the built-in table, the file (as the shim would use it,
// ARSHIM_POLICY_MODE included), and the built-in table under ARSHIM_PATH=<path> for every path.
struct Policies {
    std::shared_ptr<const Policy> builtin, file;
    std::vector<std::shared_ptr<const Policy>> forced;  // index: Path
};

Policies load_policies(const EnvPairs& env, const std::string* file_text, const std::string& file_name,
                       const std::string& flavor, json* problems, bool* file_used) {
    std::vector<std::string> config_problems;
    EnvPairs plain;
    for (const auto& pair : env)
        if (pair.first != "ARSHIM_PATH") plain.push_back(pair);
    const Config cfg = Config::from_pairs(plain, &config_problems);
    Policies p;
    p.builtin = load_policy(cfg, nullptr, "", flavor, false).policy;
    if (file_text != nullptr) {
        LoadResult loaded = load_policy(cfg, file_text, file_name, flavor, false);
        for (const std::string& problem : loaded.problems) problems->push_back(problem);
        *file_used = loaded.file_used;
        p.file = loaded.policy;
    }
    for (std::size_t path = 0; path < vocab::kPathCount; ++path) {
        EnvPairs forced = plain;
        forced.emplace_back("ARSHIM_PATH", path_name(static_cast<Path>(path)));
        const Config forced_cfg = Config::from_pairs(forced, &config_problems);
        p.forced.push_back(load_policy(forced_cfg, nullptr, "", flavor, false).policy);
    }
    for (const std::string& problem : config_problems) problems->push_back(problem);
    return p;
}

json decision_json(const Policy& policy, const Decision& d, const model::MachineParams& m, const model::Shape& s,
                   Flavor cost) {
    return {{"decision", describe_decision(d)}, {"rule", policy.describe_rule(d.rule)},
            {"us", us(model::predict(m, s, d, cost))}};
}

}  // namespace

int run_predict(const PredictArgs& args) {
    try {
        if (args.layouts.empty() == args.shapes_file.empty())
            throw BadInput("give --layout (with --sizes) or --shapes, not both");
        if (!args.layouts.empty() && args.sizes.empty()) throw BadInput("--layout needs --sizes");
        std::vector<std::pair<std::string, double>> global;
        for (const std::string& p : args.params) global.push_back(parse_param(p));
        const std::vector<ShapeIn> shapes = args.layouts.empty() ? shapes_from_file(args.shapes_file)
                                                                 : shapes_from_layouts(args);

        // The settings the shim would read (ARSHIM_* of this environment) and the policy file, read by the shim's
        // rules (a regular file, at most ARSHIM_POLICY_MAX_BYTES).
        const EnvPairs env = Config::pairs_from_environ(environ);
        std::vector<std::string> ignored;
        const Config cfg = Config::from_pairs(env, &ignored);
        const std::string file = args.policy.empty() ? cfg.text(OptionId::policy) : args.policy;
        std::string file_text, problem;
        const auto max_bytes = static_cast<uint64_t>(cfg.number(OptionId::policy_max_bytes));
        if (!file.empty() && !read_regular_file(file, max_bytes, &file_text, &problem))
            throw BadInput("policy file " + printable(file, 200) + ": " + problem);

        // Machine parameters: the model's defaults, then the table's [model], then --param, then each shape's own.
        std::vector<std::pair<std::string, double>> base;
        std::string params_from = "defaults";
        if (!file.empty()) {
            const Table table = read_table(file_text, file, false);
            if (!table.model.empty()) {
                base = table.model;
                params_from = printable(file, 200) + " [model]";
            }
        }
        if (!global.empty()) params_from += ", then --param";
        if (std::any_of(shapes.begin(), shapes.end(), [](const ShapeIn& s) { return !s.params.empty(); }))
            params_from += ", then each shape's params";
        base.insert(base.end(), global.begin(), global.end());

        std::vector<Flavor> costed;
        const std::vector<std::string> flavor_names =
            args.flavors.empty() ? std::vector<std::string>{"mpich", "openmpi"} : args.flavors;
        for (const std::string& name : flavor_names) {
            Flavor f = Flavor::mpich;
            if (!parse_flavor(name, &f)) throw BadInput("--mpi " + quote(name) + ": mpich or openmpi");
            costed.push_back(f);
        }
        Flavor decide_as = Flavor::mpich;
        if (!args.decide_as.empty() && !parse_flavor(args.decide_as, &decide_as))
            throw BadInput("--decide-as " + printable(args.decide_as, 60, true) + ": mpich or openmpi");

        json problems = json::array();
        bool file_used = false;
        std::map<Flavor, Policies> policies;
        for (Flavor f : costed) {
            const Flavor deciding = args.decide_as.empty() ? f : decide_as;
            if (policies.count(deciding) == 0)
                policies[deciding] = load_policies(env, file.empty() ? nullptr : &file_text, file,
                                                   flavor_name(deciding), &problems, &file_used);
        }

        json unique = json::array();  // each flavor and forced path reads the same settings: say each problem once
        for (const json& p : problems)
            if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
        json out = {{"params_from", params_from}, {"builtin", kBuiltinPolicyName}, {"problems", unique}};
        if (!file.empty())
            out["policy"] = {{"file", file}, {"used", file_used}, {"mode", cfg.text(OptionId::policy_mode)},
                             {"source", policies.begin()->second.file->source()}};
        json predictions = json::array();
        for (const ShapeIn& in : shapes) {
            std::vector<std::pair<std::string, double>> keys = base;
            keys.insert(keys.end(), in.params.begin(), in.params.end());
            model::MachineParams m = tuned::params_from_keys(keys);
            m.size_sections = static_cast<int>(in.network.size());
            std::copy(in.network.begin(), in.network.end(), m.sections);
            const model::Shape shape{in.bytes, static_cast<int>(in.ppn), static_cast<int>(in.nodes)};
            CallFacts facts;
            facts.bytes = in.bytes;
            facts.ppn = in.ppn;
            facts.nodes = in.nodes;
            facts.comm_size = in.nodes * in.ppn;
            facts.dclass = DtypeClass::floating;
            facts.op = vocab::Op::sum;
            json flavors = json::object();
            for (Flavor f : costed) {
                const Flavor deciding = args.decide_as.empty() ? f : decide_as;
                const Policies& p = policies.at(deciding);
                json entry = {{"decided_as", flavor_name(deciding)},
                              {"native_us", us(model::native_time(m, shape, f))},
                              {"builtin", decision_json(*p.builtin, p.builtin->decide(facts), m, shape, f)}};
                if (p.file) entry["policy"] = decision_json(*p.file, p.file->decide(facts), m, shape, f);
                json paths = json::object();
                for (std::size_t path = 0; path < p.forced.size(); ++path)
                    paths[path_name(static_cast<Path>(path))] =
                        decision_json(*p.forced[path], p.forced[path]->decide(facts), m, shape, f);
                entry["paths"] = paths;
                flavors[flavor_name(f)] = entry;
            }
            json prediction = {{"nodes", in.nodes}, {"ppn", in.ppn}, {"bytes", in.bytes},
                               {"params", params_json(m)}, {"flavors", flavors}};
            if (!in.network.empty()) prediction["network_sections"] = in.network.size();
            predictions.push_back(prediction);
        }
        out["predictions"] = predictions;
        std::cout << out.dump() << "\n";
        return 0;
    } catch (const BadInput& e) {
        std::cerr << "arshim-policy predict: " << e.what() << "\n";
        return 2;
    } catch (const json::exception& e) {
        std::cerr << "arshim-policy predict: --shapes: " << e.what() << "\n";
        return 2;
    }
}

}  // namespace arshim::policy
