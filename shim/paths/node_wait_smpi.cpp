// The node protocol's waits in the SMPI build (SimGrid's simulated MPI), compiled instead of node_wait.cpp.
//
// Under SMPI every rank is an actor of one simulation, and all actors take turns on one OS thread: a rank runs until
// it enters the simulator, and nothing preempts it. A wait that spins, calls sched_yield() or sleeps on a futex stops
// every other rank (the one it waits for too) and simulated time with it: the job hangs. So every wait here sleeps in
// simulated time between looks at the counter (10 ns, 20 ns, ... up to 1 us: the wait ends at most one step late), and
// the other ranks run meanwhile. SMPI's benchmark timer is stopped around the sleeps: it measures the host CPU time a
// rank spends between two MPI calls and charges it as computation, and while this rank sleeps the others run on the
// same OS thread (their CPU time would be charged to this rank). Nobody sleeps on a futex, so there is nobody to wake.
// The protocol, its counters and their publishers are the same as on a real machine; only the waiting differs.
// (docs/architecture.md "The SMPI build: where it differs".)
#include <simgrid/actor.h>

#include "shim/paths/node_shm.h"

// Exported by libsimgrid but declared in none of its public headers.
extern "C" void smpi_bench_begin();
extern "C" void smpi_bench_end();

namespace arshim {

namespace {

constexpr double kFirstStep = 1e-8;  // seconds of simulated time
constexpr double kLongestStep = 1e-6;

void sleep_until(const std::atomic<uint64_t>& counter, uint64_t target) {
    if (counter.load(std::memory_order_acquire) >= target) return;
    smpi_bench_end();
    for (double step = kFirstStep; counter.load(std::memory_order_acquire) < target;
         step = step < kLongestStep ? 2 * step : step)
        sg_actor_sleep_for(step);
    smpi_bench_begin();
}

}  // namespace

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
