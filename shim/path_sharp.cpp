// SHARP in-network path: see issue "SHARP path". Until it is built this path declines every call, so a policy or
// ARSHIM_PATH=sharp runs native with the reason counted.
#include "shim/paths.h"

namespace arshim {

struct SharpState {};

PathOutcome run_sharp(const PathCall&) { return PathOutcome::decline(stats::Reason::sharp_unavailable); }

void release_sharp(CommContext& ctx) {
    delete ctx.sharp;
    ctx.sharp = nullptr;
}

}  // namespace arshim
