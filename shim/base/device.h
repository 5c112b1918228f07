// Device (GPU) memory: CUDA-, ROCm- and Level-Zero-aware MPI libraries accept GPU buffers in MPI_Allreduce, and
// ARShim's host paths and kernels would dereference them (docs/device.md). Each call's buffers are classified through
// the GPU runtime the process already loaded, found with dlopen(RTLD_NOLOAD) + dlsym once, at MPI_Init (after the
// library's own initialization: a GPU-aware MPI loads its runtime there). ARShim never links or loads a runtime.
//
// The engine asks only where the job has a runtime on some rank (agreed at MPI_Init: g_job_has_runtime), so a job
// without one pays one predictable branch per routed call. Classifications are cached per thread by address range
// and dropped on the process's memory events (UCX's libucm: unmap and device-memory free), like the SHARP
// registration cache; without those events nothing is cached.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace arshim::device {

enum class Runtime : uint8_t { none, cuda, hip, level_zero };
inline constexpr const char* kRuntimeNames[] = {"none", "cuda", "hip", "level_zero"};

// Some rank of the job has a GPU runtime (agreed at MPI_Init): every servable call's buffers are classified and the
// classification agreed by the call's ranks. Written once at init, before any call is routed.
inline bool g_job_has_runtime = false;

// Looks for a GPU runtime loaded in this process, once (at MPI_Init). Returns which (none when there is none).
Runtime lookup();
Runtime runtime();  // what lookup() found
// What lookup() found, in words for the start line: the runtime, or a loaded runtime that is inactive and why (a
// Level Zero loader with no driver or no device: an MPI built with Level Zero support links it on every machine);
// empty when nothing was loaded.
const char* found();

// Whether `p` is memory the host must not touch (device memory, or managed memory that the runtime may migrate).
// Only meaningful after lookup() found a runtime; false for null pointers and MPI_IN_PLACE-like sentinels the caller
// filters. Level Zero is asked through a context of ARShim's own on the driver with a device (zeMemGetAllocProperties);
// where none could be made, every pointer counts as device memory (the library serves every call).
bool is_device(const void* p);

// Per-process counts for the tests and the query API.
inline std::atomic<uint64_t> g_queries{0};    // runtime queries made
inline std::atomic<uint64_t> g_cache_hits{0};  // classifications answered by the cache

}  // namespace arshim::device
