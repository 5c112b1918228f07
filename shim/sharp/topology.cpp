#include "shim/sharp/topology.h"

#include <dlfcn.h>
#include <sched.h>

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#if defined(__has_include)
#if __has_include(<hwloc.h>)
#include <hwloc.h>
#define ARSHIM_HAVE_HWLOC_HEADER 1
#endif
#endif

namespace arshim::sharp {

namespace {

int package_from_sysfs(int cpu) {
    const std::string path = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id";
    std::FILE* file = std::fopen(path.c_str(), "r");
    if (file == nullptr) return -1;
    int id = -1;
    if (std::fscanf(file, "%d", &id) != 1) id = -1;
    std::fclose(file);
    return id;
}

// The package of every CPU this process may run on, if there is exactly one; else of the CPU it runs on now.
int socket_from_sysfs() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        std::set<int> packages;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set)) packages.insert(package_from_sysfs(cpu));
        if (packages.size() == 1 && *packages.begin() >= 0) return *packages.begin();
    }
    const int cpu = sched_getcpu();
    return cpu >= 0 ? package_from_sysfs(cpu) : -1;
}

#if defined(ARSHIM_HAVE_HWLOC_HEADER)
// hwloc through dlopen (the shim links no hwloc): only exported functions, and the object layout of the header's
// major API version, which must be the library's.
int socket_from_hwloc() {
    void* lib = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return -2;
    struct {
        unsigned (*api_version)(void);
        int (*init)(hwloc_topology_t*);
        int (*load)(hwloc_topology_t);
        void (*destroy)(hwloc_topology_t);
        int (*type_depth)(hwloc_topology_t, hwloc_obj_type_t);
        unsigned (*nbobjs)(hwloc_topology_t, int);
        hwloc_obj_t (*obj)(hwloc_topology_t, int, unsigned);
        int (*get_cpubind)(hwloc_topology_t, hwloc_cpuset_t, int);
        int (*last_cpu)(hwloc_topology_t, hwloc_cpuset_t, int);
        hwloc_bitmap_t (*bitmap_alloc)(void);
        void (*bitmap_free)(hwloc_bitmap_t);
        int (*isincluded)(hwloc_const_bitmap_t, hwloc_const_bitmap_t);
        int (*intersects)(hwloc_const_bitmap_t, hwloc_const_bitmap_t);
    } f{};
    auto sym = [lib](auto* out, const char* name) {
        *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(dlsym(lib, name));
        return *out != nullptr;
    };
    bool ok = sym(&f.api_version, "hwloc_get_api_version") && sym(&f.init, "hwloc_topology_init") &&
              sym(&f.load, "hwloc_topology_load") && sym(&f.destroy, "hwloc_topology_destroy") &&
              sym(&f.type_depth, "hwloc_get_type_depth") && sym(&f.nbobjs, "hwloc_get_nbobjs_by_depth") &&
              sym(&f.obj, "hwloc_get_obj_by_depth") && sym(&f.get_cpubind, "hwloc_get_cpubind") &&
              sym(&f.last_cpu, "hwloc_get_last_cpu_location") && sym(&f.bitmap_alloc, "hwloc_bitmap_alloc") &&
              sym(&f.bitmap_free, "hwloc_bitmap_free") && sym(&f.isincluded, "hwloc_bitmap_isincluded") &&
              sym(&f.intersects, "hwloc_bitmap_intersects");
    // The library stays loaded (an MPI library may use the same copy).
    if (!ok || (f.api_version() >> 16) != (HWLOC_API_VERSION >> 16)) return -2;
    int socket = -1;
    hwloc_topology_t topology = nullptr;
    if (f.init(&topology) == 0) {
        if (f.load(topology) == 0) {
            const int depth = f.type_depth(topology, HWLOC_OBJ_PACKAGE);
            hwloc_bitmap_t where = f.bitmap_alloc();
            if (depth >= 0 && where != nullptr) {
                const unsigned packages = f.nbobjs(topology, depth);
                auto inside = [&](bool include) {
                    for (unsigned i = 0; i < packages; ++i) {
                        hwloc_obj_t package = f.obj(topology, depth, i);
                        if (package == nullptr || package->cpuset == nullptr) continue;
                        if (include ? f.isincluded(where, package->cpuset) : f.intersects(where, package->cpuset))
                            return static_cast<int>(i);
                    }
                    return -1;
                };
                if (f.get_cpubind(topology, where, 0) == 0) socket = inside(true);  // bound within one package
                if (socket < 0 && f.last_cpu(topology, where, 0) == 0) socket = inside(false);
            }
            if (where != nullptr) f.bitmap_free(where);
        }
        f.destroy(topology);
    }
    return socket;
}
#else
int socket_from_hwloc() { return -2; }
#endif

}  // namespace

int socket_of_process() {
    static std::once_flag once;
    static int socket = -1;
    std::call_once(once, [] {
        socket = socket_from_hwloc();
        if (socket < 0) socket = socket_from_sysfs();
    });
    return socket;
}

}  // namespace arshim::sharp
