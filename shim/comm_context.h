// Per-communicator context: what ARShim knows about a communicator's layout (nodes, ppn, leaders), the settings
// its ranks agreed on, a decision cache, and the resources the paths create lazily (leader communicators, the node
// shared-memory window). Cached on the communicator with an attribute keyval, built on the first allreduce on that
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
#include "shim/mpi_types.h"
#include "shim/mpi_util.h"

namespace arshim {

struct MultileaderState;  // shim/path_multileader.cpp
struct SharpState;        // shim/path_sharp.cpp

class CommContext {
public:
    // The context of `comm`, built on first use. Collective over `comm` the first time (all ranks of `comm` are in
    // the same MPI_Allreduce call then). Returns nullptr only for a handle the library rejects.
    static CommContext* get(MPI_Comm comm);

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
    MPI_Comm node_comm = MPI_COMM_NULL;  // ranks of this communicator on my node (owned)
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
    // identical on all of its ranks; congruent communicators share it (stats.h register_comm).
    uint64_t stats_id = 0;

    // --- settings the ranks of this communicator agreed on ---
    const Config* config = nullptr;
    const policy::Policy* policy = nullptr;

    // The classification of a (datatype, op) pair, memoized (direct-mapped, no allocation). Safe across handle
    // reuse: predefined handles never change meaning, and any other handle classifies as derived / user-defined.
    const CallClass& call_class(MPI_Datatype datatype, MPI_Op op) {
        const uintptr_t dt_bits = handle_bits(datatype), op_bits = handle_bits(op);
        ClassEntry& e = classes_[(dt_bits * 0x9E3779B97F4A7C15ull + op_bits) >> 61];
        if (__builtin_expect(!e.used || e.datatype != dt_bits || e.op != op_bits, 0)) {
            e.value = classify(datatype, op);
            e.datatype = dt_bits;
            e.op = op_bits;
            e.used = true;
        }
        return e.value;
    }

    // Decision for a call, memoized per (size bucket, datatype, op): O(1), no allocation after the first call for
    // a key. Pure function of identical inputs, so identical on all ranks.
    const policy::Decision& decide(uint64_t bytes, MPI_Datatype datatype, MPI_Op op, const TypeInfo& type,
                                   kernels::Op kop);

    // --- lazily created path state (owned; released through the paths' release functions in paths.h) ---
    MultileaderState* multileader = nullptr;
    SharpState* sharp = nullptr;
    // Pipelined path, Open MPI: in-place segments are sent from here (shim/path_pipelined.cpp says why).
    std::unique_ptr<char[]> pipelined_staging;
    std::size_t pipelined_staging_bytes = 0;

    ~CommContext();
    void release_mpi_resources();  // idempotent

private:
    CommContext() = default;
    void build(MPI_Comm user_comm);
    void agree_on_settings();

    struct ClassEntry {
        uintptr_t datatype = 0;
        uintptr_t op = 0;
        bool used = false;
        CallClass value;
    };
    std::array<ClassEntry, 8> classes_{};  // indexed by the top 3 bits of a hash

    struct CacheEntry {
        uintptr_t datatype = 0;
        uintptr_t op = 0;
        uint32_t bucket = 0;
        bool used = false;
        policy::Decision decision;
    };
    static constexpr std::size_t kCacheSize = 256;  // power of two
    std::array<CacheEntry, kCacheSize> cache_{};
    policy::Decision uncached_;  // when the cache is full (many distinct datatypes): computed per call

    // Settings adopted from comm rank 0 when this communicator's ranks did not agree (MPI_Init not intercepted
    // and different environments).
    std::unique_ptr<Config> own_config_;
    std::shared_ptr<const policy::Policy> own_policy_;
    bool released_ = false;
};

}  // namespace arshim
