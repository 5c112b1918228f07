/* ucx_finalize_progress: keeps a finalizing MPICH (ch4:ucx) rank answering its peers until its UCX worker is
 * destroyed. Preloaded into MPICH ranks by `arshim cluster` (tools/cluster/arshim-cluster); not part of ARShim.
 *
 * The hang it removes (MPICH 4.0.2, UCX 1.13, UCX_TLS=tcp,self; about half of the 2 hosts x 2 ranks runs):
 * MPIDI_UCX_mpi_finalize_hook closes every endpoint with ucp_disconnect_nb() (a flush-close), spins in
 * ucp_worker_progress() until all those requests complete, then enters a *blocking* PMI barrier, and only then
 * destroys its UCX worker. Over TCP, closing an endpoint that was never used (MPICH creates one to every rank at
 * init; wire-up happens on first use) or whose last data still needs an acknowledgement, completes only when the
 * peer's worker makes progress. A peer that finished its own closes first sits in the PMI barrier (a read() on the
 * PMI socket) and never progresses again, so the slower rank spins forever: ranks 0-2 in read(), rank 3 in
 * ucp_worker_progress() under PMPI_Finalize.
 *
 * The answer: from the first ucp_disconnect_nb() on, a helper thread keeps calling ucp_worker_progress() (with a
 * mutex around every UCX call of the finalize sequence, since MPICH's worker is single-threaded) until MPICH calls
 * ucp_worker_destroy(), which stops and joins the thread first. Every rank therefore keeps serving its peers'
 * flush-closes while it waits in the PMI barrier; the closes complete, everyone reaches the barrier, and the
 * workers are destroyed only after the barrier, when no close is pending anywhere. Nothing is dropped or forced:
 * the endpoints are closed exactly as MPICH asks (forcing the close instead is rejected by UCX for endpoints
 * without a peer error handler, and could drop eager data still queued in user space).
 *
 * Symbols are resolved with RTLD_NEXT, so this composes with other preloaded wrappers of ucp_worker_progress
 * (test/support/yield_progress.c). No UCX header is needed: only opaque pointers cross. ARSHIM_UCX_FINALIZE=plain
 * turns it into a pass-through (to reproduce the hang). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef void *ucp_worker_h;
typedef void *ucp_ep_h;
typedef void *ucs_status_ptr_t;

static pthread_mutex_t ucx_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int finalizing;   /* set at the first ucp_disconnect_nb */
static atomic_int stop_thread;
static _Atomic(ucp_worker_h) last_worker;
static pthread_t progress_thread;
static int thread_running;

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) abort(); /* preloaded into a process without UCX: nothing sensible to do */
    return f;
}

static unsigned real_progress(ucp_worker_h worker) {
    static unsigned (*fn)(ucp_worker_h);
    if (fn == NULL) fn = (unsigned (*)(ucp_worker_h))next("ucp_worker_progress");
    return fn(worker);
}

static int enabled(void) {
    static int value = -1;
    if (value < 0) {
        const char *mode = getenv("ARSHIM_UCX_FINALIZE");
        value = !(mode && strcmp(mode, "plain") == 0);
    }
    return value;
}

static void *progress_loop(void *worker) {
    const struct timespec pause = {0, 50 * 1000}; /* 50 us between idle polls: ranks may outnumber cores */
    while (!atomic_load(&stop_thread)) {
        pthread_mutex_lock(&ucx_lock);
        unsigned events = real_progress(worker);
        pthread_mutex_unlock(&ucx_lock);
        if (events == 0) nanosleep(&pause, NULL);
    }
    return NULL;
}

EXPORT unsigned ucp_worker_progress(ucp_worker_h worker) {
    if (!atomic_load_explicit(&finalizing, memory_order_relaxed)) {
        atomic_store_explicit(&last_worker, worker, memory_order_relaxed);
        return real_progress(worker);
    }
    pthread_mutex_lock(&ucx_lock);
    unsigned events = real_progress(worker);
    pthread_mutex_unlock(&ucx_lock);
    return events;
}

EXPORT ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
    static ucs_status_ptr_t (*fn)(ucp_ep_h);
    if (fn == NULL) fn = (ucs_status_ptr_t (*)(ucp_ep_h))next("ucp_disconnect_nb");
    if (!enabled()) return fn(ep);
    if (!atomic_exchange(&finalizing, 1)) {
        ucp_worker_h worker = atomic_load(&last_worker);
        if (worker != NULL && pthread_create(&progress_thread, NULL, progress_loop, worker) == 0)
            thread_running = 1;
    }
    pthread_mutex_lock(&ucx_lock);
    ucs_status_ptr_t request = fn(ep);
    pthread_mutex_unlock(&ucx_lock);
    return request;
}

EXPORT int ucp_request_is_completed(void *request) {
    static int (*fn)(void *);
    if (fn == NULL) fn = (int (*)(void *))next("ucp_request_is_completed");
    if (!atomic_load(&finalizing)) return fn(request);
    pthread_mutex_lock(&ucx_lock);
    int done = fn(request);
    pthread_mutex_unlock(&ucx_lock);
    return done;
}

EXPORT void ucp_request_release(void *request) {
    static void (*fn)(void *);
    if (fn == NULL) fn = (void (*)(void *))next("ucp_request_release");
    if (!atomic_load(&finalizing)) {
        fn(request);
        return;
    }
    pthread_mutex_lock(&ucx_lock);
    fn(request);
    pthread_mutex_unlock(&ucx_lock);
}

EXPORT void ucp_worker_release_address(ucp_worker_h worker, void *address) {
    static void (*fn)(ucp_worker_h, void *);
    if (fn == NULL) fn = (void (*)(ucp_worker_h, void *))next("ucp_worker_release_address");
    if (!atomic_load(&finalizing)) {
        fn(worker, address);
        return;
    }
    pthread_mutex_lock(&ucx_lock);
    fn(worker, address);
    pthread_mutex_unlock(&ucx_lock);
}

EXPORT void ucp_worker_destroy(ucp_worker_h worker) {
    static void (*fn)(ucp_worker_h);
    if (fn == NULL) fn = (void (*)(ucp_worker_h))next("ucp_worker_destroy");
    if (thread_running) {
        atomic_store(&stop_thread, 1);
        pthread_join(progress_thread, NULL);
        thread_running = 0;
    }
    fn(worker);
}
