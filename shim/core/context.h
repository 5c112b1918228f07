// Per-communicator context: what ARShim knows about a communicator's layout (nodes, ppn, leaders), the settings
// its ranks agreed on, a decision cache, and one slot per path for the state that path creates lazily (it knows
// nothing of what is in them). Cached on the communicator with an attribute keyval, built on the first allreduce on that
// communicator (a collective call, so building it collectively is safe), freed by the keyval's delete callback.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "policy/config.h"
#include "policy/policy.h"
#include "shim/core/mpi_types.h"
#include "shim/core/mpi_util.h"
#include "shim/core/fixed_table.h"
#include "shim/tune/schedule.h"

namespace arshim {

// A path's per-communicator state. Its destructor frees what it holds, collectively where needed: it runs at the
// same point on every rank of the communicator (the communicator's free, or finalize).
struct PathState {
    virtual ~PathState() = default;
};
// The slots, one per owner: the node shared-memory window (shared by multileader and sharp), then each path.
enum class PathSlot : uint8_t { node_shm, pipelined, multileader, sharp, reproducible, count };

class CommContext {
    enum class Admission : uint8_t { undecided, admitted, refused };

public:
    // The context of `comm`, built on first use. Collective over `comm` the first time (all ranks of `comm` are in
    // the same MPI_Allreduce call then). Returns nullptr only for a handle the library rejects.
    static CommContext* get(MPI_Comm comm);
    // Once, at init (shim/core/runtime.cpp), before the first get().
    static void create_keyval();

    // Whether the layout below is known. A new communicator's context starts cold (local facts only: inter, rank,
    // size, statistics id) and is warmed, collectively, at its ARSHIM_CONTEXT_AFTER-th servable call, so that
    // short-lived communicators never pay for the node split.
    bool warm() const { return warm_; }
    // Counts one servable call of a cold context; warms it (collective over the communicator) when it is due.
    // Every rank counts the same calls (they depend only on values identical on all ranks), so every rank warms
    // at the same call. Returns warm().
    bool count_cold_call();

    // Bumped whenever a context is freed (a freed communicator's handle may come back for a new one): caches keyed by
    // communicator handle are valid only while it is unchanged.
    static uint64_t generation() { return g_generation.load(std::memory_order_acquire); }
    static inline std::atomic<uint64_t> g_generation{1};  // inline: the hot path reads it without a call

    // Releases the MPI resources of every live context, in creation order (which is the same relative order on all
    // ranks, since contexts are created inside collective calls). Called once at finalize.
    static void release_all();

    // --- layout, identical on every rank of the communicator ---
    MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator (not owned)
    bool inter = false;             // intercommunicator: always native
    int rank = 0;
    int size = 1;
    // The ranks of this communicator on my node, made on first use (collective over the communicator: call it
    // where every rank does, inside a path's set-up). MPI_COMM_NULL on every rank when it could not be made.
    MPI_Comm node_communicator();
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

    // Statistics id: a hash of the communicator's shape (size, members' world ranks relative to its rank 0's),
    // identical on all of its ranks; congruent communicators share it (shim/stats/counters.h register_comm).
    uint64_t stats_id = 0;

    // --- settings the ranks of this communicator agreed on ---
    const Config* config = nullptr;
    const policy::Policy* policy = nullptr;

    // The classification of a (datatype, op) pair, memoized (no allocation; classified per call once the table is
    // full). Safe across handle reuse: predefined handles never change meaning, and any other handle classifies as
    // derived / user-defined.
    CallClass call_class(MPI_Datatype datatype, MPI_Op op) {
        const HandlePair key{handle_bits(datatype), handle_bits(op)};
        bool inserted = false;
        CallClass* memo = classes_.find_or_insert(key, key.hash(), &inserted);
        if (__builtin_expect(memo == nullptr, 0)) return classify(datatype, op);
        if (__builtin_expect(inserted, 0)) *memo = classify(datatype, op);
        return *memo;
    }

    // Decision for a call, memoized per (size bucket, datatype, op): O(1), no allocation after the first call for
    // a key. Pure function of identical inputs, so identical on all ranks. `library_bug`: the call hits a known
    // wrong reduction of the library that ARShim routes around (policy key library_bug); `reproducible`:
    // ARSHIM_REPRODUCIBLE covers it (policy key reproducible). Both follow from the (datatype, op) of the key.
    const policy::Decision& decide(uint64_t bytes, uint32_t bucket, MPI_Datatype datatype, MPI_Op op,
                                   const TypeInfo& type, kernels::Op kop, bool library_bug, bool reproducible);

    // What the modes that follow a key's calls keep (verify mode). It changes with the call sequence, which MPI
    // makes identical on all ranks of the communicator, so it stays identical on all ranks -- provided every rank
    // finds the same entry: the table is keyed by values identical on all ranks (size bucket, element type, op),
    // never by handle bits (Open MPI's handles are addresses, different in every process), so every rank's table
    // fills alike and overflows (into one shared entry) alike.
    struct KeyBook {
        uint32_t verified = 0;           // calls of this key checked against the library (ARSHIM_VERIFY)
        bool mismatch_reported = false;  // a verify mismatch of this key was printed (one line per key)
        bool overflow = false;           // the shared entry of the keys that did not fit: never tuned
        tune::KeyTuning tuning;          // ARSHIM_TUNE (shim/tune/online.h)
    };
    KeyBook& book(uint32_t bucket, kernels::Type type, kernels::Op op);

    // Whether this communicator may hold MPI objects ARShim makes for it (a node window, its own communicators).
    // Under MPICH each of them takes one of the process's 2048 communicator ids, which the program itself may need
    // (a program that keeps 1000 communicators runs natively and ran out of ids under ARShim): at most
    // ARSHIM_MAX_COMMS communicators hold them at once per process (docs/paths.md "Communicators ARShim makes").
    // Decided once per communicator, collectively, by the first path set-up that makes such an object (call it
    // where every rank of the communicator does: a path's first call); an admitted communicator counts until its
    // context is released. `values`, `same`: `count` more values agreed in the same allreduce, as
    // same_on_all_ranks() (nothing is sent, and *same is false, when the decision was made before and is no).
    bool admit(const long long* values = nullptr, int count = 0, bool* same = nullptr);
    bool refused() const { return admission_ == Admission::refused; }  // admit() said no (no communication)

    // --- the paths' per-communicator state (created lazily by the path that owns it) ---
    // A path's slot holds whatever it keeps for this communicator; the context only owns and releases it. Slots
    // are released in reverse order (sharp first: it may use the node window), at finalize in context creation
    // order, which is the same on every rank, since some releases are collective (MPI_Win_free).
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

    ~CommContext();
    void release_mpi_resources();  // idempotent

private:
    CommContext() = default;
    void build_local(MPI_Comm user_comm);
    void build_layout();    // the layout if not known yet, then warm
    void compute_layout();  // node layout, decision table, settings agreement (collective unless local)
    void agree_on_settings();

    MPI_Comm node_comm = MPI_COMM_NULL;  // node_communicator() (owned)
    bool node_comm_failed_ = false;      // it could not be made (agreed): never tried again
    std::vector<int> world_ranks_;       // members' world ranks, from build_local() until compute_layout()
    bool members_in_world_ = false;      // every member is a process of MPI_COMM_WORLD
    bool warm_ = false;
    bool laid_out_ = false;  // compute_layout() ran
    Admission admission_ = Admission::undecided;  // admit(): identical on every rank
    int64_t cold_calls_ = 0;
    int64_t warm_after_ = 1;  // the call that warms the context

    struct HandlePair {
        uintptr_t datatype = 0;
        uintptr_t op = 0;
        bool operator==(const HandlePair& o) const { return datatype == o.datatype && op == o.op; }
        uint64_t hash() const { return datatype * 0x100000001B3ull ^ op; }
    };
    FixedTable<HandlePair, CallClass, 16, 4> classes_;

    struct DecisionKey {
        HandlePair handles;
        uint32_t bucket = 0;
        bool operator==(const DecisionKey& o) const { return bucket == o.bucket && handles == o.handles; }
        uint64_t hash() const { return handles.hash() ^ bucket; }
    };
    // ~20 KB: allocated when the context warms (a cold context costs a program that churns communicators nothing
    // it does not use).
    std::unique_ptr<FixedTable<DecisionKey, policy::Decision, 256, 8>> decisions_;
    policy::Decision uncached_;  // when the table is full (many distinct datatypes): computed per call

    // (bucket, type, op) packed; allocated on the first book() call (64 keys: ~25 KB).
    std::unique_ptr<FixedTable<uint32_t, KeyBook, 64, 8>> books_;
    KeyBook overflow_book_;  // the keys that did not fit, together (identically on every rank)

    std::unique_ptr<PathState> slots_[static_cast<std::size_t>(PathSlot::count)];

    // Settings adopted from comm rank 0 when this communicator's ranks did not agree (MPI_Init not intercepted
    // and different environments).
    std::unique_ptr<Config> own_config_;
    std::shared_ptr<const policy::Policy> own_policy_;
    bool released_ = false;
};

}  // namespace arshim
