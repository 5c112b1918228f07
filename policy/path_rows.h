// The paths, one row each: ARSHIM_PATH_ROWS(X) calls X(name, Params) per path, in code order. Everything that lists
// paths is made from these rows: the Path enum and its names (policy/routing_words.h: ARSHIM_PATH's choices, the
// policy reader's, the statistics schema's and the report's, checked by test/unit), the parameter variant of a
// Decision (policy/decision.h), the shim's table of run functions (shim/paths/table.cpp: serve_<name>), and what the
// tuner reads of every path (policy/tuned_table.cpp, policy/tune_candidates.cpp: they name no path).
//
// Adding a path: its spec header (policy/paths/<name>.h: parameters, keys, where it applies, cost, tuning candidates
// and neighbours), its run function (shim/paths/<name>.cpp), and a row plus an #include here (docs/architecture.md
// "Where to add").
#pragma once

#include "policy/paths/latency.h"
#include "policy/paths/multileader.h"
#include "policy/paths/native.h"
#include "policy/paths/pipelined.h"
#include "policy/paths/reproducible.h"
#include "policy/paths/sharp.h"

#define ARSHIM_PATH_ROWS(X)              \
    X(native, NativeParams)              \
    X(pipelined, PipelinedParams)        \
    X(multileader, MultileaderParams)    \
    X(sharp, SharpParams)                \
    X(reproducible, ReproducibleParams)  \
    X(latency, LatencyParams)
