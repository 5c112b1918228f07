// Re-entry guard. ARShim's own MPI calls go to PMPI_*, but an MPI library (or a tool stacked under ARShim) may
// still call the public MPI_Allreduce while ARShim is working, and a second interception there would recurse
// into the engine. While a thread is inside ARShim, its MPI_Allreduce calls go straight to PMPI_Allreduce.
#pragma once

namespace arshim {

// Initial-exec TLS: one load instead of a __tls_get_addr call per access (the library is preloaded, so static TLS
// is available).
inline thread_local bool t_inside_shim __attribute__((tls_model("initial-exec"))) = false;

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
