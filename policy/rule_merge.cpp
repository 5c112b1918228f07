// Rule merging and rendering for tuned tables (rule_merge.h).
#include "policy/rule_merge.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "policy/config.h"
#include "policy/rule_writer.h"

namespace arshim::policy {

namespace {

// A run of adjacent byte ranges of one (nodes, ppn) with one action, and the points it came from.
struct Run {
    uint64_t lo = 0, hi = 0;
    Decision decision;
    std::vector<PointDecision> points;
};
using Runs = std::vector<Run>;

bool same_runs(const Runs& a, const Runs& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].lo != b[i].lo || a[i].hi != b[i].hi || !same_action(a[i].decision, b[i].decision)) return false;
    return true;
}

// `into` and `from` are same_runs: their points join.
void absorb(Runs& into, const Runs& from) {
    for (std::size_t i = 0; i < into.size(); ++i)
        into[i].points.insert(into[i].points.end(), from[i].points.begin(), from[i].points.end());
}

// Step 1: the byte runs of one (nodes, ppn).
Runs byte_runs(std::vector<PointDecision> points) {
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
    Runs runs;
    for (const PointDecision& p : points) {
        if (p.lo >= p.hi) continue;
        if (!runs.empty() && p.lo < runs.back().hi) continue;  // overlaps an earlier point: dropped
        if (!runs.empty() && runs.back().hi == p.lo && same_action(runs.back().decision, p.decision)) {
            runs.back().hi = p.hi;
            runs.back().points.push_back(p);
        } else {
            runs.push_back(Run{p.lo, p.hi, p.decision, {p}});
        }
    }
    return runs;
}

// A range [lo, hi] (both included) of the inner count with one run list.
struct Group {
    uint32_t lo = 0, hi = 0;
    Runs runs;
};

bool same_groups(const std::vector<Group>& a, const std::vector<Group>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].lo != b[i].lo || a[i].hi != b[i].hi || !same_runs(a[i].runs, b[i].runs)) return false;
    return true;
}

// Step 2 for one order: cells keyed (outer, inner); first consecutive inner values with the same runs join, then
// consecutive outer values with the same groups. `outer_is_nodes` says which count is which.
std::vector<MergedRule> merge_cells(const std::map<std::pair<uint32_t, uint32_t>, Runs>& cells, bool outer_is_nodes) {
    std::map<uint32_t, std::vector<Group>> by_outer;
    for (const auto& [key, runs] : cells) {
        std::vector<Group>& groups = by_outer[key.first];
        if (!groups.empty() && same_runs(groups.back().runs, runs)) {
            groups.back().hi = key.second;
            absorb(groups.back().runs, runs);
        } else {
            groups.push_back(Group{key.second, key.second, runs});
        }
    }
    struct Block {
        uint32_t lo, hi;
        std::vector<Group> groups;
    };
    std::vector<Block> blocks;
    for (const auto& [outer, groups] : by_outer) {
        if (!blocks.empty() && same_groups(blocks.back().groups, groups)) {
            blocks.back().hi = outer;
            for (std::size_t i = 0; i < groups.size(); ++i) absorb(blocks.back().groups[i].runs, groups[i].runs);
        } else {
            blocks.push_back(Block{outer, outer, groups});
        }
    }
    std::vector<MergedRule> rules;
    for (const Block& block : blocks)
        for (const Group& group : block.groups)
            for (const Run& run : group.runs) {
                const Interval outer{block.lo, uint64_t{block.hi} + 1}, inner{group.lo, uint64_t{group.hi} + 1};
                MergedRule rule{outer_is_nodes ? outer : inner, outer_is_nodes ? inner : outer,
                                Interval{run.lo, run.hi}, run.decision, run.points};
                std::stable_sort(rule.points.begin(), rule.points.end(), [](const auto& a, const auto& b) {
                    return a.lo != b.lo ? a.lo < b.lo : a.ppn != b.ppn ? a.ppn < b.ppn : a.nodes < b.nodes;
                });
                rules.push_back(std::move(rule));
            }
    return rules;
}

// ---- rendering ----

// "64K", "1M"; 0 is "".
std::string size_word(uint64_t bytes) {
    return bytes == 0 ? "" : format_size(static_cast<int64_t>(std::min<uint64_t>(bytes, uint64_t{1} << 62)));
}

// "64K..4M", "4M..", "..1" (0 bytes only), "..".
std::string bytes_word(const Interval& b) {
    return size_word(b.lo) + ".." + (b.hi == kUnbounded ? "" : size_word(b.hi));
}

// 8, or "2..=4".
std::string count_word(const Interval& c) {
    if (c.hi == c.lo + 1) return std::to_string(c.lo);
    return std::to_string(c.lo) + "..=" + std::to_string(c.hi - 1);
}

std::string number(double v, const char* format = "%.2f") {
    char text[64];
    std::snprintf(text, sizeof text, format, v);
    return text;
}

// "12.30 us" or "8.10..15.00 us" over the points that have the value; "" when none has.
std::string time_span(const std::vector<PointDecision>& points, double PointDecision::*value) {
    double lo = INFINITY, hi = -INFINITY;
    for (const PointDecision& p : points)
        if (p.*value >= 0) lo = std::min(lo, p.*value), hi = std::max(hi, p.*value);
    if (hi < 0) return "";
    return (lo == hi ? number(lo) : number(lo) + ".." + number(hi)) + " us";
}

// The chosen time of a point: measured when it was, else predicted.
double chosen_us(const PointDecision& p) { return p.measured_us >= 0 ? p.measured_us : p.predicted_us; }

// "measured 8.10..15.00 us, predicted 9.00 us, native 20.00..31.00 us: 2.05x native (3 points)": the rule's note.
// The speed-up is total native time over total chosen time, over the points that have both.
std::string points_note(const MergedRule& rule) {
    std::string parts;
    auto add = [&parts](const char* label, const std::string& span) {
        if (span.empty()) return;
        if (!parts.empty()) parts += ", ";
        parts += std::string(label) + " " + span;
    };
    add("measured", time_span(rule.points, &PointDecision::measured_us));
    add("predicted", time_span(rule.points, &PointDecision::predicted_us));
    add("native", time_span(rule.points, &PointDecision::native_us));
    double chosen = 0, native = 0;
    for (const PointDecision& p : rule.points)
        if (chosen_us(p) > 0 && p.native_us >= 0) chosen += chosen_us(p), native += p.native_us;
    if (chosen > 0) parts += ": " + number(native / chosen) + "x native";
    if (parts.empty()) parts = "no times recorded";
    const std::size_t n = rule.points.size();
    return parts + " (" + std::to_string(n) + (n == 1 ? " point)" : " points)");
}

// A merged rule as a policy rule: its ranges, its decision, its evidence (measured when every point was), the times
// of its largest point.
RuleSpec as_rule(const MergedRule& merged) {
    RuleSpec rule;
    rule.name = "tuned: nodes " + count_word(merged.nodes) + ", ppn " + count_word(merged.ppn) + ", " +
                bytes_word(merged.bytes);
    rule.match.dim[Box::nodes] = merged.nodes;
    rule.match.dim[Box::ppn] = merged.ppn;
    rule.match.dim[Box::bucket] = {bucket_of(merged.bytes.lo),
                                   merged.bytes.hi == kUnbounded ? kUnbounded : bucket_of(merged.bytes.hi)};
    rule.action = merged.decision;
    const bool measured = !merged.points.empty() && std::all_of(merged.points.begin(), merged.points.end(), [](const auto& p) {
        return p.evidence == EvidenceKind::measured;
    });
    rule.evidence.kind = measured ? EvidenceKind::measured : EvidenceKind::predicted;
    if (!merged.points.empty()) {
        const PointDecision& largest = merged.points.back();
        if (chosen_us(largest) >= 0) rule.evidence.time_us = chosen_us(largest);
        if (largest.native_us >= 0) rule.evidence.native_us = largest.native_us;
    }
    rule.note = points_note(merged);
    return rule;
}

}  // namespace

std::vector<MergedRule> merge_points(const std::vector<PointDecision>& points) {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<PointDecision>> by_pair;
    for (const PointDecision& p : points) by_pair[{p.nodes, p.ppn}].push_back(p);
    std::map<std::pair<uint32_t, uint32_t>, Runs> nodes_outer, ppn_outer;
    for (const auto& [key, list] : by_pair) {
        Runs runs = byte_runs(list);
        ppn_outer.emplace(std::make_pair(key.second, key.first), runs);
        nodes_outer.emplace(key, std::move(runs));
    }
    std::vector<MergedRule> a = merge_cells(nodes_outer, true), b = merge_cells(ppn_outer, false);
    return b.size() < a.size() ? b : a;
}

std::string render_rules(const std::vector<MergedRule>& rules,
                         const std::vector<std::pair<std::string, std::string>>& origin,
                         const std::vector<std::pair<std::string, double>>& model) {
    std::vector<RuleSpec> specs;
    for (const MergedRule& rule : rules) specs.push_back(as_rule(rule));
    return render_table(specs, TableHeader{origin, model});
}

}  // namespace arshim::policy
