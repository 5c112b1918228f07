// A policy table as read from TOML (a file or the built-in default.toml), before the environment's overrides and
// the MPI flavor are applied. Policy (policy.h) is built from it; the tools and tests use it directly.
//
// The format (version 1) is documented with examples in docs/policy.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/box.h"
#include "policy/policy.h"

namespace arshim::policy {

struct RuleSpec {
    Box match;
    Decision action;     // the path, its parameters (the path's defaults where the rule is silent); rule == -1
    std::string name;    // optional `name`
    Evidence evidence;   // optional `evidence`, `time_us`, `native_us`
    std::string note;    // optional `note`: what a tool recorded with the rule (the candidates it measured)
    int line = 0;        // line of the [[rule]] header
    int number = 0;      // 1-based position in the file
};

// Reading never stops at the first problem. Each problem is one complete line, "<source>:<line>: ..." for errors
// and "<source>:<line>: warning: ..." for warnings, sorted by line. Any error makes the table unusable: a
// half-read table is never used.
struct Table {
    std::string source;
    std::vector<RuleSpec> rules;
    std::vector<std::pair<std::string, std::string>> origin;  // [origin]: who made a generated table
    std::vector<std::pair<std::string, double>> model;        // [model]: the cost model's parameters
    std::vector<std::string> problems;
    int errors = 0;
    int warnings = 0;
    bool usable() const { return errors == 0; }
};

// The schema version this build reads.
constexpr int64_t kPolicyVersion = 1;
// The most [[rule]] tables a policy file may hold (generated tables stay far below it).
constexpr int kMaxRules = 4096;

// `check_reachability`: also warn about rules earlier rules hide (a warning only; bounded work; the shim runs it
// on rank 0 only).
Table read_table(std::string_view text, const std::string& source, bool check_reachability = true);

// Text forms shared by messages, `arshim-policy show` and the tests.
std::string format_bytes_range(const Interval& buckets);  // "64K..4M", "4M..", "..64K", "any"
std::string format_count_range(const Interval& counts);   // "8", "2..", "1..=8", "any"
std::string format_dtypes(uint32_t mask);                  // "float,int" or "any"
std::string format_ops(uint32_t mask);
std::string format_flavors(uint32_t mask);
std::string format_library_bug(uint32_t mask);   // "yes", "no" or "any"
std::string format_reproducible(uint32_t mask);  // "yes", "no" or "any"

}  // namespace arshim::policy
