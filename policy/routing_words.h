// The routing vocabulary: paths (from policy/path_rows.h), the reasons a call goes to the library, and size buckets,
// each with its code and its name (as ARSHIM_PATH, the policy file, the logs, the statistics log and the tools spell
// it). MPI-free and header-only. Ops, element types and datatype classes are the kernels' (kernels/vocabulary.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "kernels/vocabulary.h"
#include "policy/path_rows.h"

namespace arshim::vocab {

// ---- paths -------------------------------------------------------------------------------------------------------

enum class Path : uint8_t {
#define ARSHIM_PATH_ENUM(name, Params) name,
    ARSHIM_PATH_ROWS(ARSHIM_PATH_ENUM)
#undef ARSHIM_PATH_ENUM
    count
};
constexpr std::size_t kPathCount = count_of<Path>();
inline constexpr const char* kPathNames[] = {
#define ARSHIM_PATH_NAME(name, Params) #name,
    ARSHIM_PATH_ROWS(ARSHIM_PATH_NAME)
#undef ARSHIM_PATH_NAME
};
static_assert(std::size(kPathNames) == kPathCount, "one name per path");
constexpr const char* path_name(Path path) { return name_of(kPathNames, path); }
// The library's own allreduce (the first row): the fallback every call can take, and the tuner's baseline.
constexpr Path kLibraryPath = Path::native;

// ---- why a call went to the library (`policy` is not a fallback: the policy chose native) ------------------------

enum class Reason : uint8_t {
    policy,
    zero_count,
    single_rank,
    one_rank_per_node,
    derived_datatype,
    user_op,
    noncommutative_op,
    unsupported_op_type,
    intercommunicator,
    path_unavailable,
    nonuniform_ppn,
    buffer_too_large,
    shm_unavailable,
    sharp_unavailable,
    cold_communicator,  // one of a communicator's first calls, before its context is worth building
    not_reproducible,   // ARSHIM_REPRODUCIBLE: a derived datatype or user op, which no path can sum in rank order
    tuned,              // ARSHIM_TUNE measured the library's allreduce as the faster (or was trying it)
    comm_limit,         // ARSHIM_MAX_COMMS communicators hold ARShim's windows and communicators already
    device_memory,      // a rank's send or receive buffer is GPU memory (shim/base/device.h): the library reduces it
    count
};
constexpr std::size_t kReasonCount = count_of<Reason>();
constexpr Reason kServed = Reason::count;  // a statistics row's reason when the chosen path served the call
inline constexpr const char* kReasonNames[] = {
    "policy",           "zero_count",          "single_rank",       "one_rank_per_node", "derived_datatype",
    "user_op",          "noncommutative_op",   "unsupported_op_type", "intercommunicator", "path_unavailable",
    "nonuniform_ppn",   "buffer_too_large",    "shm_unavailable",   "sharp_unavailable", "cold_communicator",
    "not_reproducible", "tuned",             "comm_limit",        "device_memory",     "served"};
static_assert(std::size(kReasonNames) == kReasonCount + 1, "one name per reason, then 'served'");
constexpr const char* reason_name(Reason reason) { return name_of(kReasonNames, reason); }

// ---- size buckets: the unit decisions are cached in and statistics are kept in -----------------------------------
// Bucket 0 is 0 bytes, bucket b >= 1 is [2^(b-1), 2^b). Policy byte bounds are powers of two, so every size in a
// bucket gets the same rule.

constexpr std::size_t kBucketCount = 65;
constexpr uint32_t bucket_of(uint64_t bytes) {
    return bytes == 0 ? 0u : 64u - static_cast<uint32_t>(__builtin_clzll(bytes));
}
constexpr uint64_t bucket_floor(uint32_t b) { return b == 0 ? 0 : uint64_t{1} << (b - 1); }      // smallest size
constexpr uint64_t bucket_ceiling(uint32_t b) {                                                     // largest size
    return b == 0 ? 0 : b >= 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
}
// Room for a call of `bytes` that also holds every later call of its bucket: 2^b for bucket b (bytes itself from
// 2^63). Memory a path keeps per communicator (node window, staging, scratch) is sized by this, so it grows only on
// the first call of a bucket and never again inside it (docs/paths.md "First calls").
constexpr uint64_t bucket_room(uint64_t bytes) {
    const uint32_t b = bucket_of(bytes);
    return b == 0 || b >= 64 ? bytes : uint64_t{1} << b;
}

}  // namespace arshim::vocab
