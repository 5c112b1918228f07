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

// At init, after build_type_map(): marks the (datatype, op) pairs of every entry that affects `library_version`
// (MPI_Get_library_version's text). Returns the ids of the entries activated, separated by ", ".
std::string activate(const std::string& library_version);

}  // namespace arshim::bugs
