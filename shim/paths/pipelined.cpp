// Pipelined path (seed 000, Castello et al., Listings 1 and 2): the buffer is cut into segments on whole elements,
// one MPI_Iallreduce per segment, at most `window` requests in flight (a sliding window over MPI_Waitany), so the
// library's reduction of one segment overlaps the transfer of the next and 1 GiB with small segments never posts
// thousands of requests at once.
#include <algorithm>
#include <climits>
#include <cstring>
#include <new>

#include "shim/base/flavor.h"
#include "shim/base/library_nb.h"
#include "shim/base/sim_charge.h"
#include "shim/paths/path_context.h"
#include "shim/paths/paths.h"

namespace arshim {

namespace {

// Requests in flight are kept in a fixed array: no allocation per call.
constexpr uint32_t kMaxWindow = 64;

// Open MPI 4.1's libnbc MPI_Iallreduce takes a binomial tree (a reduce to one root, then a broadcast: the whole
// segment crosses the root's link about 2 log2(p) times) for every in-place call, where separate buffers of
// >= 64 KiB on >= 4 ranks get reduce-scatter + allgather. An in-place segment is therefore copied into a staging
// slot (one per request in flight, kept by the communicator's context) and sent from there: a memcpy per segment
// instead of a slower algorithm. MPICH's algorithm choice does not depend on MPI_IN_PLACE.
#if defined(ARSHIM_FLAVOR_OPENMPI) || defined(ARSHIM_FLAVOR_ABI)
// (libarshim-abi.so: only where the library behind the ABI is Open MPI, shim/base/flavor.h.)
inline bool stage_in_place() { return library() == Library::openmpi; }
constexpr int kLibnbcRingMinRanks = 4;
#elif defined(ARSHIM_FLAVOR_SMPI)
// The SMPI build's non-blocking allreduce is ARShim's own schedule (shim/base/library_nb_smpi.cpp), right in place
// and with the same algorithm either way (SimGrid 3.32's MPI_Iallreduce, which it replaces, got in-place calls of
// 64 KiB or more wrong): nothing is staged.
constexpr bool stage_in_place() { return false; }
constexpr int kLibnbcRingMinRanks = 4;
#else
constexpr bool stage_in_place() { return false; }
constexpr int kLibnbcRingMinRanks = 4;
#endif
constexpr uint64_t kLibnbcRingMinBytes = 64 * 1024;
constexpr std::size_t kMaxStagingBytes = std::size_t{64} << 20;  // beyond this, in-place segments are not staged

// The path's per-communicator slot: the staging area of in-place segments.
struct PipelinedState : PathState {
    std::unique_ptr<char[]> staging;
    std::size_t staging_bytes = 0;
};

// The communicator's staging area, at least `bytes` long; nullptr when it cannot have it (then nothing is
// staged). Allocated on the first in-place call that needs it, with room for its whole size bucket
// (vocab::bucket_room), and again only when a call of a larger bucket needs more.
char* staging_area(PathContext& ctx, std::size_t bytes) {
    if (bytes > kMaxStagingBytes) return nullptr;
    PipelinedState& state = ctx.ensure_slot<PipelinedState>(PathSlot::pipelined);
    if (state.staging_bytes < bytes) {
        const std::size_t room =
            std::max<std::size_t>(bytes, std::min<std::size_t>(vocab::bucket_room(bytes), kMaxStagingBytes));
        std::unique_ptr<char[]> grown(new (std::nothrow) char[room]);
        if (!grown) return nullptr;
        state.staging = std::move(grown);
        state.staging_bytes = room;
    }
    return state.staging.get();
}

uint64_t segment_elements(const Call& call) {
    const uint64_t count = static_cast<uint64_t>(call.args.count);
    const auto& d = call.decision.get<policy::PipelinedParams>();
    uint64_t elements = count;
    if (d.segment_bytes > 0)
        elements = std::max<uint64_t>(1, d.segment_bytes / call.type.size);
    else if (d.segments > 0)
        elements = (count + d.segments - 1) / d.segments;
    // Each segment is one MPI_Iallreduce with an int count.
    return std::clamp<uint64_t>(elements, 1, static_cast<uint64_t>(INT_MAX));
}

}  // namespace

PathOutcome serve_pipelined(const Call& call) {
    const CallArgs& args = call.args;
    const uint64_t count = static_cast<uint64_t>(args.count);
    const uint64_t per_segment = segment_elements(call);
    const uint64_t segments = (count + per_segment - 1) / per_segment;
    const uint32_t window = static_cast<uint32_t>(
        std::min<uint64_t>({call.decision.get<policy::PipelinedParams>().window == 0 ? kMaxWindow
                                                                                 : call.decision.get<policy::PipelinedParams>().window,
                            kMaxWindow, segments}));

    const MPI_Op op = call.library_op;
    MPI_Request requests[kMaxWindow];
    const bool in_place = args.sendbuf == MPI_IN_PLACE;
    const std::size_t element = call.type.size;
    const std::size_t segment_bytes = per_segment * element;
    char* staging = nullptr;
    const uint64_t largest_segment_bytes = std::min(per_segment, count) * element;
    if (stage_in_place() && in_place && call.ctx.size >= kLibnbcRingMinRanks &&
        largest_segment_bytes >= kLibnbcRingMinBytes)
        staging = staging_area(call.ctx, segment_bytes * window);
    // Segment `segment` goes into request slot `slot`; a slot is reused only after its request completed, so its
    // staging slot is free again too.
    auto post = [&](uint64_t segment, uint32_t slot) {
        const uint64_t first = segment * per_segment;
        const int n = static_cast<int>(std::min(per_segment, count - first));
        const std::size_t offset = first * element;
        char* const recv = static_cast<char*>(args.recvbuf) + offset;
        const void* send = MPI_IN_PLACE;
        if (!in_place)
            send = static_cast<const char*>(args.sendbuf) + offset;
        else if (staging != nullptr) {
            send = std::memcpy(staging + slot * segment_bytes, recv, n * element);
            charge::copy(n * element);  // the SMPI build's simulated time (shim/base/sim_charge.h); else nothing
        }
        requests[slot] = MPI_REQUEST_NULL;
        return library_iallreduce(send, recv, n, args.datatype, op, args.comm, &requests[slot]);
    };

    int rc = MPI_SUCCESS;
    uint64_t next = 0;
    for (uint32_t slot = 0; slot < window; ++slot, ++next) {
        rc = post(next, slot);
        if (rc != MPI_SUCCESS) {
            // Requests already posted must still complete before returning.
            library_waitall(static_cast<int>(slot), requests);
            return PathOutcome::done(rc);
        }
    }
    if (window == segments) return PathOutcome::done(library_waitall(static_cast<int>(window), requests));
    while (next < segments) {
        int index = MPI_UNDEFINED;
        rc = library_waitany(static_cast<int>(window), requests, &index);
        if (rc != MPI_SUCCESS || index == MPI_UNDEFINED) break;
        rc = post(next++, static_cast<uint32_t>(index));
        if (rc != MPI_SUCCESS) break;
    }
    const int wait_rc = library_waitall(static_cast<int>(window), requests);
    return PathOutcome::done(rc != MPI_SUCCESS ? rc : wait_rc);
}

}  // namespace arshim
