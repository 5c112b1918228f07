// What a path knows about a communicator: its layout (nodes, ppn, leaders), the settings its ranks agreed on, one
// slot per path for the state that path creates lazily (it knows nothing of what is in them), and the two collective
// set-ups paths share: the node communicator and the admission of a communicator to ARShim's MPI objects. The
// engine's communicator context (shim/core/context.h) is a PathContext with the routing caches around it; paths see
// only this.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "policy/routing_words.h"
#include "policy/settings.h"

namespace arshim {

// A path's per-communicator state. Its destructor frees what it holds, collectively where needed: it runs at the
// same point on every rank of the communicator (the communicator's free, or finalize).
struct PathState {
    virtual ~PathState() = default;
};
// The slots, one per owner: the node shared-memory window (shared by the node paths and sharp), then each path's
// (from the path rows, policy/path_rows.h).
enum class PathSlot : uint8_t {
    node_shm,
#define ARSHIM_PATH_SLOT(name, Params) name,
    ARSHIM_PATH_ROWS(ARSHIM_PATH_SLOT)
#undef ARSHIM_PATH_SLOT
    count
};

// Waiting for the other ranks of a node domain (shim/paths/node_shm.h). Where the node has a core for each of its
// ranks, poll with a pause 16 times (well under a microsecond) or for ARSHIM_SPIN_US, then yield the CPU between
// polls: polls without a pause end before the other rank can arrive, and a sched_yield() costs about as much as a
// small call, so yielding early makes small calls several times slower. Where the node's ranks outnumber its online
// CPUs, 64 polls without a pause, then yield: each microsecond spent polling is taken from the rank waited for
// (docs/paths.md "One node, small calls"). Made once per process at start (the runtime: from its settings and the
// node's CPUs), a copy in every context.
struct WaitPolicy {
    bool pause = false;                   // the node's ranks fit its CPUs
    std::chrono::nanoseconds budget{0};  // ARSHIM_SPIN_US
    std::chrono::microseconds sleep_after{1000};  // ARSHIM_SLEEP_AFTER_US (wait_sleeping; 0: never sleep)
    bool phase_times = false;             // ARSHIM_PHASE_TIMES: the node protocol times its phases (PhaseClock)
};

class PathContext {
    enum class Admission : uint8_t { undecided, admitted, refused };

public:
    // --- layout, identical on every rank of the communicator ---
    MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator (not owned)
    bool inter = false;             // intercommunicator: always native
    int rank = 0;
    int size = 1;
    int node_rank = 0;
    int node_size = 1;
    int node_index = 0;   // my node's index, 0..node_count-1, in order of each node's lowest rank
    int node_count = 1;
    int ppn_min = 1;
    int ppn_max = 1;
    bool ppn_uniform = true;
    bool nodes_contiguous = true;    // every node's ranks are consecutive in this communicator
    std::vector<int> node_of_rank;   // comm rank -> node index
    std::vector<int> node_sizes;     // node index -> ranks on that node

    // Statistics id: a hash of the communicator's shape, identical on all of its ranks (shim/stats/counters.h).
    uint64_t stats_id = 0;

    // Whether the layout above is known and the communicator's first calls are behind it (a new communicator starts
    // cold: shim/core/context.h). Paths that may run on a cold communicator (reproducible) check it.
    bool warm() const { return warm_; }

    // --- the settings the ranks of this communicator agreed on (never null once the context exists) ---
    const Settings* settings = nullptr;
    // How this process's ranks wait in the node protocol (the process's, copied here when the context is made).
    WaitPolicy wait;

    // The ranks of this communicator on my node, made on first use (collective over the communicator: call it
    // where every rank does, inside a path's set-up). MPI_COMM_NULL on every rank when it could not be made.
    MPI_Comm node_communicator();

    // Whether this communicator may hold MPI objects ARShim makes for it (a node window, its own communicators).
    // Under MPICH each of them takes one of the process's 2048 communicator ids, which the program itself may need: at
    // most ARSHIM_MAX_COMMS communicators hold them at once per process (docs/paths.md "Communicators ARShim makes").
    // Decided once per communicator, collectively, by the first path set-up that makes such an object (call it where
    // every rank of the communicator does: a path's first call); an admitted communicator counts until its context is
    // released. `values`, `same`: `count` more values agreed in the same allreduce, as same_on_all_ranks() (nothing
    // is sent, and *same is false, when the decision was made before and is no).
    bool admit(const long long* values = nullptr, int count = 0, bool* same = nullptr);
    bool refused() const { return admission_ == Admission::refused; }  // admit() said no (no communication)

    // A path's slot holds whatever it keeps for this communicator; the context only owns and releases it. Slots are
    // released in reverse order (sharp first: it may use the node window), at finalize in context creation order,
    // which is the same on every rank, since some releases are collective (MPI_Win_free).
    template <typename State>
    State* slot(PathSlot id) const {
        return static_cast<State*>(slots_[static_cast<std::size_t>(id)].get());
    }
    template <typename State>
    State& ensure_slot(PathSlot id) {
        auto& s = slots_[static_cast<std::size_t>(id)];
        if (!s) s = std::make_unique<State>();
        return *static_cast<State*>(s.get());
    }

    virtual ~PathContext();

protected:
    PathContext() = default;
    // Frees the slots (reverse order), the node communicator and the admission. Idempotent; collective where a slot's
    // release is.
    void release_paths();

    bool warm_ = false;
    MPI_Comm node_comm_ = MPI_COMM_NULL;  // node_communicator() (owned)
    bool node_comm_failed_ = false;       // it could not be made (agreed): never tried again

private:
    Admission admission_ = Admission::undecided;  // admit(): identical on every rank
    bool released_ = false;
    std::unique_ptr<PathState> slots_[static_cast<std::size_t>(PathSlot::count)];
};

}  // namespace arshim
