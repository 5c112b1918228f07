// Verify mode (ARSHIM_VERIFY=N, docs/verify.md): the first N calls of each (communicator, size bucket, datatype,
// op) that one of ARShim's paths serves are computed by the library as well, into scratch memory, and compared with
// what the path delivered (kernels/compare.h: exactly, or within the reassociation bound for floating-point sums
// and products). The user's result is never changed. A mismatch prints one line per key from the lowest rank that
// saw it, naming the path, the call site, the rank, the element and both values; ARSHIM_STRICT=1 aborts the job.
//
// Every step is collective over the call's communicator and taken by all of its ranks for the same calls (the
// per-key count follows the call sequence, identical on all ranks): the library's allreduce of the input, for
// floating-point sums an allreduce of the magnitudes (the bound), and one small allreduce that agrees on the
// outcome. After a key's N calls, nothing.
#pragma once

#include "shim/stats/mode_counts.h"

#include <atomic>
#include <cstdint>

#include "shim/modes/key_book.h"
#include "shim/paths/call.h"

namespace arshim::verify {

// Its counts for the statistics are in shim/stats/mode_counts.h.

// One call under check. Constructed before the path runs (it keeps the input of an in-place call, which the path
// overwrites); finish() after the path served the call.
class Check {
public:
    explicit Check(const Call& call);
    // `rc`: what the path returned (a failed call is not compared); `book`: the key's bookkeeping.
    void finish(const Call& call, int rc, KeyBook& book, bool library_bug);

private:
    const void* input_ = nullptr;  // the call's input as the path saw it
};

}  // namespace arshim::verify
