// Call sites of MPI_Allreduce: captured per call as return addresses (no allocation, no lock after warm-up),
// symbolized once at finalize to function + file:line (libdw, loaded at run time when present; else dladdr and
// module+offset).
//
// Depth 1 (ARSHIM_STATS_DEPTH=1, the default) is the caller of MPI_Allreduce: the entry point's return address,
// nearly free. When that caller is a binding layer rather than the user's code (MPICH's Fortran library calls the C
// MPI_Allreduce), or when more frames are wanted, the stack is walked with libunwind and the binding frames are
// skipped. When it is mpi4py's extension module, the C frames above it are the Python interpreter's: the site is the
// program's Python frame (shim/stats/python_frames.h), or mpi4py's module frame under ARSHIM_STATS_PYTHON=0 or
// without a usable interpreter API.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "shim/stats/counters.h"

namespace arshim::callsites {

// Executable ranges of modules that are MPI bindings or MPI libraries (libmpi*, mpi4py's MPI.*.so), found once at
// warm-up; a caller there means the user's frame is further up.
struct Range {
    uintptr_t lo = 0;
    uintptr_t hi = 0;
};
constexpr int kMaxBindingRanges = 16;
inline Range g_binding[kMaxBindingRanges];
inline int g_binding_count = 0;
inline Range g_python_binding;  // mpi4py: its caller is the Python frame, never a walk
inline uint32_t g_depth = 1;
inline bool g_python_frames = false;  // mpi4py calls are attributed to Python frames (python_frames.h)

// Once per process, at init (shim/core/runtime.cpp): the module ranges, the depth (ARSHIM_STATS_DEPTH) and whether
// Python frames are wanted (ARSHIM_STATS_PYTHON) and can be read. Returns why they cannot, "" when they can or are
// not wanted or the process has no mpi4py.
std::string warm_up(int64_t depth, bool python_frames);

inline bool in(const Range& r, uintptr_t pc) { return pc - r.lo < r.hi - r.lo; }
inline bool is_binding(uintptr_t pc) {
    for (int i = 0; i < g_binding_count; ++i)
        if (in(g_binding[i], pc)) return true;
    return false;
}

inline uint64_t hash_frames(const uintptr_t* frames, uint32_t depth, bool python = false) {
    uint64_t h = depth | uint64_t{python} << 32;
    for (uint32_t i = 0; i < depth; ++i) h = (h ^ frames[i]) * 0x9E3779B97F4A7C15ull;
    return (h ^ h >> 29) | 1u;  // never 0 (0 marks a free slot)
}

// `on_new()` runs when this thread records the site for the first time (Python frames are registered then).
template <typename OnNew>
void add_site(stats::ThreadCounters& t, const uintptr_t* frames, uint32_t depth, bool python,
              const stats::Sample& sample, OnNew&& on_new) {
    const uint64_t h = hash_frames(frames, depth, python);
    auto same = [&](const stats::SiteKey& k) {
        if (k.hash != h || k.depth != depth || k.python != python) return false;
        for (uint32_t i = 0; i < depth; ++i)
            if (k.frames[i] != frames[i]) return false;
        return true;
    };
    auto init = [&](stats::SiteKey& k) {
        k.hash = h;
        k.depth = depth;
        k.python = python;
        for (uint32_t i = 0; i < depth; ++i) k.frames[i] = frames[i];
        on_new();
    };
    if (stats::Cell* cell = t.sites.find_or_emplace(h, same, init))
        cell->add(sample);
    else
        t.sites_overflow.add(sample);
}
inline void add_site(stats::ThreadCounters& t, const uintptr_t* frames, uint32_t depth, const stats::Sample& sample) {
    add_site(t, frames, depth, false, sample, [] {});
}

// Walks the stack (libunwind) past ARShim's and the binding layers' frames; out of line.
void record_walk(stats::ThreadCounters& t, uintptr_t caller, const stats::Sample& sample);
// A call whose C caller is mpi4py's module at `pc`: its Python frames, or that frame (python_frames.h).
void record_python(stats::ThreadCounters& t, uintptr_t pc, const stats::Sample& sample);

// A timed call's site (only timed calls record one: the sample stands for `sample.weight` calls, so a site's calls
// and bytes are estimated unless every call is timed). `caller`: the return address the entry point saw
// (CallArgs::caller).
inline void record(stats::ThreadCounters& t, const void* caller, const stats::Sample& sample) {
    const auto pc = reinterpret_cast<uintptr_t>(caller);
    if (g_depth == 1 && !is_binding(pc)) {
        add_site(t, &pc, 1, sample);
        return;
    }
    if (in(g_python_binding, pc)) {
        record_python(t, pc, sample);
        return;
    }
    record_walk(t, pc, sample);
}

// --- finalize ---

struct Frame {
    std::string function;  // demangled; "" when unknown
    uint64_t function_offset = 0;  // of the call instruction from the function's start
    std::string file;      // source file from debug info; "" when unknown
    int line = 0;
    std::string module;    // file name of the executable or library
    uint64_t offset = 0;   // address within the module (stable across ranks, unlike the address)
    std::string binding;   // "mpi4py": mpi4py's extension module; "python": a Python function's frame
};

struct LocalSite {
    std::vector<uintptr_t> addresses;
    std::vector<Frame> frames;
    std::string key;  // identical on every rank for the same source location: the merge key across ranks
    stats::Cell cell;
};

// Every thread's call sites merged (same addresses), symbolized and merged again by key (same location).
// `overflow` receives the calls whose site did not fit in a thread's table.
std::vector<LocalSite> collect(stats::Cell* overflow);

// "function (file:line)" or "function+0x1f [module]" or "module+0x1234": one frame, for humans.
std::string describe(const Frame& frame);
// The same for a return address the entry point saw (CallArgs::caller), symbolized now (mpi4py's module: the Python
// caller): for the one-line reports of verify mode and the argument check, never on the hot path.
std::string describe_address(const void* return_address);

// Serialization of a site's frames for the cross-rank name table: fields separated by \t, frames by \n.
std::string encode(const std::vector<Frame>& frames);
std::vector<Frame> decode(const std::string& text);

}  // namespace arshim::callsites
