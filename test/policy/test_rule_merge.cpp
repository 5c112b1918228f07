// Rule merging for tuned tables (policy/rule_merge.h): the merged table, written as TOML and read back by the real
// reader, decides exactly like the per-point input at every point and bucket boundary, with no more rules, and with
// the fewest rules in cases small enough to count by hand.
#include "test/support/catch.h"

#include <cstdint>
#include <vector>

#include "policy/rule_merge.h"
#include "policy/rules.h"
#include "test/policy/decisions.h"

using namespace arshim::policy;
using namespace arshim::policy::testing;

namespace {

Decision native() { return decision_for(Path::native); }
Decision sharp_llt() {
    Decision d;
    set_path(d, Path::sharp);
    d.get<SharpParams>().mode = SharpMode::llt;
    d.get<SharpParams>().leaders = SharpLeaders::socket;
    return d;
}

// Bucket b as a byte range: [0, 1) for b = 0, [2^(b-1), 2^b) otherwise; the last bucket of a grid is open.
PointDecision point(uint32_t nodes, uint32_t ppn, uint32_t bucket, const Decision& d, bool last = false) {
    PointDecision p;
    p.nodes = nodes;
    p.ppn = ppn;
    p.lo = bucket == 0 ? 0 : uint64_t{1} << (bucket - 1);
    p.hi = last ? kUnbounded : uint64_t{1} << bucket;
    p.decision = d;
    p.evidence = bucket % 3 == 0 ? EvidenceKind::measured : EvidenceKind::predicted;
    if (p.evidence == EvidenceKind::measured) p.measured_us = 1.5 * (bucket + 1);
    p.predicted_us = 1.4 * (bucket + 1);
    p.native_us = 2.0 * (bucket + 1);
    return p;
}

// Renders, reads back with the real reader (no problem allowed) and checks every point at its first and last byte.
void check_same_decisions(const std::vector<PointDecision>& points, const std::vector<MergedRule>& rules) {
    const std::string text = render_rules(rules, {{"made_by", "test \"merge\""}}, {{"alpha_s", 1e-5}});
    INFO(text);
    const Table table = read_table(text, "tuned.toml");
    REQUIRE(table.problems.empty());
    REQUIRE(table.rules.size() == rules.size());
    const LoadResult loaded = load_policy(arshim::Config(), &text, "tuned.toml", "mpich");
    REQUIRE(loaded.problems.empty());
    for (const PointDecision& p : points) {
        const uint64_t last = p.hi == kUnbounded ? uint64_t{1} << 40 : p.hi - 1;
        for (uint64_t bytes : {p.lo, last}) {
            CallFacts facts;
            facts.bytes = bytes;
            facts.ppn = p.ppn;
            facts.nodes = p.nodes;
            facts.comm_size = p.ppn * p.nodes;
            facts.dclass = DtypeClass::floating;
            const Decision d = loaded.policy->decide(facts);
            INFO(p.nodes << " nodes x " << p.ppn << ", " << bytes << " B: want " << describe_decision(p.decision)
                         << ", got " << describe_decision(d));
            REQUIRE(d.rule >= 0);
            REQUIRE(same_action(d, p.decision));
            // measured only where every merged point was measured
            CHECK((table.rules[d.rule].evidence.kind == EvidenceKind::measured) <=
                  (p.evidence == EvidenceKind::measured));
        }
    }
}

}  // namespace

TEST_CASE("adjacent sizes with one decision become one rule", "[merge]") {
    std::vector<PointDecision> points;
    for (uint32_t b = 0; b <= 24; ++b)
        points.push_back(point(2, 2, b, b < 13 ? native() : b < 21 ? pipelined(1 << 20, 8) : multileader(2, 4), b == 24));
    const auto rules = merge_points(points);
    CHECK(rules.size() == 3);  // the minimum: three decisions
    check_same_decisions(points, rules);
    // The text reads back as the rules: their byte ranges, evidence, and a note with the times and the speed-up.
    const Table table = read_table(render_rules(rules), "merged");
    REQUIRE(table.usable());
    REQUIRE(table.rules.size() == 3);
    CHECK(format_bytes_range(table.rules[0].match.dim[Box::bucket]) == "..4K");
    CHECK(format_bytes_range(table.rules[1].match.dim[Box::bucket]) == "4K..1M");
    CHECK(format_bytes_range(table.rules[2].match.dim[Box::bucket]) == "1M..");
    CHECK(table.rules[0].evidence.kind == EvidenceKind::predicted);
    CHECK(table.rules[0].note.rfind("measured ", 0) == 0);
    CHECK(table.rules[0].note.find("x native (13 points)") != std::string::npos);
}

TEST_CASE("identical size runs merge across ppn and nodes", "[merge]") {
    std::vector<PointDecision> points;
    for (uint32_t nodes : {2u, 3u, 4u})
        for (uint32_t ppn : {1u, 2u, 4u})
            for (uint32_t b = 10; b <= 20; ++b) points.push_back(point(nodes, ppn, b, b < 15 ? native() : sharp_llt()));
    const auto rules = merge_points(points);
    REQUIRE(rules.size() == 2);
    CHECK(rules[0].nodes == Interval{2, 5});
    CHECK(rules[0].ppn == Interval{1, 5});
    check_same_decisions(points, rules);
    const Table table = read_table(render_rules(rules), "merged");
    REQUIRE(table.rules.size() == 2);
    CHECK(table.rules[0].match.dim[Box::nodes] == Interval{2, 5});
    CHECK(table.rules[0].match.dim[Box::ppn] == Interval{1, 5});
}

TEST_CASE("a differing cell costs only its own rules", "[merge]") {
    // nodes 2: ppn 1 and 2 alike (A); nodes 4: ppn 1 is A, ppn 2 is B. A is two runs, B one: the fewest disjoint
    // rectangles are A over nodes 2..4 at ppn 1 (2), A at nodes 2 ppn 2 (2), B (1) = 5.
    std::vector<PointDecision> points;
    auto a = [](uint32_t b) { return b < 12 ? native() : multileader(2, 1); };
    for (uint32_t b = 8; b < 16; ++b) {
        points.push_back(point(2, 1, b, a(b)));
        points.push_back(point(2, 2, b, a(b)));
        points.push_back(point(4, 1, b, a(b)));
        points.push_back(point(4, 2, b, pipelined(64 << 10, 4)));
    }
    const auto rules = merge_points(points);
    CHECK(rules.size() == 5);
    check_same_decisions(points, rules);
}

TEST_CASE("random decision grids: the merged table decides like the points", "[merge]") {
    uint64_t state = 12345;
    auto next = [&state](uint32_t n) {  // deterministic everywhere (an LCG), uniform enough for picking
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>((state >> 33) % n);
    };
    const std::vector<Decision> palette{native(), pipelined(256 << 10, 4), pipelined(1 << 20, 8, KernelChoice::simd),
                                        multileader(1, 1), multileader(4, 4), sharp_llt()};
    for (int grid = 0; grid < 40; ++grid) {
        std::vector<PointDecision> points;
        std::vector<uint32_t> previous_cell;
        for (uint32_t nodes : {1u, 2u, 4u, 8u})
            for (uint32_t ppn : {1u, 2u, 3u, 8u}) {
                // half the cells repeat the previous cell's choices, so merging across cells has work to do
                std::vector<uint32_t> cell;
                if (!previous_cell.empty() && next(2) == 0) {
                    cell = previous_cell;
                } else {
                    uint32_t choice = next(palette.size());
                    for (uint32_t b = 0; b <= 30; ++b) {
                        if (next(5) == 0) choice = next(palette.size());
                        cell.push_back(choice);
                    }
                }
                for (uint32_t b = 0; b <= 30; ++b)
                    if (grid % 2 == 0 || next(8) != 0)  // odd grids have holes: sizes nobody decided
                        points.push_back(point(nodes, ppn, b, palette[cell[b]], b == 30));
                previous_cell = cell;
            }
        const auto rules = merge_points(points);
        INFO("grid " << grid << ": " << points.size() << " points, " << rules.size() << " rules");
        CHECK(rules.size() <= points.size());
        CHECK(rules.size() < points.size() / 2);
        check_same_decisions(points, rules);
    }
}

TEST_CASE("same_action compares what the path uses", "[merge]") {
    Decision a = native(), b = native();
    b.kernel = KernelChoice::simd;  // native hands no op to the library
    CHECK(same_action(a, b));
    Decision c = pipelined(1 << 20, 8), d = pipelined(1 << 20, 8);
    d.kernel = KernelChoice::simd;  // the pipelined path does
    CHECK_FALSE(same_action(c, d));
    CHECK_FALSE(same_action(pipelined(1 << 20, 8), pipelined(1 << 20, 4)));
    CHECK_FALSE(same_action(multileader(2, 1), multileader(2, 2)));
}
