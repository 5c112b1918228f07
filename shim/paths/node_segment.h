// Node memory ARShim adds to a job: one shared segment per window, made by ARShim itself so that no other local user
// can plant, pre-create, follow or read it (docs/paths.md "Node memory nobody else can plant").
//
// ARShim used to ask the library for it (MPI_Win_allocate_shared). Open MPI 4.1.4's osc/sm backs such a window with a
// file at a predictable name (/dev/shm/osc_sm.<host>.<jobid>.<rank>.<cid>) opened with O_CREAT but neither O_EXCL nor
// O_NOFOLLOW: a directory or FIFO planted there by another user hung the job, a symlink made a root job overwrite the
// file it pointed to. A job that never asked for a window must not get that exposure from ARShim. So (the file
// operations in segment_file.h, MPI-free):
//   - the owner (rank 0 of the domain) creates the segment under a name with 128 random bits, exclusively, mode 0600,
//     its pages reserved (a full /dev/shm is an error now, not a SIGBUS in a later call);
//   - the name goes to the other ranks through MPI only (never a file or the environment);
//   - every attaching rank opens it without following links and checks it before mapping: a regular file, its own
//     user's, mode 0600, exactly the size the owner announced;
//   - once every rank has mapped it (agreed in one allreduce), the owner unlinks the name: the segment lives on in the
//     mappings only, and a job killed later leaves nothing in /dev/shm.
// Whatever fails, every rank of the domain learns it alike and the caller declines to the library with a reason.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace arshim {

// One mapped segment (this process's mapping); release_shared() unmaps it.
struct NodeSegment {
    void* mapping = nullptr;
    std::size_t bytes = 0;
};

// A segment of at least `bytes` shared by the ranks of `comm` (which must share memory), made by `comm`'s rank 0 and
// mapped by every rank, page aligned and zero-filled; nullptr on every rank alike when it cannot be had safely (then
// `why`, when given, says why, as this rank knows it). Collective over `comm`: one broadcast (twice,
// shim/base/mpi_util.h) and one allreduce. `owner` must be true on rank 0 of `comm` only.
char* allocate_shared(MPI_Comm comm, bool owner, std::size_t bytes, NodeSegment* segment, std::string* why = nullptr);

// Unmaps this process's view (local: no communication; the memory goes when the last rank unmaps it).
void release_shared(NodeSegment* segment);

}  // namespace arshim
