#include "shim/paths/window_pool.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "policy/config.h"
#include "shim/paths/node_shm.h"

namespace arshim::window_pool {

namespace {

struct Kept {
    Entry entry;             // state == nullptr while an offer of this key is being agreed
    bool reserved = false;  // a first call is agreeing on it
};

// Set-up and free paths only (never a user's steady call): a mutex and a map are fine here.
std::mutex g_mutex;
std::map<std::vector<int>, Kept> g_kept;
bool g_closed = false;
std::atomic<uint64_t> g_last_token{0};

}  // namespace

uint64_t next_token() { return g_last_token.load(std::memory_order_relaxed) + 1; }

void saw_token(uint64_t token) {
    uint64_t last = g_last_token.load(std::memory_order_relaxed);
    while (last < token && !g_last_token.compare_exchange_weak(last, token, std::memory_order_relaxed)) {
    }
}

bool offer(const std::vector<int>& members, ShmState* state, MPI_Comm comm) {
    // Identical on the node's ranks: its members, the agreed outcome and flags of the window, its size.
    if (members.empty() || state == nullptr || comm == MPI_COMM_NULL) return false;
    if (!state->usable || state->frozen || state->window_bytes() > kMaxWindowBytes) return false;
    // This rank's answer: whether its entry for the key is free and the pool has room. The entry is claimed (left
    // empty) before the agreement, so that another thread freeing a communicator of the same members meanwhile sees
    // it taken; the mutex is not held across the allreduce.
    int mine = 0;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_closed && g_kept.size() < kMaxKept && g_kept.count(members) == 0) {
            g_kept[members] = Kept{};
            mine = 1;
        }
    }
    int all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (all == 0) {
        if (mine) g_kept.erase(members);
        return false;
    }
    g_kept[members].entry = Entry{state, comm};
    return true;
}

const ShmState* reserve(const std::vector<int>& members) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find(members);
    if (it == g_kept.end() || it->second.reserved || it->second.entry.state == nullptr) return nullptr;
    it->second.reserved = true;
    return it->second.entry.state;
}

Entry take(const std::vector<int>& members) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find(members);
    if (it == g_kept.end()) return {};
    const Entry entry = it->second.entry;
    g_kept.erase(it);
    return entry;
}

void unreserve(const std::vector<int>& members) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find(members);
    if (it != g_kept.end()) it->second.reserved = false;
}

void release_all() {
    std::vector<Entry> entries;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_closed = true;
        for (auto& [members, kept] : g_kept)
            if (kept.entry.state != nullptr) entries.push_back(kept.entry);
        g_kept.clear();
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.state->token < b.state->token; });
    for (Entry& e : entries) {
        free_shm_state(e.state);
        PMPI_Comm_free(&e.comm);
    }
}

}  // namespace arshim::window_pool
