// The SHARP path (shim/sharp/path.cpp): in-network reduction, or declines (sharp_unavailable, ...).
#pragma once

#include "shim/core/call.h"

namespace arshim {

PathOutcome run_sharp(const Call& call);

}  // namespace arshim
