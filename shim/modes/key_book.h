// What the modes keep per key (communicator, size bucket, element type, op): verify mode's count of checked calls and
// its one report, and online tuning's state. It changes with the call sequence, which MPI makes identical on all
// ranks of the communicator, so it stays identical on all ranks -- provided every rank finds the same entry, which the
// communicator context guarantees (shim/core/context.h book()). MPI-free.
#pragma once

#include <cstdint>

#include "shim/modes/schedule.h"

namespace arshim {

struct KeyBook {
    uint32_t verified = 0;           // calls of this key checked against the library (ARSHIM_VERIFY)
    bool mismatch_reported = false;  // a verify mismatch of this key was printed (one line per key)
    bool overflow = false;           // the shared entry of the keys that did not fit: never tuned
    tune::KeyTuning tuning;          // ARSHIM_TUNE (shim/modes/online.h)
};

}  // namespace arshim
