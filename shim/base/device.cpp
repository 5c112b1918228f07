#include "shim/base/device.h"

#include <dlfcn.h>

#include <mutex>

namespace arshim::device {

namespace {

// The runtimes' own ABI, as their headers define it (ARShim includes none of them).
// CUDA driver API: cuPointerGetAttributes(n, attributes, data, ptr); an unknown (host) pointer gets memory type 0 and
// CUDA_SUCCESS.
using CuPointerGetAttributes = int (*)(unsigned, int*, void**, unsigned long long);
constexpr int kCuMemoryType = 2;          // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kCuIsManaged = 8;           // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kCuRangeStart = 11;         // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
constexpr int kCuRangeSize = 12;          // CU_POINTER_ATTRIBUTE_RANGE_SIZE
constexpr unsigned kCuMemoryDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kCuMemoryUnified = 4;  // CU_MEMORYTYPE_UNIFIED
// HIP: hipPointerGetAttributes(attributes, ptr). The memory type enum changed numbering between ROCm 5 and 6, so only
// the fields that kept their place are read: the device and host pointers and isManaged. Device memory has a device
// pointer and no host pointer; pinned host memory has a host pointer; an unregistered host pointer is an error (ROCm 5)
// or has neither (ROCm 6).
struct HipAttributes {
    int type;  // not read (renumbered between versions)
    int device;
    void* device_pointer;
    void* host_pointer;
    int is_managed;
    unsigned allocation_flags;
};
using HipPointerGetAttributes = int (*)(HipAttributes*, const void*);

Runtime g_runtime = Runtime::none;
CuPointerGetAttributes g_cuda = nullptr;
HipPointerGetAttributes g_hip = nullptr;

void* loaded(const char* library) { return dlopen(library, RTLD_LAZY | RTLD_NOLOAD); }

// ---- the per-thread cache ----------------------------------------------------------------------------------------
// Entries hold an address range and whether it is device memory; an unknown host pointer holds itself (a range of one
// byte: host memory has no allocation range the runtime knows). The generation moves on every memory event that may
// unmap or free a cached range; a thread's entries of an older generation are stale.
std::atomic<uint64_t> g_generation{1};
bool g_events = false;  // memory events reach us (libucm): caching is safe

constexpr int kEntries = 16;
struct Entry {
    uintptr_t start = 0, end = 0;
    bool device = false;
};
struct Cache {
    uint64_t generation = 0;
    unsigned next = 0;
    Entry entry[kEntries];
};
thread_local Cache t_cache;

// libucm's event ABI (ucm/api/ucm.h): the handler's signature and the two events that can end a classification.
using UcmHandler = void (*)(int, void*, void*);
using UcmSetHandler = int (*)(int, int, UcmHandler, void*);
constexpr int kUcmVmUnmapped = 1 << 17;    // UCM_EVENT_VM_UNMAPPED
constexpr int kUcmMemTypeFree = 1 << 21;   // UCM_EVENT_MEM_TYPE_FREE
void on_memory_event(int, void*, void*) { g_generation.fetch_add(1, std::memory_order_release); }

bool install_memory_events() {
    void* ucm = loaded("libucm.so.0");
    if (ucm == nullptr) return false;
    auto set_handler = reinterpret_cast<UcmSetHandler>(dlsym(ucm, "ucm_set_event_handler"));
    return set_handler != nullptr && set_handler(kUcmVmUnmapped | kUcmMemTypeFree, 1000, on_memory_event, nullptr) == 0;
}

bool ask_cuda(uintptr_t p, Entry* out) {
    int attributes[] = {kCuMemoryType, kCuIsManaged, kCuRangeStart, kCuRangeSize};
    unsigned memory_type = 0, is_managed = 0;
    unsigned long long start = 0;
    std::size_t size = 0;
    void* data[] = {&memory_type, &is_managed, &start, &size};
    if (g_cuda(4, attributes, data, p) != 0) return false;
    out->device = memory_type == kCuMemoryDevice || memory_type == kCuMemoryUnified || is_managed != 0;
    if (out->device && start != 0 && size != 0) {
        out->start = start;
        out->end = start + size;
    } else {
        out->start = p;
        out->end = p + 1;
    }
    return true;
}

bool ask_hip(uintptr_t p, Entry* out) {
    HipAttributes a{};
    const int rc = g_hip(&a, reinterpret_cast<const void*>(p));
    out->device = rc == 0 && (a.is_managed != 0 || (a.device_pointer != nullptr && a.host_pointer == nullptr));
    out->start = p;
    out->end = p + 1;  // HIP's attributes give no range: the pointer itself is cached
    return true;
}

}  // namespace

Runtime lookup() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (void* cuda = loaded("libcuda.so.1")) {
            g_cuda = reinterpret_cast<CuPointerGetAttributes>(dlsym(cuda, "cuPointerGetAttributes"));
            if (g_cuda != nullptr) g_runtime = Runtime::cuda;
        }
        if (g_runtime == Runtime::none) {
            for (const char* name : {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
                if (void* hip = loaded(name)) {
                    g_hip = reinterpret_cast<HipPointerGetAttributes>(dlsym(hip, "hipPointerGetAttributes"));
                    if (g_hip != nullptr) {
                        g_runtime = Runtime::hip;
                        break;
                    }
                }
        }
        if (g_runtime == Runtime::none && loaded("libze_loader.so.1") != nullptr &&
            dlsym(RTLD_DEFAULT, "zeMemGetAllocProperties") != nullptr)
            g_runtime = Runtime::level_zero;
        if (g_runtime != Runtime::none) g_events = install_memory_events();
    });
    return g_runtime;
}

Runtime runtime() { return g_runtime; }

bool is_device(const void* ptr) {
    if (ptr == nullptr) return false;
    if (g_runtime == Runtime::level_zero) return true;  // no context to ask with: the library serves the call
    if (g_runtime == Runtime::none) return false;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    Cache& cache = t_cache;
    const uint64_t generation = g_generation.load(std::memory_order_acquire);
    if (g_events && cache.generation == generation) {
        for (const Entry& e : cache.entry)
            if (p >= e.start && p < e.end) {
                g_cache_hits.fetch_add(1, std::memory_order_relaxed);
                return e.device;
            }
    } else if (cache.generation != generation) {
        cache = Cache{};
        cache.generation = generation;
    }
    Entry answer;
    g_queries.fetch_add(1, std::memory_order_relaxed);
    // A failed query: the runtime cannot say, so the host must not touch it.
    if (!(g_runtime == Runtime::cuda ? ask_cuda(p, &answer) : ask_hip(p, &answer))) return true;
    if (g_events) cache.entry[cache.next++ % kEntries] = answer;
    return answer.device;
}

}  // namespace arshim::device
