#include "shim/base/library_bugs.h"

#include "shim/base/mpi_types.h"

namespace arshim::bugs {

std::string activate(const std::string& library_version) {
    const auto& table = policy::library_bugs();
    const policy::LibraryVersion version = policy::parse_library_version(library_version);
    std::string active;
    for (std::size_t i = 0; i < table.size() && i < kMaxEntries; ++i) {
        if (!policy::affects(table[i], version)) continue;
        bool any = false;
        for (const std::string& name : policy::bug_datatypes(table[i]))
            any |= mark_library_bug(name.c_str(), table[i].ops, static_cast<int>(i));
        if (!any) continue;
        g_in_force[i].store(true, std::memory_order_relaxed);
        active += (active.empty() ? "" : ", ") + std::string(table[i].id);
    }
    return active;
}

}  // namespace arshim::bugs
