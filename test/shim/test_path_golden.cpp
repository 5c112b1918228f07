// What the tuner makes of every path, pinned (issue 55 item 3): the first- and second-stage candidates
// (policy/tune_candidates.h) for a grid of keys -- size, node count, ranks per node (uniform and uneven), flavor,
// datatype and op (through the router's order_sensitive, shim/core/router.h), tuning mode -- and a fixed list of the
// policy's choices covering every path and parameter kind; and `arshim tune`'s view of each decision
// (policy/tuned_table.h: serves, sensible_at, internode_step_changes). The listing is compared line by line with
// test/shim/golden/path_applicability.txt, captured from the code before the paths' applicability moved into their
// specs, so that move and any later one keeps every answer. A change of behaviour that is meant regenerates it:
// ARSHIM_WRITE_GOLDEN=1 test-shim-core "[golden]" (then review the diff).
#include "test/support/catch.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "policy/tune_candidates.h"
#include "policy/tuned_table.h"
#include "shim/core/router.h"

using namespace arshim;
using policy::Decision;
using policy::Path;

namespace {

const std::string kGolden = std::string(ARSHIM_SOURCE_ROOT) + "/test/shim/golden/path_applicability.txt";

// Decisions by id, in order of first appearance: the policy's choices first, so the ids of the listing's choices stay
// put when a candidate changes.
struct Ids {
    std::map<std::string, int> by_text;
    std::vector<std::string> texts;
    std::string operator()(const Decision& d) {
        std::string text = policy::describe_decision(d) + " rule=" + std::to_string(d.rule) +
                           (d.measured ? " measured" : "");
        auto [it, added] = by_text.emplace(text, static_cast<int>(texts.size()));
        if (added) texts.push_back(text);
        return "D" + std::to_string(it->second);
    }
};

Decision with(Path path, policy::KernelChoice kernel = policy::KernelChoice::native, int rule = -1,
              bool measured = false) {
    Decision d = policy::decision_for(path);
    d.kernel = kernel;
    d.rule = rule;
    d.measured = measured;
    return d;
}

Decision pipelined(uint64_t segment_bytes, uint32_t segments, uint32_t window,
                   policy::KernelChoice kernel = policy::KernelChoice::native, int rule = -1) {
    Decision d = with(Path::pipelined, kernel, rule);
    auto& p = d.get<policy::PipelinedParams>();
    p.segment_bytes = segment_bytes;
    p.segments = segments;
    p.window = window;
    return d;
}

Decision multileader(uint32_t leaders, uint32_t pipeline_k, policy::KernelChoice kernel = policy::KernelChoice::native,
                     int rule = -1, bool measured = false) {
    Decision d = with(Path::multileader, kernel, rule, measured);
    d.get<policy::MultileaderParams>().leaders = leaders;
    d.get<policy::MultileaderParams>().pipeline_k = pipeline_k;
    return d;
}

// The policy's choices: every path, each parameter kind the candidates and the tuned table look at, both kernels,
// rule indexes and the measured flag (candidates copy or drop them).
std::vector<Decision> choices() {
    using policy::KernelChoice;
    std::vector<Decision> out{
        with(Path::native),
        with(Path::native, KernelChoice::simd, 3, true),
        pipelined(uint64_t{1} << 20, 0, 8),
        pipelined(64 * 1024, 0, 4, KernelChoice::simd, 5),
        pipelined(16 * 1024, 0, 1),
        pipelined(0, 1, 8),  // the whole message as one MPI_Iallreduce (the tuner's "pipelined-one")
        pipelined(0, 16, 2),
        multileader(1, 1),
        multileader(2, 2, KernelChoice::native, 2),
        multileader(4, 1, KernelChoice::simd, 7),
        multileader(8, 4),
        multileader(3, 1, KernelChoice::native, 1, true),
        with(Path::sharp, KernelChoice::native, 4),
        with(Path::reproducible, KernelChoice::native, 0),
        with(Path::latency, KernelChoice::simd, 6),
    };
    Decision sat = with(Path::sharp);
    sat.get<policy::SharpParams>().mode = policy::SharpMode::sat;
    sat.get<policy::SharpParams>().leaders = policy::SharpLeaders::socket;
    out.push_back(sat);
    Decision node = with(Path::reproducible);
    node.get<policy::ReproducibleParams>().algorithm = policy::ReproAlgorithm::node;
    node.get<policy::ReproducibleParams>().leaders = 4;
    out.push_back(node);
    return out;
}

struct Layout {
    int ppn_min, ppn_max;
};
// Every size where a candidate row or neighbour changes (16 KiB, 64 KiB, 1 MiB, the quarter's clamp).
const uint64_t kSizes[] = {8, 16384, 65536, 300000, uint64_t{1} << 20, uint64_t{8} << 20};
const int kNodes[] = {1, 2, 3};
const Layout kLayouts[] = {{1, 1}, {2, 2}, {1, 2}, {3, 4}, {8, 8}};

struct TypeOp {
    const char* name;
    vocab::DtypeClass dclass;
    kernels::Op op;
    bool complex_type, floating_values;
};
const TypeOp kTypeOps[] = {
    {"float/sum", vocab::DtypeClass::floating, kernels::Op::sum, false, true},
    {"float/max", vocab::DtypeClass::floating, kernels::Op::max, false, true},
    {"int/sum", vocab::DtypeClass::integer, kernels::Op::sum, false, false},
    {"int/band", vocab::DtypeClass::integer, kernels::Op::band, false, false},
    {"complex/prod", vocab::DtypeClass::other, kernels::Op::prod, true, true},
    {"float_int/maxloc", vocab::DtypeClass::other, kernels::Op::maxloc, false, true},
};

std::string list(Ids& ids, const Decision* out, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + ids(out[i]).substr(1);
    return s;
}

std::string listing() {
    Ids ids;
    const std::vector<Decision> chosen = choices();
    std::map<int, Decision> seen;  // every decision listed, by id
    auto id_of = [&](const Decision& d) { return std::stoi(ids(d).substr(1)); };
    for (const Decision& d : chosen) seen.emplace(id_of(d), d);
    // One line per (flavor, size, layout, choice): the candidates in each mode, for a key whose bits do not depend on
    // the order of the reduction ("exact") and for one whose do ("sensitive"). Which datatypes and ops are which is
    // the router's rule, listed once per communicator size ("order" lines).
    std::vector<std::string> lines, order_lines;
    // (ARSHIM_TUNE=off never asks: shim/modes/schedule.h eligible.)
    const policy::tune::Mode modes[] = {policy::tune::Mode::guard, policy::tune::Mode::online};
    for (const policy::Flavor flavor : {policy::Flavor::mpich, policy::Flavor::openmpi})
        for (const uint64_t bytes : kSizes)
            for (const int nodes : kNodes)
                for (const Layout& layout : kLayouts)
                    for (const Decision& c : chosen) {
                        std::ostringstream line;
                        line << "first " << policy::flavor_name(flavor) << " " << bytes << "B " << nodes << "x"
                             << layout.ppn_min << "-" << layout.ppn_max << " " << ids(c) << ":";
                        std::map<bool, std::vector<std::string>> by_order;  // per mode, for exact and sensitive keys
                        for (const TypeOp& to : kTypeOps) {
                            route::Traits t;
                            t.comm_size = layout.ppn_min + (nodes - 1) * layout.ppn_max;
                            t.dclass = to.dclass;
                            t.op = to.op;
                            t.complex_type = to.complex_type;
                            t.floating_values = to.floating_values;
                            const bool sensitive = route::order_sensitive(t);
                            if (flavor == policy::Flavor::mpich && bytes == kSizes[0] && &c == &chosen[0])
                                order_lines.push_back("order " + std::string(to.name) + " ranks=" +
                                                      std::to_string(t.comm_size) + ": " +
                                                      (sensitive ? "sensitive" : "exact"));
                            policy::tune::KeyFacts f;
                            f.bytes = bytes;
                            f.ppn_min = layout.ppn_min;
                            f.ppn_max = layout.ppn_max;
                            f.nodes = nodes;
                            f.flavor = flavor;
                            f.order_sensitive = sensitive;
                            std::vector<std::string> per_mode;
                            for (const policy::tune::Mode mode : modes) {
                                Decision out[policy::tune::kMaxCandidates];
                                const int n = policy::tune::first_stage(c, f, mode, out);
                                for (int i = 0; i < n; ++i) seen.emplace(id_of(out[i]), out[i]);
                                per_mode.push_back(list(ids, out, n));
                            }
                            // Every datatype and op of one order class must get the same candidates.
                            const auto [it, added] = by_order.emplace(sensitive, per_mode);
                            if (!added && it->second != per_mode) line << " MIXED(" << to.name << ")";
                        }
                        // A mode's list once when exact and sensitive keys get the same (online: always).
                        for (std::size_t m = 0; m < std::size(modes); ++m) {
                            const char* mode = policy::tune::kModeNames[static_cast<int>(modes[m])];
                            if (by_order.size() == 2 && by_order[false][m] == by_order[true][m])
                                line << " " << mode << "=" << by_order[false][m];
                            else
                                for (const auto& [sensitive, per_mode] : by_order)
                                    line << " " << mode << (sensitive ? "/sensitive=" : "/exact=") << per_mode[m];
                        }
                        lines.push_back(line.str());
                    }
    lines.insert(lines.end(), order_lines.begin(), order_lines.end());
    // Second stage: every decision the first stage gave as the winner.
    const std::map<int, Decision> winners = seen;
    for (const auto& [w, winner] : winners)
        for (const uint64_t bytes : {uint64_t{8}, uint64_t{1} << 20})
            for (const int nodes : {1, 2})
                for (const Layout& layout : kLayouts) {
                    policy::tune::KeyFacts f;
                    f.bytes = bytes, f.ppn_min = layout.ppn_min, f.ppn_max = layout.ppn_max, f.nodes = nodes;
                    Decision out[policy::tune::kMaxCandidates];
                    const int n = policy::tune::second_stage(winner, f, out);
                    for (int i = 0; i < n; ++i) seen.emplace(id_of(out[i]), out[i]);
                    lines.push_back("second " + std::to_string(bytes) + "B " + std::to_string(nodes) + "x" +
                                    std::to_string(layout.ppn_min) + "-" + std::to_string(layout.ppn_max) + " D" +
                                    std::to_string(w) + ": " + list(ids, out, n));
                }
    // `arshim tune`'s view: which ppn each decision serves, from which sizes it is sensible, and where its inter-node
    // step changes between node counts.
    const uint32_t ppns[] = {1, 2, 3, 4, 5, 7, 8, 9, 16};
    const uint64_t sizes[] = {0,     1,      8,      4095,   4096,        4097,          8192,
                              16383, 16384,  65535,  65536,  1u << 19,    (1u << 20) - 1, 1u << 20,
                              4u << 20, uint64_t{64} << 20, uint64_t{1} << 40};
    const uint32_t node_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
    for (const auto& [w, d] : seen) {
        std::string s = "tuned D" + std::to_string(w) + " serves ";
        for (uint32_t p : ppns) s += policy::tuned::serves(d, p) ? "1" : "0";
        s += " sensible ";
        for (uint64_t b : sizes) s += policy::tuned::sensible_at(d, b) ? "1" : "0";
        lines.push_back(s);
        int changing = 0;
        for (uint32_t from : {2u, 3u, 4u, 8u})
            for (uint32_t ppn : {1u, 2u, 4u, 8u}) {
                bool any = false;
                std::string c = "internode D" + std::to_string(w) + " from " + std::to_string(from) + "x" +
                                std::to_string(ppn) + ":";
                for (uint32_t to : node_counts) {
                    c += " ";
                    for (uint64_t b : sizes) {
                        const bool changes = policy::tuned::internode_step_changes(d, from, to, ppn, b);
                        any = any || changes;
                        c += changes ? "1" : "0";
                    }
                }
                if (any) lines.push_back(c), ++changing;
            }
        if (changing == 0) lines.push_back("internode D" + std::to_string(w) + ": never changes");
    }
    std::string text =
        "# test/shim/test_path_golden.cpp: candidates and tuned-table answers per key and decision (issue 55)\n"
        "# tuned Dn serves <a bit per ppn>, sensible <a bit per size>; internode Dn from NODESxPPN: <per node count, a "
        "bit per size>\n# ppn:";
    for (uint32_t p : ppns) text += " " + std::to_string(p);
    text += "\n# sizes:";
    for (uint64_t b : sizes) text += " " + std::to_string(b);
    text += "\n# node counts:";
    for (uint32_t n : node_counts) text += " " + std::to_string(n);
    text += "\n";
    for (std::size_t i = 0; i < ids.texts.size(); ++i) text += "D" + std::to_string(i) + " = " + ids.texts[i] + "\n";
    for (const std::string& l : lines) text += l + "\n";
    return text;
}

}  // namespace

TEST_CASE("every path's candidates and tuned-table answers match the golden listing", "[golden][tune]") {
    const std::string now = listing();
    if (const char* w = std::getenv("ARSHIM_WRITE_GOLDEN"); w != nullptr && std::string(w) == "1") {
        std::ofstream(kGolden) << now;
        WARN("wrote " << kGolden);
        return;
    }
    std::ifstream in(kGolden);
    REQUIRE(in.good());
    std::stringstream golden;
    golden << in.rdbuf();
    if (golden.str() == now) {
        SUCCEED();
        return;
    }
    // The first differing line, and the whole listing beside the test for a diff.
    std::ofstream("path_applicability.actual.txt") << now;
    std::istringstream a(golden.str()), b(now);
    std::string la, lb;
    int number = 0;
    while (true) {
        const bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
        ++number;
        if (!ga && !gb) break;
        if (!ga || !gb || la != lb) {
            INFO("line " << number << "\n golden: " << (ga ? la : "<end>") << "\n now:    " << (gb ? lb : "<end>")
                         << "\n(whole listing: path_applicability.actual.txt in the test's directory)");
            CHECK(false);
            break;
        }
    }
}

// The router sends ARSHIM_REPRODUCIBLE's calls to the reproducible path (route::in_rank_order): exactly the datatype
// classes and ops that path's spec says it serves.
TEST_CASE("the reproducible path's Applies is the router's rank-order rule", "[golden][router]") {
    const policy::Applies& a = policy::ReproducibleParams::kApplies;
    Settings s;
    s.reproducible = ReproducibleMode::layout;
    for (std::size_t c = 0; c < vocab::kPolicyDtypeClassCount; ++c)
        for (std::size_t o = 0; o < vocab::kOpCount; ++o) {
            route::Traits t;
            t.dclass = static_cast<vocab::DtypeClass>(c);
            t.op = static_cast<kernels::Op>(o);
            INFO(vocab::kDtypeClassNames[c] << " " << vocab::kOpNames[o]);
            CHECK(route::in_rank_order(t, s) ==
                  ((a.classes & policy::class_bit(t.dclass)) != 0 && (a.ops & policy::op_bit(t.op)) != 0));
        }
    // The latency path's slots are sized for its largest call (shim/paths/latency.cpp declines larger ones).
    CHECK(policy::LatencyParams::kApplies.max_bytes == policy::kLatencyMaxBytes);
}
