#include "shim/paths/window_pool.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "policy/config.h"
#include "shim/core/runtime.h"
#include "shim/paths/node_shm.h"

namespace arshim::window_pool {

namespace {

struct Kept {
    Entry entry;
    bool reserved = false;  // a first call is agreeing on it
};

// Set-up and free paths only (never a user's steady call): a mutex and a map are fine here.
std::mutex g_mutex;
std::map<std::vector<int>, Kept> g_kept;
bool g_closed = false;
std::atomic<uint64_t> g_last_token{0};

}  // namespace

bool enabled() {
    const std::string mode = runtime().config.text(OptionId::shm_reuse);
    if (mode == "off") return false;
    if (mode == "on") return true;
    int level = MPI_THREAD_SINGLE;
    if (PMPI_Query_thread(&level) != MPI_SUCCESS) return false;
    return level < MPI_THREAD_MULTIPLE;
}

uint64_t next_token() { return g_last_token.load(std::memory_order_relaxed) + 1; }

void saw_token(uint64_t token) {
    uint64_t last = g_last_token.load(std::memory_order_relaxed);
    while (last < token && !g_last_token.compare_exchange_weak(last, token, std::memory_order_relaxed)) {
    }
}

bool offer(const std::vector<int>& members, ShmState* state, MPI_Comm comm) {
    if (members.empty() || state == nullptr || comm == MPI_COMM_NULL) return false;
    if (!state->usable || !state->poolable || state->frozen || state->window_bytes() > kMaxWindowBytes) return false;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_closed || g_kept.count(members) != 0) return false;
    g_kept[members] = Kept{Entry{state, comm}, false};
    return true;
}

const ShmState* reserve(const std::vector<int>& members) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find(members);
    if (it == g_kept.end() || it->second.reserved) return nullptr;
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
        for (auto& [members, kept] : g_kept) entries.push_back(kept.entry);
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
