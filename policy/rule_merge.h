// Rule merging for a tuned table (issue 12): `arshim tune` decides per point (nodes, ppn, size bucket range); the
// table it writes holds as few rules as reach the same decisions, each with the evidence behind it, in the policy
// format (docs/policy.md, docs/tuning.md) that policy::read_table reads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "policy/box.h"
#include "policy/policy.h"

namespace arshim::policy {

// One decided point: a (nodes, ppn) pair and a byte range [lo, hi) whose bounds are 0 or powers of two (hi may be
// kUnbounded), with what decided it. Times in microseconds, < 0 when unknown.
struct PointDecision {
    uint32_t nodes = 1;
    uint32_t ppn = 1;
    uint64_t lo = 0;
    uint64_t hi = kUnbounded;
    Decision decision;
    EvidenceKind evidence = EvidenceKind::predicted;
    double measured_us = -1;
    double predicted_us = -1;
    double native_us = -1;
};

// A merged rule: half-open ranges of nodes, ppn and bytes (not buckets), the decision, and the points it stands for.
struct MergedRule {
    Interval nodes, ppn, bytes;
    Decision decision;
    std::vector<PointDecision> points;  // in increasing bytes, then ppn, then nodes
};

// Merges in two steps. (1) For each (nodes, ppn), adjacent byte ranges with the same action become one. (2) Pairs
// whose merged size runs are identical become one range of ppn (consecutive ppn values of the input, for each nodes
// value) or of nodes (consecutive nodes values); both orders are tried and the one with fewer rules kept. A count
// range spans the values between the input's consecutive values too: an unmeasured ppn between two measured ones
// with the same decisions gets their decisions. Points of one (nodes, ppn) must not overlap (a later overlapping
// point is dropped). Rules are disjoint, so their order does not matter.
std::vector<MergedRule> merge_points(const std::vector<PointDecision>& points);

// The rules as a policy file, version 1, through the one writer (policy/rule_writer.h): an optional [origin] (strings)
// and [model] (numbers) header, then one [[rule]] per merged rule with name, nodes, ppn, bytes, path and its
// parameters, evidence ("measured" when every point was measured, else "predicted"), time_us and native_us (those of
// the rule's largest point), and a note with the measured and predicted times and the speed-up over native.
std::string render_rules(const std::vector<MergedRule>& rules,
                         const std::vector<std::pair<std::string, std::string>>& origin = {},
                         const std::vector<std::pair<std::string, double>>& model = {});

}  // namespace arshim::policy
