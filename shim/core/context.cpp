#include "shim/core/context.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "shim/core/log.h"
#include "shim/core/mpi_util.h"
#include "shim/core/runtime.h"
#include "shim/stats/counters.h"

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

void free_comm(MPI_Comm* comm) {
    if (*comm != MPI_COMM_NULL) PMPI_Comm_free(comm);
    *comm = MPI_COMM_NULL;
}

// The statistics id of a communicator: FNV-1a over (inter, size, world rank of each member minus that of its rank
// 0). Local (group translation, no communication), O(size), once per context.
uint64_t stats_shape_id(MPI_Comm comm, bool inter) {
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int size = 0, rank = 0;
    PMPI_Group_size(group, &size);
    PMPI_Comm_rank(comm, &rank);
    std::vector<int> ranks(static_cast<std::size_t>(size)), world_ranks(static_cast<std::size_t>(size), 0);
    for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
    PMPI_Group_translate_ranks(group, size, ranks.data(), world, world_ranks.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);

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
    config = &rt.config;
    policy = rt.policy.get();

    int is_inter = 0;
    PMPI_Comm_test_inter(user_comm, &is_inter);
    inter = is_inter != 0;
    stats_id = stats_shape_id(user_comm, inter);
    warm_ = true;
    if (inter) return;  // intercommunicators always go native; nothing collective is done for them

    PMPI_Comm_rank(user_comm, &rank);
    PMPI_Comm_size(user_comm, &size);
    node_of_rank.assign(static_cast<std::size_t>(size), 0);
    node_sizes.assign(1, size);
    if (size == 1) return;

    // Building the layout costs collective calls (node split, node index, agreement: ~0.1-1 ms), which a program
    // that creates a communicator for one or two allreduces never gets back. The world communicator and forced paths
    // start at once; so does every communicator when the ranks' settings were not agreed at MPI_Init (their
    // thresholds could differ).
    const bool at_once = user_comm == MPI_COMM_WORLD || !rt.config_agreed || config->text(OptionId::path) != "auto";
    warm_after_ = at_once ? 1 : config->number(OptionId::context_after);
    warm_ = false;
    if (warm_after_ <= 1) build_layout();
}

bool CommContext::count_cold_call() {
    if (!warm_ && ++cold_calls_ >= warm_after_) build_layout();
    return warm_;
}

void CommContext::build_layout() {
    warm_ = true;
    decisions_ = std::make_unique<FixedTable<DecisionKey, policy::Decision, 256, 8>>();
    const Runtime& rt = runtime();
    MPI_Comm user_comm = comm;

    // Node split. ARSHIM_VIRTUAL_PPN=k (tests, emulation) makes every k consecutive world ranks one node.
    const int64_t virtual_ppn = config->number(OptionId::virtual_ppn);
    if (virtual_ppn > 0) {
        const int color = rt.world_rank / static_cast<int>(virtual_ppn);
        PMPI_Comm_split(user_comm, color, rank, &node_comm);
    } else {
        PMPI_Comm_split_type(user_comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
    }
    PMPI_Comm_rank(node_comm, &node_rank);
    PMPI_Comm_size(node_comm, &node_size);

    // Node index: the order of each node's lowest rank (its node-rank 0) in this communicator.
    MPI_Comm heads = MPI_COMM_NULL;
    PMPI_Comm_split(user_comm, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &heads);
    int index_and_count[2] = {0, 0};
    if (heads != MPI_COMM_NULL) {
        PMPI_Comm_rank(heads, &index_and_count[0]);
        PMPI_Comm_size(heads, &index_and_count[1]);
        PMPI_Comm_free(&heads);
    }
    bcast_twice(index_and_count, 2, MPI_INT, 0, node_comm);  // twice: shim/core/mpi_util.h
    node_index = index_and_count[0];
    node_count = index_and_count[1];

    PMPI_Allgather(&node_index, 1, MPI_INT, node_of_rank.data(), 1, MPI_INT, user_comm);
    node_sizes.assign(static_cast<std::size_t>(node_count), 0);
    for (int node : node_of_rank) ++node_sizes[static_cast<std::size_t>(node)];
    ppn_min = *std::min_element(node_sizes.begin(), node_sizes.end());
    ppn_max = *std::max_element(node_sizes.begin(), node_sizes.end());
    ppn_uniform = ppn_min == ppn_max;
    nodes_contiguous = true;
    for (int r = 1; r < size; ++r)
        if (node_of_rank[r] != node_of_rank[r - 1] && node_of_rank[r] != node_of_rank[r - 1] + 1)
            nodes_contiguous = false;

    agree_on_settings();
    log::debug("context: comm size {} rank {}, node {}/{} (rank {} of {}), ppn {}..{}{}", size, rank, node_index,
               node_count, node_rank, node_size, ppn_min, ppn_max, nodes_contiguous ? "" : ", nodes interleaved");
}

// The ranks of this communicator must decide alike. When MPI_Init was intercepted all ranks hold world rank 0's
// settings already; otherwise each read its own environment, so compare digests and, if they differ, adopt this
// communicator's rank 0 settings (and say so once).
void CommContext::agree_on_settings() {
    const Runtime& rt = runtime();
    if (rt.config_agreed) return;
    uint64_t digest = config->digest() ^ std::hash<std::string>{}(rt.policy_text);
    // Signed MAX of {d, ~d}: equal on all ranks exactly when every rank has the same d (independent of the
    // library's unsigned MIN/MAX handling, pmodels/mpich#6083).
    long long values[2] = {static_cast<long long>(digest), static_cast<long long>(~digest)};
    long long maxima[2] = {0, 0};
    PMPI_Allreduce(values, maxima, 2, MPI_LONG_LONG, MPI_MAX, comm);
    if (static_cast<uint64_t>(maxima[0]) == ~static_cast<uint64_t>(maxima[1])) return;

    std::string blob = Config::serialize(config->pairs());
    bcast_string(blob, 0, comm);
    std::string policy_text = rt.policy_text;
    bool have_file = rt.have_policy_file;
    bcast_optional_string(policy_text, &have_file, 0, comm);
    own_config_ = std::make_unique<Config>(Config::from_pairs(Config::deserialize(blob), nullptr));
    policy::LoadResult loaded = policy::load_policy(*own_config_, have_file ? &policy_text : nullptr,
                                                    own_config_->text(OptionId::policy), mpi_flavor(),
                                                    /*check_reachability=*/false);
    own_policy_ = loaded.policy;
    config = own_config_.get();
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
    if (cached != nullptr && log::enabled(log::Level::debug))
        log::debug("decision: comm size {}, {} B of {} with {}{}: {} (rule {})", size, bytes, datatype_name(datatype),
                   mpi_op_name(op), library_bug ? " (a known library bug)" : "",
                   policy::path_name(decision.path), policy->describe_rule(decision.rule));
    return decision;
}

CommContext::KeyBook& CommContext::book(uint32_t bucket, kernels::Type type, kernels::Op op) {
    if (!books_) {
        books_ = std::make_unique<FixedTable<uint32_t, KeyBook, 64, 8>>();
        overflow_book_.overflow = true;
    }
    const uint32_t key = bucket << 16 | static_cast<uint32_t>(type) << 8 | static_cast<uint32_t>(op);
    KeyBook* entry = books_->find_or_insert(key, vocab::mix64(key));
    return entry != nullptr ? *entry : overflow_book_;
}

void CommContext::release_mpi_resources() {
    if (released_) return;
    released_ = true;
    // Reverse slot order: a path may use the state of an earlier slot (sharp uses the node window).
    for (std::size_t i = static_cast<std::size_t>(PathSlot::count); i-- > 0;) slots_[i].reset();
    free_comm(&node_comm);
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
