// The paths' run functions, one per row of policy/path_rows.h: serve_<name>(call) serves a resolved Call with PMPI_*
// only, or declines with a reason (the engine then runs it natively and counts the reason). Each lives in its path's
// file (shim/paths/<name>.cpp; SHARP's in shim/sharp/path.cpp); serve_native is the engine's (it never runs: the
// engine calls the library itself). Each path keeps its per-communicator state in its own context slot.
#pragma once

#include "policy/path_rows.h"
#include "policy/settings.h"
#include "shim/paths/call.h"

namespace arshim {

#define ARSHIM_PATH_SERVE(name, Params) PathOutcome serve_##name(const Call& call);
ARSHIM_PATH_ROWS(ARSHIM_PATH_SERVE)
#undef ARSHIM_PATH_SERVE

}  // namespace arshim
