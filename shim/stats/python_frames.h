// The Python caller of an MPI_Allreduce made through mpi4py. mpi4py's extension module is the C caller, and the C
// frames above it are the interpreter's, which name no user code; the user's call site is the interpreter's current
// Python frame. It is read through CPython's C API, found with dlsym(RTLD_DEFAULT) in the running process: ARShim
// never links libpython, and nothing here runs in a process without an interpreter.
//
// The GIL: mpi4py calls MPI with it released (`with nogil`), and the frame API needs it. A capture takes it with
// PyGILState_Ensure and gives it back with PyGILState_Release, and only on a thread that already has a Python thread
// state (none is ever created) while the interpreter is initialized and not finalizing (CPython terminates a
// non-main thread that takes the GIL during finalization). If another thread holds the GIL, the call waits for it,
// as any C extension would; ARSHIM_STATS_PYTHON=0 never takes it.
//
// Per call: the code object and instruction offset (PyFrame_GetCode, PyFrame_GetLasti) of the innermost Python
// frames, two words each: no allocation in ARShim. The first time a thread records a site, its frames are
// registered: file, function and line are resolved at once, because the interpreter may be gone by MPI_Finalize
// (mpi4py finalizes MPI from a Py_AtExit hook, after the interpreter was torn down), and the code object is kept
// alive so that its address is never reused by another one. Finalize reads only the registry.
#pragma once

#include <cstdint>
#include <string>

#include "shim/stats/callsites.h"

namespace arshim::callsites::python {

constexpr uint32_t kWordsPerFrame = 2;  // (code object, position)
constexpr uint32_t kMaxFrames = stats::kMaxDepth / kWordsPerFrame;
constexpr std::size_t kMaxRegistered = 4096;  // distinct (code, position) pairs resolved per process

// Once, at warm-up: finds the API in the process. "" when frames can be captured, else why not (for the log).
std::string find_api();

// The GIL for one capture (RAII). ok() is false when this thread may not take it (see above): the caller then
// records mpi4py's module frame, as without Python call sites.
class Capture {
public:
    Capture();
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;
    bool ok() const { return ok_; }

    // Up to `max_frames` innermost Python frames as (code, position) word pairs; the number of words written
    // (0: the thread runs no Python code).
    uint32_t frames(uintptr_t* words, uint32_t max_frames);
    // A site this thread records for the first time: resolve and keep its frames (takes the registry lock).
    void register_frames(const uintptr_t* words, uint32_t count);
    // The innermost frame, resolved now: "step (train.py:118)"; "" without one.
    std::string describe_innermost();

private:
    int state_ = 0;
    bool ok_ = false;
};

// Finalize: a registered (code, position) as a frame (function, file, line, binding "python"); function "?" when it
// was not registered (more than kMaxRegistered distinct frames: logged once when it happened).
Frame resolve(uintptr_t code, uintptr_t position);

}  // namespace arshim::callsites::python
