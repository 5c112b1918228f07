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

#include <atomic>
#include <cstdint>

#include "shim/core/call.h"
#include "shim/core/context.h"

namespace arshim::verify {

// Process-wide counts for the statistics (shim/stats/report_fields.h, section "verify").
inline std::atomic<uint64_t> g_calls{0};              // calls checked on this rank
inline std::atomic<uint64_t> g_mismatches{0};         // of those, calls whose result differed on this rank
inline std::atomic<uint64_t> g_library_bug_calls{0};  // checked calls that hit a known library bug (the library's
                                                       // own result is expected to differ there)
inline std::atomic<uint64_t> g_library_bug_differences{0};  // ... and did differ
inline std::atomic<uint64_t> g_unordered{0};          // elements no bound can judge (NaN on one side, under/overflow)
// The largest relative difference between a floating-point result and the library's, as double bits (a
// non-negative double's bits order like its value, so an atomic max on the bits works).
inline std::atomic<uint64_t> g_worst_relative_bits{0};
double worst_relative();

// One call under check. Constructed before the path runs (it keeps the input of an in-place call, which the path
// overwrites); finish() after the path served the call.
class Check {
public:
    explicit Check(const Call& call);
    // `rc`: what the path returned (a failed call is not compared); `book`: the key's bookkeeping.
    void finish(const Call& call, int rc, CommContext::KeyBook& book, bool library_bug);

private:
    const void* input_ = nullptr;  // the call's input as the path saw it
};

}  // namespace arshim::verify
