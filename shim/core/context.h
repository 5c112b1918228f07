// Per-communicator context: what paths know of a communicator (shim/paths/path_context.h: its layout, agreed settings
// and path slots) with the engine's caches around it: the classification of (datatype, op) pairs, the decision per
// (size bucket, datatype, op), and the modes' book per key. Cached on the communicator with an attribute keyval,
// built on the first allreduce on that communicator (a collective call, so building it collectively is safe), freed
// by the keyval's delete callback.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "policy/config.h"
#include "policy/policy.h"
#include "policy/settings.h"
#include "shim/base/fixed_table.h"
#include "shim/base/mpi_types.h"
#include "shim/base/mpi_util.h"
#include "shim/modes/key_book.h"
#include "shim/paths/path_context.h"

namespace arshim {

class CommContext : public PathContext {
public:
    // The context of `comm`, built on first use. Collective over `comm` the first time (all ranks of `comm` are in
    // the same MPI_Allreduce call then). Returns nullptr only for a handle the library rejects.
    static CommContext* get(MPI_Comm comm);
    // Once, at init (shim/core/runtime.cpp), before the first get().
    static void create_keyval();

    // warm() (PathContext): a new communicator's context starts cold (local facts only: inter, rank, size,
    // statistics id) and is warmed, collectively, at its ARSHIM_CONTEXT_AFTER-th servable call, so that short-lived
    // communicators never pay for the node split.
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

    // --- the policy the ranks of this communicator agreed on (settings: PathContext) ---
    const policy::Policy* policy = nullptr;

    // Some rank of this communicator has a GPU runtime (shim/base/device.h): each served call's buffers are
    // classified and the classification agreed (engine). The world's agreement at MPI_Init where every member is a
    // world process and settings were agreed there; agreed over the communicator when its layout is computed otherwise
    // (spawned or connected processes, MPI_Init not intercepted). Set before the context is warm.
    bool device_check = false;

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

    // The modes' book of a key (shim/modes/key_book.h). The table is keyed by values identical on all ranks (size
    // bucket, element type, op), never by handle bits (Open MPI's handles are addresses, different in every process),
    // so every rank's table fills alike and overflows (into one shared entry) alike.
    KeyBook& book(uint32_t bucket, kernels::Type type, kernels::Op op);

    ~CommContext() override;
    void release_mpi_resources() { release_paths(); }  // idempotent

private:
    CommContext() = default;
    void build_local(MPI_Comm user_comm);
    void build_layout();    // the layout if not known yet, then warm
    void compute_layout();  // node layout, decision table, settings agreement (collective unless local)
    void agree_on_settings();

    std::vector<int> world_ranks_;       // members' world ranks, from build_local() until compute_layout()
    bool members_in_world_ = false;      // every member is a process of MPI_COMM_WORLD
    bool laid_out_ = false;  // compute_layout() ran
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

    // Settings adopted from comm rank 0 when this communicator's ranks did not agree (MPI_Init not intercepted
    // and different environments).
    std::unique_ptr<ProcessSettings> own_settings_;
    std::shared_ptr<const policy::Policy> own_policy_;
};

}  // namespace arshim
