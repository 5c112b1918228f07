// The node protocol's waits in the SMPI build (SimGrid's simulated MPI), compiled instead of node_wait.cpp.
//
// Under SMPI every rank is an actor of one simulation, and all actors take turns on one OS thread: a rank runs until
// it enters the simulator, and nothing preempts it. A wait that spins, calls sched_yield() or sleeps on a futex stops
// every other rank (the one it waits for too) and simulated time with it: the job hangs. So a wait here sleeps in
// simulated time on its simulated host's condition variable (SimGrid's sg_cond_t, one per host, kept as the host's
// data), and every store a node wait may be waiting for is followed by node_published() (node_shm.h), which wakes the
// host's waiters: each looks at its counter again and sleeps on unless it has its target. A wait therefore ends at
// the simulated instant of the publish that satisfies it, and a rank waiting 1 ms for the leaders' step across nodes
// costs the simulation one wake per publish on its node, not one per microsecond. (Until December 2026 the waits
// slept 10 ns, 20 ns, ... up to 1 us between looks, and ended up to 1 us late.) The ranks of a node are the ranks
// of one simulated host (the node is SMPI's MPI_COMM_TYPE_SHARED group, node_shm.cpp), so a publish and its waiters
// share a host. A store without
// node_published() would leave its waiter asleep: the simulation then ends in SimGrid's "Deadlock detected" (every
// actor waiting), loudly, never late. (A safety-net timeout was tried: with sg_cond_wait_for SimGrid 3.32 reported a
// deadlock at start-up from four ranks per host, 2 x 8 and 4 x 4; sg_cond_wait runs them.)
//
// SMPI's benchmark timer is stopped around the sleeps: it measures the host CPU time a rank spends between two MPI
// calls and charges it as computation, and while this rank sleeps the others run on the same OS thread (their CPU
// time would be charged to this rank). Nobody sleeps on a futex, so there is nobody to wake there. The protocol, its
// counters and their publishers are the same as on a real machine; only the waiting differs. (docs/architecture.md
// "The SMPI build: where it differs".)
#include <simgrid/actor.h>
#include <simgrid/cond.h>
#include <simgrid/host.h>
#include <simgrid/mutex.h>

#include "shim/paths/node_shm.h"

// Exported by libsimgrid but declared in none of its public headers.
extern "C" void smpi_bench_begin();
extern "C" void smpi_bench_end();

namespace arshim {

namespace {

// One per simulated host, made by its first rank to wait or publish and kept for the simulation (every rank of the
// simulation lives in this one process, so the heap object is the host's, whichever rank's copy of ARShim made it).
// It is the host's user data (sg_host_set_data): a program that sets its own would clash with it. A host extension
// would not, but its key is a static, and dlopen privatization gives every rank its own.
struct HostWaits {
    sg_mutex_t mutex;
    sg_cond_t published;
};

HostWaits& host_waits() {
    const sg_host_t host = sg_host_self();
    auto* waits = static_cast<HostWaits*>(sg_host_get_data(host));
    if (waits == nullptr) {
        waits = new HostWaits{sg_mutex_init(), sg_cond_init()};
        sg_host_set_data(host, waits);
    }
    return *waits;
}

void sleep_until(const std::atomic<uint64_t>& counter, uint64_t target) {
    if (counter.load(std::memory_order_acquire) >= target) return;
    smpi_bench_end();
    HostWaits& waits = host_waits();
    sg_mutex_lock(waits.mutex);
    // No rank runs between this look and the wait's registration (one OS thread, and no simcall in between), so a
    // publish cannot fall between them.
    while (counter.load(std::memory_order_acquire) < target) sg_cond_wait(waits.published, waits.mutex);
    sg_mutex_unlock(waits.mutex);
    smpi_bench_begin();
}

}  // namespace

void node_published() { sg_cond_notify_all(host_waits().published); }

// The wait policy's polling settings mean nothing here.
void wait_polling(const std::atomic<uint64_t>& counter, uint64_t target, const WaitPolicy&) {
    sleep_until(counter, target);
}

void wait_sleeping(ShmCounter& counter, uint64_t target, const WaitPolicy&) { sleep_until(counter.value, target); }

void wake_sleepers(ShmCounter&) {}

// The simulator moves messages while this rank sleeps: no need to enter MPI to progress them.
void wait_progressing(const std::atomic<uint64_t>& counter, uint64_t target, MPI_Comm) {
    sleep_until(counter, target);
}

}  // namespace arshim
