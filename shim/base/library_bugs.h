// The known library bugs this process routes around (policy/library_bugs.h): activated once at init against the
// library's version, and counted per entry (calls that hit an entry: computed with ARShim's kernels instead).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "policy/library_bugs.h"

namespace arshim::bugs {

constexpr std::size_t kMaxEntries = 8;  // entries of policy::library_bugs() (static_assert in the .cpp)

inline std::atomic<uint64_t> g_calls[kMaxEntries];
inline std::atomic<bool> g_in_force[kMaxEntries];  // set by activate(): the entries that affect this library
inline void count(int entry) {
    if (entry >= 0 && static_cast<std::size_t>(entry) < kMaxEntries)
        g_calls[entry].fetch_add(1, std::memory_order_relaxed);
}
inline uint64_t calls(std::size_t entry) { return g_calls[entry].load(std::memory_order_relaxed); }
// The entry's id, "" for an index beyond the table.
inline const char* entry_id(std::size_t entry) {
    const auto& table = policy::library_bugs();
    return entry < table.size() ? table[entry].id : "";
}

// Whether the entry with this id affects this process's library (activated at init); false for an unknown id.
inline bool in_force(const char* id) {
    for (std::size_t i = 0; i < kMaxEntries; ++i)
        if (*entry_id(i) != '\0' && std::string(entry_id(i)) == id) return g_in_force[i].load(std::memory_order_relaxed);
    return false;
}

// At init, after build_type_map(): marks the (datatype, op) pairs of every entry that affects `library_version`
// (MPI_Get_library_version's text). Returns the ids of the entries activated, separated by ", ".
std::string activate(const std::string& library_version);

}  // namespace arshim::bugs
