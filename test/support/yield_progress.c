/* Test-only helper, preloaded under MPICH in the oversubscribed MPI tests (never shipped with ARShim).
 *
 * Debian's MPICH is ch4:ucx and busy-polls ucp_worker_progress(). With more ranks than cores a waiting rank then
 * burns its whole time slice while the rank it waits for cannot run: an 8-byte allreduce at np=4 on 2 cores takes
 * milliseconds. Yielding the CPU whenever a progress call made no progress lets the other ranks run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef unsigned (*progress_fn)(void *worker);

__attribute__((visibility("default"))) unsigned ucp_worker_progress(void *worker) {
    static progress_fn real = 0;
    if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    unsigned events = real(worker);
    if (events == 0) sched_yield();
    return events;
}
