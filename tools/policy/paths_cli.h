// `arshim-policy paths` (paths_cli.cpp): where each path applies, as its spec says (policy/paths/<path>.h kApplies,
// policy/path_spec.h), as JSON for the Python tools: tools/arshim/path_limits.json is this program's output, so that
// tools/arshim/candidates.py writes no path limit of its own (the `path-limits` test keeps the file current).
#pragma once

namespace arshim::policy {

// Prints the JSON on stdout; returns 0.
int run_paths();

}  // namespace arshim::policy
