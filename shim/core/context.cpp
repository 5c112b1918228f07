#include "shim/core/context.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "shim/core/layout.h"
#include "shim/core/world_nodes.h"
#include "shim/base/device.h"
#include "shim/base/log.h"
#include "shim/base/mpi_util.h"
#include "shim/core/runtime.h"
#include "shim/core/settings.h"
#include "shim/stats/counters.h"
#include "shim/stats/trace.h"

namespace arshim {

namespace {

int g_keyval = MPI_KEYVAL_INVALID;

// Live contexts in creation order, for release at finalize. Touched only when a context is created or freed.
std::mutex g_registry_mutex;
std::vector<CommContext*> g_registry;

// Per-thread memo of the last communicators' contexts, so the common case (the same few communicators, call after
// call) costs a few compares instead of an MPI attribute lookup (which takes a lock inside Open MPI). Freeing any
// context bumps the generation, which invalidates every thread's memo before the context is deleted: a freed
// communicator's handle may be reused by a new one.
struct Memo {
    MPI_Comm comm;
    CommContext* ctx;
    uint64_t generation;
};
constexpr int kMemoSize = 4;
// Initial-exec TLS (the library is preloaded): no __tls_get_addr call on the hot path.
thread_local Memo t_memo[kMemoSize] __attribute__((tls_model("initial-exec"))) = {};
thread_local unsigned t_memo_next __attribute__((tls_model("initial-exec"))) = 0;

int delete_callback(MPI_Comm, int, void* attribute, void*) {
    auto* ctx = static_cast<CommContext*>(attribute);
    CommContext::g_generation.fetch_add(1, std::memory_order_acq_rel);
    {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        g_registry.erase(std::remove(g_registry.begin(), g_registry.end(), ctx), g_registry.end());
    }
    delete ctx;  // releases its MPI resources unless finalize already did
    return MPI_SUCCESS;
}

// The statistics id of a communicator: FNV-1a over (inter, size, world rank of each member minus that of its rank
// 0). Local (group translation, no communication), O(size), once per context.
uint64_t stats_shape_id(MPI_Comm comm, bool inter, const std::vector<int>& world_ranks) {
    const int size = static_cast<int>(world_ranks.size());
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);

    stats::CommShape shape;
    shape.size = size;
    shape.inter = inter;
    shape.is_root = rank == 0;
    shape.first_world = size > 0 ? world_ranks[0] : 0;
    shape.stride = size > 1 ? world_ranks[1] - world_ranks[0] : 1;
    vocab::Fnv1a hash;
    hash.number(inter ? 1 : 0).number(size);
    for (int i = 0; i < size; ++i) {
        const int offset = world_ranks[static_cast<std::size_t>(i)] - shape.first_world;
        if (i > 0 && offset != i * shape.stride) shape.stride = 0;
        hash.number(offset);
    }
    uint64_t h = hash.value();
    if (h == 0) h = 1;  // 0 marks calls without a communicator
    stats::register_comm(h, shape);
    return h;
}

}  // namespace

void CommContext::create_keyval() {
    // MPI_COMM_NULL_COPY_FN: a duplicated communicator gets a context of its own, built on its first call.
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_callback, &g_keyval, nullptr);
}

CommContext* CommContext::get(MPI_Comm comm) {
    const uint64_t generation = CommContext::g_generation.load(std::memory_order_acquire);
    for (const Memo& memo : t_memo)
        if (memo.comm == comm && memo.generation == generation && memo.ctx != nullptr) return memo.ctx;

    const int key = g_keyval;
    void* attribute = nullptr;
    int found = 0;
    // An invalid handle: no context (the engine passes the call to the library, which reports the error).
    if (PMPI_Comm_get_attr(comm, key, &attribute, &found) != MPI_SUCCESS) return nullptr;
    CommContext* ctx = static_cast<CommContext*>(attribute);
    if (!found) {
        ctx = new CommContext;
        ctx->build_local(comm);
        PMPI_Comm_set_attr(comm, key, ctx);
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        g_registry.push_back(ctx);
    }
    t_memo[t_memo_next++ % kMemoSize] = {comm, ctx, generation};
    return ctx;
}

// Local facts only (no communication): what routes the calls that never need the layout.
void CommContext::build_local(MPI_Comm user_comm) {
    const Runtime& rt = runtime();
    comm = user_comm;
    settings = &rt.settings.agreed;
    wait = rt.wait;
    policy = rt.policy.get();

    int is_inter = 0;
    PMPI_Comm_test_inter(user_comm, &is_inter);
    inter = is_inter != 0;
    // The members' world ranks: for the statistics id and the layout (released once the layout is computed).
    members_in_world_ = world_ranks_of(user_comm, &world_ranks_);
    stats_id = stats_shape_id(user_comm, inter, world_ranks_);
    // The world's agreement (shim/core/runtime.cpp); a communicator whose layout is computed collectively agrees
    // again then (compute_layout), for members of another world or settings read alone.
    device_check = device::g_job_has_runtime;
    warm_ = true;
    if (inter) return;  // intercommunicators always go native; nothing collective is done for them

    PMPI_Comm_rank(user_comm, &rank);
    PMPI_Comm_size(user_comm, &size);
    node_of_rank.assign(static_cast<std::size_t>(size), 0);
    node_sizes.assign(1, size);
    if (size == 1) return;

    // Serving calls costs a path's set-up (a node window costs far more than a few small calls), which a program
    // that creates a communicator for one or two allreduces never gets back: the first ARSHIM_CONTEXT_AFTER - 1
    // calls go to the library. The world communicator and forced paths start at once; so does every communicator
    // when the ranks' settings were not agreed at MPI_Init (their thresholds could differ). The layout itself costs
    // no communication when the world's node map is known, about what a small call costs (shim/core/layout.h;
    // docs/paths.md "New communicators"), so it is computed now, on the communicator's first call, and the call that
    // warms the context costs no more than its decision (docs/paths.md "First calls").
    const bool at_once = user_comm == MPI_COMM_WORLD || !rt.config_agreed || settings->forced_path;
    warm_after_ = at_once ? 1 : settings->context_after;
    warm_ = false;
    if (warm_after_ <= 1)
        build_layout();
    else if (!rt.world_node.empty() && members_in_world_)
        compute_layout();
}

bool CommContext::count_cold_call() {
    if (!warm_ && ++cold_calls_ >= warm_after_) build_layout();
    return warm_;
}

void CommContext::build_layout() {
    if (!laid_out_) compute_layout();
    warm_ = true;
}

void CommContext::compute_layout() {
    laid_out_ = true;
    decisions_ = std::make_unique<FixedTable<DecisionKey, policy::Decision, 256, 8>>();
    const Runtime& rt = runtime();

    // From the world's node map when MPI_Init was intercepted and every member is a world process: no
    // communication (shim/core/layout.h); the node communicator is made later, by a path that needs it.
    std::vector<int> node_ids;
    if (!rt.world_node.empty() && members_in_world_) {
        node_ids.resize(world_ranks_.size());
        for (std::size_t r = 0; r < world_ranks_.size(); ++r)
            node_ids[r] = rt.world_node[static_cast<std::size_t>(world_ranks_[r])];
        std::vector<int>().swap(world_ranks_);
    } else {
        // Collectively. ARSHIM_VIRTUAL_PPN=k (tests, emulation) makes every k consecutive world ranks one node.
        // Otherwise the processes that share memory (node_ids_of: shim/base/node_key.h).
        const int64_t virtual_ppn = settings->virtual_ppn;
        const int color = virtual_ppn > 0 ? rt.world_rank / static_cast<int>(virtual_ppn)
                                          : node_ids_of(comm)[static_cast<std::size_t>(rank)];
        const int rc = comm_split_twice(comm, color, rank, &node_comm_);  // twice: mpi_util.h
        // Node id: the comm rank of the node's lowest rank (node-rank 0, the split is keyed by comm rank). When a
        // rank could not make the node communicator (no communicator id left; agreed), every rank is its own node:
        // the node paths then decline (one rank per node), identically on every rank.
        int lowest = rank;
        node_comm_failed_ = !made_on_all_ranks(rc, &node_comm_, comm);
        if (!node_comm_failed_) bcast_twice(&lowest, 1, MPI_INT, 0, node_comm_);  // twice: shim/base/mpi_util.h
        node_ids.resize(static_cast<std::size_t>(size));
        PMPI_Allgather(&lowest, 1, MPI_INT, node_ids.data(), 1, MPI_INT, comm);
        std::vector<int>().swap(world_ranks_);
        // The members may come from different worlds or have read their settings alone: agree here.
        int any_runtime = device::g_job_has_runtime ? 1 : 0;
        PMPI_Allreduce(MPI_IN_PLACE, &any_runtime, 1, MPI_INT, MPI_MAX, comm);
        device_check = any_runtime != 0;
    }
    Layout layout = layout_from_node_ids(node_ids, rank);
    node_of_rank = std::move(layout.node_of_rank);
    node_sizes = std::move(layout.node_sizes);
    node_index = layout.node_index;
    node_count = layout.node_count;
    node_rank = layout.node_rank;
    node_size = layout.node_size;
    ppn_min = layout.ppn_min;
    ppn_max = layout.ppn_max;
    ppn_uniform = layout.ppn_uniform;
    nodes_contiguous = layout.nodes_contiguous;

    agree_on_settings();
    log::debug("context: comm size {} rank {}, node {}/{} (rank {} of {}), ppn {}..{}{}{}", size, rank, node_index,
               node_count, node_rank, node_size, ppn_min, ppn_max, nodes_contiguous ? "" : ", nodes interleaved",
               node_comm_ == MPI_COMM_NULL ? " (from the world's node map)" : "");
}

// The ranks of this communicator must decide alike. When MPI_Init was intercepted all ranks hold world rank 0's
// settings already; otherwise each read its own environment, so compare digests and, if they differ, adopt this
// communicator's rank 0 settings (and say so once).
void CommContext::agree_on_settings() {
    const Runtime& rt = runtime();
    if (rt.config_agreed) return;
    std::string policy_text = rt.policy_text;
    bool have_file = rt.have_policy_file;
    own_settings_ = settings::agree_over(rt.settings, &policy_text, &have_file, comm);
    if (own_settings_ == nullptr) return;  // they agree
    policy::LoadResult loaded = policy::load_policy(own_settings_->config, have_file ? &policy_text : nullptr,
                                                    own_settings_->agreed.policy_file, mpi_flavor(),
                                                    /*check_reachability=*/false);
    own_policy_ = loaded.policy;
    settings = &own_settings_->agreed;
    policy = own_policy_.get();
    if (rank == 0 && log::first_time("settings-disagree"))
        log::warn("ranks of a communicator have different ARSHIM_* settings (MPI_Init was not intercepted); "
                  "using those of its rank 0");
}

const policy::Decision& CommContext::decide(uint64_t bytes, uint32_t bucket, MPI_Datatype datatype, MPI_Op op,
                                            const TypeInfo& type, kernels::Op kop, bool library_bug,
                                            bool reproducible) {
    const DecisionKey key{{handle_bits(datatype), handle_bits(op)}, bucket};
    bool inserted = false;
    if (__builtin_expect(!decisions_, 0)) decisions_ = std::make_unique<FixedTable<DecisionKey, policy::Decision, 256, 8>>();
    policy::Decision* cached = decisions_->find_or_insert(key, key.hash(), &inserted);
    if (cached != nullptr && !inserted) return *cached;
    policy::CallFacts facts{bytes, static_cast<uint32_t>(ppn_max), static_cast<uint32_t>(node_count),
                            static_cast<uint32_t>(size), ppn_uniform, type.dclass, kop};
    facts.library_bug = library_bug;
    facts.reproducible = reproducible;
    policy::Decision& decision = cached != nullptr ? *cached : uncached_;
    decision = policy->decide(facts);
    if (cached != nullptr && trace::on())
        trace::event("decision", {{"communicator", stats_id}, {"comm_size", size}, {"nodes", node_count},
                                  {"ppn_min", ppn_min}, {"ppn_max", ppn_max}, {"bytes", bytes},
                                  {"bucket", bucket}, {"datatype", datatype_name(datatype)},
                                  {"class", vocab::dtype_class_name(type.dclass)}, {"op", mpi_op_name(op)},
                                  {"library_bug", library_bug}, {"reproducible", reproducible},
                                  {"decision", trace::decision(decision)}, {"rule", policy->describe_rule(decision.rule)}});
    if (cached != nullptr && log::enabled(log::Level::debug))
        log::debug("decision: comm size {}, {} B of {} with {}{}: {} (rule {})", size, bytes, datatype_name(datatype),
                   mpi_op_name(op), library_bug ? " (a known library bug)" : "",
                   policy::path_name(decision.path()), policy->describe_rule(decision.rule));
    return decision;
}

KeyBook& CommContext::book(uint32_t bucket, kernels::Type type, kernels::Op op) {
    if (!books_) {
        books_ = std::make_unique<FixedTable<uint32_t, KeyBook, 64, 8>>();
        overflow_book_.overflow = true;
    }
    const uint32_t key = bucket << 16 | static_cast<uint32_t>(type) << 8 | static_cast<uint32_t>(op);
    KeyBook* entry = books_->find_or_insert(key, vocab::mix64(key));
    return entry != nullptr ? *entry : overflow_book_;
}

CommContext::~CommContext() { release_mpi_resources(); }

void CommContext::release_all() {
    std::vector<CommContext*> live;
    {
        std::lock_guard<std::mutex> lock(g_registry_mutex);
        live = g_registry;
    }
    for (CommContext* ctx : live) ctx->release_mpi_resources();
}

}  // namespace arshim
