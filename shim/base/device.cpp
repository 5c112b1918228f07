#include "shim/base/device.h"

#include <dlfcn.h>

#include <algorithm>
#include <initializer_list>
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
// Level Zero (ze_api.h, loader 1.x): allocations are asked about through a context; a context of ARShim's own on the
// first driver, as MPICH's own Level Zero support does (MPL's gpu_ze): the driver's allocation table is per driver,
// so another context of the same driver answers for the application's allocations.
using ZeInit = int (*)(unsigned);
using ZeDriverGet = int (*)(uint32_t*, void**);
using ZeDeviceGet = int (*)(void*, uint32_t*, void**);
struct ZeContextDesc {
    int stype;  // ZE_STRUCTURE_TYPE_CONTEXT_DESC
    const void* next;
    unsigned flags;
};
using ZeContextCreate = int (*)(void*, const ZeContextDesc*, void**);
struct ZeAllocationProperties {
    int stype;  // ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES
    void* next;
    int type;  // ze_memory_type_t
    uint64_t id;
    uint64_t page_size;
};
using ZeMemGetAllocProperties = int (*)(void*, const void*, ZeAllocationProperties*, void**);
constexpr int kZeContextDesc = 0xd;
constexpr int kZeAllocationProperties = 0x17;
constexpr int kZeMemoryUnknown = 0;  // not an allocation of the driver: host memory
constexpr int kZeMemoryHost = 1;     // the driver's host allocation: the host may touch it

Runtime g_runtime = Runtime::none;
CuPointerGetAttributes g_cuda = nullptr;
HipPointerGetAttributes g_hip = nullptr;
ZeMemGetAllocProperties g_ze = nullptr;
void* g_ze_context = nullptr;
const char* g_note = "";  // what lookup() found, for the start line

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

bool ask_level_zero(uintptr_t p, Entry* out) {
    ZeAllocationProperties properties{kZeAllocationProperties, nullptr, kZeMemoryUnknown, 0, 0};
    if (g_ze(g_ze_context, reinterpret_cast<const void*>(p), &properties, nullptr) != 0) return false;
    out->device = properties.type != kZeMemoryUnknown && properties.type != kZeMemoryHost;
    out->start = p;
    out->end = p + 1;  // no range without a second call: the pointer itself is cached
    return true;
}

// A Level Zero loader is loaded (an MPI built with Level Zero support links it, GPU or not). Whether the process can
// have device memory at all: a driver with a device. zeInit may be called any number of times (the spec): with no
// driver installed it fails, and the runtime is inactive. With a device, a context of ARShim's own answers for
// pointers; without one (it could not be made) every call counts as device memory.
Runtime find_level_zero(void* loader) {
    auto init = reinterpret_cast<ZeInit>(dlsym(loader, "zeInit"));
    auto driver_get = reinterpret_cast<ZeDriverGet>(dlsym(loader, "zeDriverGet"));
    auto device_get = reinterpret_cast<ZeDeviceGet>(dlsym(loader, "zeDeviceGet"));
    auto context_create = reinterpret_cast<ZeContextCreate>(dlsym(loader, "zeContextCreate"));
    g_ze = reinterpret_cast<ZeMemGetAllocProperties>(dlsym(loader, "zeMemGetAllocProperties"));
    if (init == nullptr || driver_get == nullptr || device_get == nullptr || context_create == nullptr || g_ze == nullptr) {
        g_note = "level_zero loaded without its API";
        return Runtime::none;
    }
    uint32_t drivers = 0;
    if (init(0) != 0 || driver_get(&drivers, nullptr) != 0 || drivers == 0) {
        g_note = "level_zero loaded, no driver";
        return Runtime::none;
    }
    void* handles[16] = {};
    drivers = std::min<uint32_t>(drivers, 16);
    if (driver_get(&drivers, handles) != 0) drivers = 0;
    void* with_device = nullptr;
    for (uint32_t d = 0; d < drivers && with_device == nullptr; ++d) {
        uint32_t devices = 0;
        if (handles[d] != nullptr && device_get(handles[d], &devices, nullptr) == 0 && devices > 0) with_device = handles[d];
    }
    if (with_device == nullptr) {
        g_note = "level_zero loaded, no device";
        return Runtime::none;
    }
    const ZeContextDesc desc{kZeContextDesc, nullptr, 0};
    if (context_create(with_device, &desc, &g_ze_context) != 0 || g_ze_context == nullptr) {
        g_ze_context = nullptr;
        g_note = "level_zero with a device, no context to ask with: every call to the library";
    } else {
        g_note = "level_zero with a device: buffers asked through ARShim's context";
    }
    return Runtime::level_zero;
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
        if (g_runtime == Runtime::none)
            if (void* ze = loaded("libze_loader.so.1")) g_runtime = find_level_zero(ze);
        if (g_runtime == Runtime::cuda) g_note = "cuda";
        if (g_runtime == Runtime::hip) g_note = "hip";
        if (g_runtime != Runtime::none) g_events = install_memory_events();
    });
    return g_runtime;
}

Runtime runtime() { return g_runtime; }

const char* found() { return g_note; }

bool is_device(const void* ptr) {
    if (ptr == nullptr) return false;
    if (g_runtime == Runtime::none) return false;
    if (g_runtime == Runtime::level_zero && g_ze_context == nullptr) return true;  // nothing to ask with
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
    const bool answered = g_runtime == Runtime::cuda  ? ask_cuda(p, &answer)
                          : g_runtime == Runtime::hip ? ask_hip(p, &answer)
                                                      : ask_level_zero(p, &answer);
    if (!answered) return true;
    if (g_events) cache.entry[cache.next++ % kEntries] = answer;
    return answer.device;
}

}  // namespace arshim::device
