// Memory registrations for SHARP operations. sharp_coll_reg_mr has no cache of its own and registering costs
// about as much as a small reduction, so user buffers that come back call after call (the common case) are
// registered once and kept.
//
// A kept registration is only safe while its pages stay mapped: after free()/munmap() the address range may be
// reused by new pages while the registration still pins the old ones, and SHARP would read and write those. Entries
// are therefore invalidated by the process's memory-unmap events, taken from UCX's memory hooks (libucm's
// UCM_EVENT_VM_UNMAPPED, the mechanism UCX's and UCC's own registration caches use) when libucm is already loaded
// in the process (both MPIs here load UCX). Without such events nothing is kept: buffers are registered for one call
// and released at its end. The cache is bounded (kSlots entries, kMaxBytes of user memory; least recently used out
// first). ARShim-owned memory (shared-memory windows, scratch buffers) is registered once and released with the
// group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shim/sharp/lib.h"

namespace arshim::sharp {

class RegCache {
public:
    static constexpr int kSlots = 32;
    static constexpr uint64_t kMaxBytes = uint64_t{512} << 20;

    RegCache() = default;
    ~RegCache() { clear(); }
    RegCache(const RegCache&) = delete;
    RegCache& operator=(const RegCache&) = delete;

    void attach(const Api* api, ::sharp_coll_context* context);
    // A memory handle covering [p, p + len) of user memory; nullptr with *rc set on failure.
    void* user(const void* p, std::size_t len, int* rc);
    // A memory handle for ARShim-owned memory that stays mapped until clear().
    void* owned(const void* p, std::size_t len, int* rc);
    // Releases the registrations made for the current call only (when no unmap events are available).
    void end_call();
    // Releases every registration (before the SHARP context is finalized).
    void clear();

private:
    void* reg(uintptr_t start, uintptr_t end, int* rc);
    void release_stale();
    int free_slot_or_evict(uint64_t incoming);

    const Api* api_ = nullptr;
    ::sharp_coll_context* context_ = nullptr;
    int table_ = -1;       // index of this cache's slot table (see .cpp), -1: nothing kept
    uint64_t tick_ = 0;
    std::vector<void*> call_mrs_;  // per-call registrations
    struct Owned {
        uintptr_t start, end;
        void* mr;
    };
    std::vector<Owned> owned_mrs_;  // ARShim-owned memory, until clear()
};

// True when unmap events reach the cache (libucm loaded and its handler installed). Decided once per process.
bool unmap_events_available();

}  // namespace arshim::sharp
