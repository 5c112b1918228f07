// A stand-in for the Level Zero loader (libze_loader.so.1) for the device-memory tests (test_device.py;
// docs/device.md), on top of the CUDA double's allocator (fake_cuda.c, compiled into this library too): its "device
// memory" is mapped PROT_NONE. TEST CODE ONLY, never installed. FAKE_ZE_DEVICES (default 1) says how many devices the
// one driver has: 0 plays an MPI built with Level Zero support on a machine without a GPU (Debian's MPICH 5 links the
// loader everywhere); FAKE_ZE_DRIVERS=0 a loader with no driver installed (zeInit fails, as the real loader does
// then). zeMemGetAllocProperties answers as the driver does: ZE_MEMORY_TYPE_DEVICE for a pointer inside an
// allocation, ZE_MEMORY_TYPE_UNKNOWN for other (host) memory.
#include <stdint.h>
#include <stdlib.h>

int fake_cuda_is_device(uintptr_t p);  // fake_cuda.c

static int env_count(const char* name) {
    const char* v = getenv(name);
    return v != NULL ? atoi(v) : 1;
}

static int g_driver = 1, g_context = 2, g_device = 3;

int zeInit(unsigned flags) {
    (void)flags;
    return env_count("FAKE_ZE_DRIVERS") > 0 ? 0 : 0x78000001;  // ZE_RESULT_ERROR_UNINITIALIZED
}

int zeDriverGet(uint32_t* count, void** drivers) {
    const uint32_t have = env_count("FAKE_ZE_DRIVERS") > 0 ? 1 : 0;
    if (drivers != NULL && *count > 0 && have) drivers[0] = &g_driver;
    *count = have;
    return 0;
}

int zeDeviceGet(void* driver, uint32_t* count, void** devices) {
    if (driver != &g_driver) return 0x78000004;  // ZE_RESULT_ERROR_INVALID_ARGUMENT
    const uint32_t have = (uint32_t)env_count("FAKE_ZE_DEVICES");
    for (uint32_t i = 0; devices != NULL && i < have && i < *count; ++i) devices[i] = &g_device;
    *count = have;
    return 0;
}

typedef struct {
    int stype;
    const void* next;
    unsigned flags;
} ContextDesc;

int zeContextCreate(void* driver, const ContextDesc* desc, void** context) {
    if (driver != &g_driver || desc == NULL || desc->stype != 0xd) return 0x78000004;
    *context = &g_context;
    return 0;
}

typedef struct {
    int stype;
    void* next;
    int type;
    uint64_t id;
    uint64_t page_size;
} AllocationProperties;

int zeMemGetAllocProperties(void* context, const void* ptr, AllocationProperties* properties, void** device) {
    if (context != &g_context || properties == NULL || properties->stype != 0x17) return 0x78000004;
    properties->type = fake_cuda_is_device((uintptr_t)ptr) ? 2 : 0;  // DEVICE or UNKNOWN
    if (device != NULL) *device = properties->type == 2 ? &g_device : NULL;
    return 0;
}
