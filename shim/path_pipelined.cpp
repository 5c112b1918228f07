// Pipelined path (seed 000, Castello et al., Listings 1 and 2): the buffer is cut into segments on whole elements,
// one MPI_Iallreduce per segment, at most `window` requests in flight (a sliding window over MPI_Waitany), so the
// library's reduction of one segment overlaps the transfer of the next and 1 GiB with small segments never posts
// thousands of requests at once.
#include <algorithm>
#include <climits>

#include "shim/paths.h"
#include "shim/simd_ops.h"

namespace arshim {

namespace {

// Requests in flight are kept in a fixed array: no allocation per call.
constexpr uint32_t kMaxWindow = 64;

uint64_t segment_elements(const PathCall& call) {
    const uint64_t count = static_cast<uint64_t>(call.args.count);
    const policy::Decision& d = call.decision;
    uint64_t elements = count;
    if (d.segment_bytes > 0)
        elements = std::max<uint64_t>(1, d.segment_bytes / call.type.size);
    else if (d.segments > 0)
        elements = (count + d.segments - 1) / d.segments;
    // Each segment is one MPI_Iallreduce with an int count.
    return std::clamp<uint64_t>(elements, 1, static_cast<uint64_t>(INT_MAX));
}

}  // namespace

PathOutcome run_pipelined(const PathCall& call) {
    const CallArgs& args = call.args;
    const uint64_t count = static_cast<uint64_t>(args.count);
    const uint64_t per_segment = segment_elements(call);
    const uint64_t segments = (count + per_segment - 1) / per_segment;
    const uint32_t window = static_cast<uint32_t>(
        std::min<uint64_t>({call.decision.window == 0 ? kMaxWindow : call.decision.window, kMaxWindow, segments}));

    MPI_Op op = args.op;
    if (call.decision.kernel == policy::KernelChoice::simd) {
        const MPI_Op simd = simd_op_for(args.op);
        if (simd != MPI_OP_NULL) op = simd;
    }

    const bool in_place = args.sendbuf == MPI_IN_PLACE;
    const std::size_t element = call.type.size;
    auto post = [&](uint64_t segment, MPI_Request* request) {
        const uint64_t first = segment * per_segment;
        const int n = static_cast<int>(std::min(per_segment, count - first));
        const std::size_t offset = first * element;
        const void* send = in_place ? MPI_IN_PLACE : static_cast<const char*>(args.sendbuf) + offset;
        return PMPI_Iallreduce(send, static_cast<char*>(args.recvbuf) + offset, n, args.datatype, op, args.comm,
                               request);
    };

    MPI_Request requests[kMaxWindow];
    int rc = MPI_SUCCESS;
    uint64_t next = 0;
    for (uint32_t slot = 0; slot < window; ++slot, ++next) {
        rc = post(next, &requests[slot]);
        if (rc != MPI_SUCCESS) {
            // Requests already posted must still complete before returning.
            PMPI_Waitall(static_cast<int>(slot), requests, MPI_STATUSES_IGNORE);
            return PathOutcome::done(rc);
        }
    }
    if (window == segments) return PathOutcome::done(PMPI_Waitall(static_cast<int>(window), requests,
                                                                  MPI_STATUSES_IGNORE));
    while (next < segments) {
        int index = MPI_UNDEFINED;
        rc = PMPI_Waitany(static_cast<int>(window), requests, &index, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || index == MPI_UNDEFINED) break;
        rc = post(next++, &requests[index]);
        if (rc != MPI_SUCCESS) break;
    }
    const int wait_rc = PMPI_Waitall(static_cast<int>(window), requests, MPI_STATUSES_IGNORE);
    return PathOutcome::done(rc != MPI_SUCCESS ? rc : wait_rc);
}

}  // namespace arshim
