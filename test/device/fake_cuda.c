// A stand-in for the CUDA driver (libcuda.so.1) for the device-memory tests (test_device.py; docs/device.md): its
// "device memory" is address space mapped PROT_NONE, so host code that touches it dies with SIGSEGV, as host code
// touching real GPU memory would. cuPointerGetAttributes answers as the driver does for the attributes ARShim asks:
// memory type 2 (device) with the allocation's range for a pointer inside an allocation, memory type 0 otherwise.
// fake_cuda_host_access() opens or closes the allocations to the host: the GPU-aware library (the test program's
// PMPI_Allreduce) and the test's own checks use it.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_ALLOCATIONS 64

static struct {
    uintptr_t start;
    size_t size;
} allocations[MAX_ALLOCATIONS];
static int host_access;  // allocations are open to the host (inside the "GPU-aware" library)

void* fake_cuda_malloc(size_t size) {
    if (size == 0) size = 1;
    for (int i = 0; i < MAX_ALLOCATIONS; ++i)
        if (allocations[i].size == 0) {
            void* p = mmap(NULL, size, host_access ? PROT_READ | PROT_WRITE : PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return NULL;
            allocations[i].start = (uintptr_t)p;
            allocations[i].size = size;
            return p;
        }
    return NULL;
}

void fake_cuda_free(void* p) {
    for (int i = 0; i < MAX_ALLOCATIONS; ++i)
        if (allocations[i].size != 0 && allocations[i].start == (uintptr_t)p) {
            munmap(p, allocations[i].size);
            allocations[i].size = 0;
        }
}

// Returns the previous state.
int fake_cuda_host_access(int open) {
    const int was = host_access;
    for (int i = 0; i < MAX_ALLOCATIONS; ++i)
        if (allocations[i].size != 0)
            mprotect((void*)allocations[i].start, allocations[i].size, open ? PROT_READ | PROT_WRITE : PROT_NONE);
    host_access = open;
    return was;
}

// Whether `p` lies in a "device" allocation (the Level Zero double asks it too: fake_level_zero.c).
int fake_cuda_is_device(uintptr_t p) {
    for (int i = 0; i < MAX_ALLOCATIONS; ++i)
        if (allocations[i].size != 0 && p >= allocations[i].start && p < allocations[i].start + allocations[i].size)
            return 1;
    return 0;
}

// The driver API's signature; attribute numbers as cuda.h defines them.
int cuPointerGetAttributes(unsigned count, int* attributes, void** data, unsigned long long ptr) {
    int found = -1;
    for (int i = 0; i < MAX_ALLOCATIONS; ++i)
        if (allocations[i].size != 0 && ptr >= allocations[i].start && ptr < allocations[i].start + allocations[i].size)
            found = i;
    for (unsigned a = 0; a < count; ++a) {
        switch (attributes[a]) {
            case 2:  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE: CU_MEMORYTYPE_DEVICE, or 0 for memory the driver does not know
                *(unsigned*)data[a] = found >= 0 ? 2u : 0u;
                break;
            case 8:  // CU_POINTER_ATTRIBUTE_IS_MANAGED
                *(unsigned*)data[a] = 0;
                break;
            case 11:  // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
                *(unsigned long long*)data[a] = found >= 0 ? allocations[found].start : 0;
                break;
            case 12:  // CU_POINTER_ATTRIBUTE_RANGE_SIZE
                *(size_t*)data[a] = found >= 0 ? allocations[found].size : 0;
                break;
            default:
                return 1;  // CUDA_ERROR_INVALID_VALUE
        }
    }
    return 0;
}
