// libFuzzer target: the policy reader and load_policy on arbitrary text. Beyond "no crash, no sanitizer report",
// it checks what the shim relies on: problems are single lines naming the source, and every decision is sane and
// constant within a size bucket, under a few settings and every flavor.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/policy/decisions.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "policy/rules.h"

using namespace arshim;
using namespace arshim::policy;
using namespace arshim::policy::testing;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz_policy: invariant broken: %s: %s\n", what, detail.c_str());
    std::abort();
}

const std::vector<Config>& configs() {
    static const std::vector<Config> all = [] {
        std::vector<Config> out;
        out.emplace_back();
        out.push_back(Config::from_pairs({{"ARSHIM_PATH", "pipelined"}, {"ARSHIM_SEGMENTS", "3"},
                                          {"ARSHIM_POLICY_MODE", "prepend"}},
                                         nullptr));
        return out;
    }();
    return all;
}

void check_decision(const Decision& d, const Policy& p) {
    if (d.params.index() >= static_cast<std::size_t>(Path::count)) fail("no path's parameters", describe_decision(d));
    if (d.path() == Path::pipelined && !(param(d, "segment_bytes") >= 1 || param(d, "segments") >= 1))
        fail("no segment size", describe_decision(d));
    // Every count the path has is at least 1 (the key tables' minimum).
    for_each_key(d, [&](const KeyView& k) {
        if (k.kind == KeyKind::count && k.shown && k.value < 1) fail("zero parameter", describe_decision(d));
    });
    if (d.rule < -1 || d.rule >= static_cast<int>(p.rules().size())) fail("rule index", std::to_string(d.rule));
    if (d.rule >= 0 && p.describe_rule(d.rule).empty()) fail("rule without a place", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);

    // The size and integer parsers see the same bytes.
    int64_t v = 0;
    if (parse_size(text, &v) && v < 0) fail("negative size", text);
    (void)parse_integer(text, &v);

    const Table table = read_table(text, "fuzz.toml");
    if (static_cast<std::size_t>(table.errors + table.warnings) != table.problems.size())
        fail("problem count", std::to_string(table.problems.size()));
    for (const std::string& problem : table.problems) {
        if (problem.rfind("fuzz.toml:", 0) != 0) fail("problem without its source", problem);
        if (problem.find('\n') != std::string::npos || problem.find('\r') != std::string::npos)
            fail("problem on several lines", problem);
    }
    if (!table.usable() && !table.rules.empty()) fail("rules kept from a table with errors", "");
    for (const RuleSpec& rule : table.rules) {
        (void)format_bytes_range(rule.match.dim[Box::bucket]);
        (void)format_count_range(rule.match.dim[Box::ppn]);
    }

    for (const Config& cfg : configs()) {
        for (const char* flavor : {"mpich", "openmpi", ""}) {
            const LoadResult r = load_policy(cfg, &text, "fuzz.toml", flavor);
            if (!r.policy) fail("no policy", "");
            if (r.file_used != table.usable()) fail("file used despite errors", "");
            const Policy& p = *r.policy;
            for (uint32_t nodes : {1u, 2u, 1000u}) {
                CallFacts f;
                f.ppn = nodes == 1 ? 2 : 8;
                f.nodes = nodes;
                f.comm_size = f.ppn * nodes;
                f.dclass = static_cast<DtypeClass>(nodes % 3);
                f.op = static_cast<kernels::Op>(nodes % kernels::kOpCount);
                for (uint32_t b = 0; b < kBucketCount; ++b) {
                    f.bytes = bucket_floor(b);
                    const Decision first = p.decide(f);
                    f.bytes = b == 0 ? 0 : b == 64 ? ~uint64_t{0} : bucket_floor(b + 1) - 1;
                    const Decision last = p.decide(f);
                    check_decision(first, p);
                    if (first.rule != last.rule || first.path() != last.path())
                        fail("decision changes inside a size bucket", std::to_string(b));
                }
            }
        }
    }
    return 0;
}
