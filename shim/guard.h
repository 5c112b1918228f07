// Re-entry guard. ARShim's own MPI calls go to PMPI_*, but an MPI library (or a tool stacked under ARShim) may
// still call the public MPI_Allreduce while ARShim is working, and a second interception there would recurse
// into the engine. While a thread is inside ARShim, its MPI_Allreduce calls go straight to PMPI_Allreduce.
#pragma once

namespace arshim {

inline thread_local bool t_inside_shim = false;

class ReentryGuard {
public:
    ReentryGuard() : was_inside_(t_inside_shim) { t_inside_shim = true; }
    ~ReentryGuard() { t_inside_shim = was_inside_; }
    ReentryGuard(const ReentryGuard&) = delete;
    ReentryGuard& operator=(const ReentryGuard&) = delete;
    static bool active() { return t_inside_shim; }

private:
    bool was_inside_;
};

}  // namespace arshim
