// The host paths (shim/paths/): each serves a resolved Call with PMPI_* only, or declines with a reason. The SHARP
// path is in shim/sharp/path.h. Each path keeps its per-communicator state in its own context slot.
#pragma once

#include "shim/core/call.h"

namespace arshim {

PathOutcome run_pipelined(const Call& call);
PathOutcome run_multileader(const Call& call);
// Floating-point sums in communicator rank order (ARSHIM_REPRODUCIBLE, shim/paths/reproducible.cpp); also any op
// whose n-ary kernel it is given.
PathOutcome run_reproducible(const Call& call);

}  // namespace arshim
