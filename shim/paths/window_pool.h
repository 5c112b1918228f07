// Node windows kept for reuse across communicators (ARSHIM_SHM_REUSE; docs/paths.md "Reused windows").
//
// A program that makes a communicator, reduces a few times on it and frees it (a solver's MPI_Comm_dup per solve) used
// to pay a new node window each time, which cost many times what its few small calls cost natively. When a
// communicator is freed, its node window (with the node communicator the window was made on) is kept here instead,
// keyed by the node's members (world ranks in node-rank order, the order of the window's slots); a later
// communicator whose node has exactly those members takes it over on its first served call, for one small
// allreduce instead of a window.
//
// Every rank of a node must keep or free a window alike, since freeing is collective over the node: when a
// communicator is freed, its node's ranks agree in one allreduce over the node communicator whether all of them
// keep it (each says yes when its own entry for the key is free); otherwise all free it. A take-over is agreed by an
// allreduce over the new communicator. Both agreements hold whatever the threads do (MPI_THREAD_MULTIPLE included:
// a rank whose entry is mid-change answers no, and the ranks fall back to freeing or to a new window).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace arshim {

struct ShmState;

namespace window_pool {

// Tokens identify a window across the ranks of the communicator that made it: the largest over its ranks of each
// rank's last token + 1 (agreed in the window's creation allreduce), so two windows that share a rank never share a
// token, and pooled windows can be freed in token order at finalize without a cycle.
uint64_t next_token();
void saw_token(uint64_t token);

// A pooled window: its state (domain.comm is `comm`) and the node communicator it was made on (owned).
struct Entry {
    ShmState* state = nullptr;
    MPI_Comm comm = MPI_COMM_NULL;
};

// A communicator is being freed: keeps its window (true; the pool then owns `state` and `comm`) when it may be
// reused (usable, not registered with SHARP (frozen), at most kMaxWindowBytes: identical on the
// node's ranks) and every rank of the node has no window of these members kept, fewer than kMaxKept windows kept
// and is not finalizing (agreed:
// collective over `comm`, one allreduce, when the first tests pass).
// A window made with ARSHIM_SHM_REUSE=off has no members (NodeShm::members) and is never offered.
bool offer(const std::vector<int>& members, ShmState* state, MPI_Comm comm);

// A new communicator's first served call: the kept window of these members, reserved for this call (its token and
// chunk capacity go into the agreement), or nullptr. Then either take() it (every rank of the communicator proposed
// the same token and capacity) or unreserve() it.
const ShmState* reserve(const std::vector<int>& members);
Entry take(const std::vector<int>& members);
void unreserve(const std::vector<int>& members);

// At finalize, before the live contexts release theirs: frees the kept windows in token order (collective over each
// node, the same order on every rank) and refuses later offers (the live contexts' windows are then freed as before).
void release_all();

constexpr std::size_t kMaxWindowBytes = std::size_t{4} << 20;  // larger windows are freed, as before
// At most this many windows (node groups) are kept per process: each holds a communicator and a window, under MPICH
// two of the process's 2048 communicator ids (ARSHIM_MAX_COMMS bounds the live communicators' own).
constexpr std::size_t kMaxKept = 16;

}  // namespace window_pool
}  // namespace arshim
