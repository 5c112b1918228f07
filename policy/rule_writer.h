// The one writer of the policy format (docs/policy.md): rules in, TOML out, through toml++'s serialiser, so that
// whatever ARShim writes (the tuning cache, tuned tables) the reader reads back as the same rules. MPI-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "policy/rules.h"

namespace arshim::policy {

// The header of a written table: [origin] (who made it) and [model] (the cost model's fitted parameters).
struct TableHeader {
    std::vector<std::pair<std::string, std::string>> origin;
    std::vector<std::pair<std::string, double>> model;
};

// A table as text: `preamble` (comment lines, each starting with '#', or ""), then `version = 1`, the header and
// one [[rule]] per rule with its name, the match keys that restrict something, the path with the parameters that
// path uses, the evidence and its times, and the note.
std::string render_table(const std::vector<RuleSpec>& rules, const TableHeader& header = {},
                         const std::string& preamble = "");

}  // namespace arshim::policy
