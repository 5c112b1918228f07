#include "shim/sharp/regcache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "shim/base/log.h"
#include "shim/stats/sharp_counts.h"

namespace arshim::sharp {

namespace {

// The slot tables live in static storage, so the unmap callback (any thread, any time, possibly inside malloc)
// only ever touches memory that is never freed, takes no lock and allocates nothing. A cache claims one table.
constexpr int kTables = 64;
enum : uint8_t { kFree = 0, kValid = 1, kStale = 2 };

struct Slot {
    std::atomic<uintptr_t> start{0};
    std::atomic<uintptr_t> end{0};
    std::atomic<uint8_t> state{kFree};
    // Owner thread only:
    void* mr = nullptr;
    uint64_t last_use = 0;
};

struct Table {
    std::atomic<bool> claimed{false};
    Slot slots[RegCache::kSlots];
};

Table g_tables[kTables];

// --- libucm (UCX) memory events, declared here: only the ABI facts used (event bit, callback, event layout) ---
constexpr int kUcmEventVmUnmapped = 1 << 17;
struct UcmVmEvent {  // the vm_unmapped member of ucm_event_t (a union): address, then size
    void* address;
    std::size_t size;
};
using UcmCallback = void (*)(int event_type, void* event, void* arg);
using UcmSetHandler = int (*)(int events, int priority, UcmCallback cb, void* arg);  // returns ucs_status_t

void on_unmap(int, void* event, void*) {
    const auto* vm = static_cast<const UcmVmEvent*>(event);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(vm->address);
    const uintptr_t hi = lo + vm->size;
    for (Table& table : g_tables) {
        if (!table.claimed.load(std::memory_order_acquire)) continue;
        for (Slot& slot : table.slots) {
            if (slot.state.load(std::memory_order_acquire) != kValid) continue;
            if (slot.start.load(std::memory_order_relaxed) < hi && lo < slot.end.load(std::memory_order_relaxed)) {
                uint8_t expected = kValid;
                slot.state.compare_exchange_strong(expected, kStale, std::memory_order_acq_rel);
            }
        }
    }
}

bool install_unmap_events() {
    // Only a libucm the process already has (loaded by the MPI library's UCX): ARShim does not bring UCX's memory
    // hooks into a process that does not use them.
    void* ucm = dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (ucm == nullptr) return false;
    auto set_handler = reinterpret_cast<UcmSetHandler>(dlsym(ucm, "ucm_set_event_handler"));
    if (set_handler == nullptr) return false;
    return set_handler(kUcmEventVmUnmapped, 1000, on_unmap, nullptr) == 0;  // UCS_OK
}

uintptr_t page_size() {
    static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
    return size;
}

}  // namespace

bool unmap_events_available() {
    static std::once_flag once;
    static bool available = false;
    std::call_once(once, [] {
        available = install_unmap_events();
        log::debug("SHARP registration cache: {}", available ? "kept, invalidated by UCX memory events"
                                                             : "no memory events (libucm not loaded): per call");
    });
    return available;
}

void RegCache::attach(const Api* api, ::sharp_coll_context* context) {
    api_ = api;
    context_ = context;
    if (!unmap_events_available()) return;
    for (int t = 0; t < kTables; ++t) {
        bool expected = false;
        if (g_tables[t].claimed.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
            table_ = t;
            return;
        }
    }
}

void* RegCache::reg(uintptr_t start, uintptr_t end, int* rc) {
    void* mr = nullptr;
    *rc = api_->reg_mr(context_, reinterpret_cast<void*>(start), end - start, &mr);
    return *rc == 0 ? mr : nullptr;
}

// Deregisters entries whose memory was unmapped since (the handle pins pages the address no longer shows).
void RegCache::release_stale() {
    for (Slot& slot : g_tables[table_].slots) {
        if (slot.state.load(std::memory_order_acquire) != kStale) continue;
        api_->dereg_mr(context_, slot.mr);
        slot.mr = nullptr;
        slot.state.store(kFree, std::memory_order_release);
        count(Counter::reg_invalidations);
    }
}

// A free slot, after evicting least recently used entries until one is free and the kept bytes stay within
// kMaxBytes.
int RegCache::free_slot_or_evict(uint64_t incoming) {
    Table& table = g_tables[table_];
    for (;;) {
        uint64_t kept = 0;
        int free_slot = -1, victim = -1;
        for (int i = 0; i < kSlots; ++i) {
            Slot& slot = table.slots[i];
            if (slot.state.load(std::memory_order_acquire) == kFree) {
                if (free_slot < 0) free_slot = i;
                continue;
            }
            kept += slot.end.load(std::memory_order_relaxed) - slot.start.load(std::memory_order_relaxed);
            if (victim < 0 || slot.last_use < table.slots[victim].last_use) victim = i;
        }
        if (free_slot >= 0 && kept + incoming <= kMaxBytes) return free_slot;
        if (victim < 0) return free_slot;  // nothing kept
        Slot& slot = table.slots[victim];
        slot.state.store(kFree, std::memory_order_release);
        api_->dereg_mr(context_, slot.mr);
        slot.mr = nullptr;
        count(Counter::reg_evictions);
    }
}

void* RegCache::user(const void* p, std::size_t len, int* rc) {
    *rc = 0;
    const uintptr_t page = page_size();
    const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + len + page - 1) & ~(page - 1);
    if (table_ >= 0) {
        release_stale();
        Table& table = g_tables[table_];
        for (Slot& slot : table.slots) {
            if (slot.state.load(std::memory_order_acquire) != kValid) continue;
            if (slot.start.load(std::memory_order_relaxed) <= start && end <= slot.end.load(std::memory_order_relaxed)) {
                slot.last_use = ++tick_;
                count(Counter::reg_hits);
                return slot.mr;
            }
        }
        count(Counter::reg_misses);
        const uint64_t bytes = end - start;
        const int index = bytes <= kMaxBytes ? free_slot_or_evict(bytes) : -1;
        if (index >= 0) {
            void* mr = reg(start, end, rc);
            if (mr == nullptr) return nullptr;
            Slot& slot = table.slots[index];
            slot.mr = mr;
            slot.last_use = ++tick_;
            slot.start.store(start, std::memory_order_relaxed);
            slot.end.store(end, std::memory_order_relaxed);
            slot.state.store(kValid, std::memory_order_release);
            return mr;
        }
    } else {
        count(Counter::reg_misses);
    }
    void* mr = reg(start, end, rc);  // for this call only
    if (mr != nullptr) call_mrs_.push_back(mr);
    return mr;
}

void* RegCache::owned(const void* p, std::size_t len, int* rc) {
    *rc = 0;
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t end = start + len;
    for (const Owned& o : owned_mrs_)
        if (o.start <= start && end <= o.end) return o.mr;
    void* mr = reg(start, end, rc);
    if (mr != nullptr) owned_mrs_.push_back({start, end, mr});
    return mr;
}

void RegCache::end_call() {
    for (void* mr : call_mrs_) api_->dereg_mr(context_, mr);
    call_mrs_.clear();
}

void RegCache::clear() {
    if (api_ == nullptr) return;
    end_call();
    for (const Owned& o : owned_mrs_) api_->dereg_mr(context_, o.mr);
    owned_mrs_.clear();
    if (table_ >= 0) {
        Table& table = g_tables[table_];
        for (Slot& slot : table.slots) {
            if (slot.state.load(std::memory_order_acquire) == kFree) continue;
            slot.state.store(kFree, std::memory_order_release);
            api_->dereg_mr(context_, slot.mr);
            slot.mr = nullptr;
        }
        table.claimed.store(false, std::memory_order_release);
        table_ = -1;
    }
    api_ = nullptr;
    context_ = nullptr;
}

}  // namespace arshim::sharp
