#define _GNU_SOURCE /* RTLD_DEFAULT */
/* Many live communicators (ARSHIM_MAX_COMMS, docs/paths.md "Communicators ARShim makes"): a program that keeps
 * LIVE communicators at once and reduces on each of them in turn must run under ARShim wherever it runs natively.
 * Under MPICH every communicator and window takes one of the process's 2048 context ids; ARShim's node windows and
 * helper communicators once took two to three per communicator, and a program with 1000 live communicators, fine
 * natively, aborted in its own MPI_Comm_dup.
 *
 *   check_many_comms LIVE CALLS [--limit]
 *   check_many_comms --exhaust FREE CALLS
 *
 * Phase 1 makes LIVE communicators (dups of MPI_COMM_WORLD, splits of it into halves by rank parity, dups of the
 * previous one) and then makes CALLS rounds of one allreduce on every live communicator (so that the windows of many
 * communicators are in use at once), each checked on every rank against values computed here; then frees them in
 * an order drawn alike on every rank. Phase 2 makes 2 new communicators and reduces CALLS times on each.
 *
 * --limit (run with ARShim, a forced node path and ARSHIM_MAX_COMMS well below LIVE): phase 1 must count calls with
 * reason comm_limit, and phase 2, after the frees gave the room back, must be served without any (ARShim's query
 * API, found with dlsym).
 *
 * --exhaust: duplicates MPI_COMM_WORLD until the library refuses (MPICH: its 2048 context ids), frees the last FREE
 * duplicates, puts back MPI_ERRORS_ARE_FATAL, and reduces CALLS times on MPI_COMM_WORLD and on the last duplicate
 * kept: ARShim's own communicators and windows then fail to be made, and it must decline instead of aborting (MPICH
 * 4.0.2 aborts on an internal assertion when a window finds no context id). Without a limit (Open MPI; 20000
 * duplicates made) it just reduces.
 *
 * Prints "check_many_comms: ok (N checks)" on rank 0 when everything passed on every rank. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures = 0, g_checks = 0, g_world_rank = 0;

/* One call on `comm`; the kind (size, op, in place) follows from `seed`. */
static void reduce_once(MPI_Comm comm, unsigned seed) {
    static const int kCounts[] = {1, 2, 7, 33, 130, 1031};
    enum { kMax = 1031 };
    static double in[kMax], out[kMax];
    static long long iin[kMax], iout[kMax];
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int count = kCounts[seed % 6], kind = (int)((seed / 6) % 3);
    int bad = -1;
    if (kind < 2) {
        for (int i = 0; i < count; ++i) in[i] = out[i] = (double)(rank + 1) * 0.25 + i;
        MPI_Allreduce(kind == 0 ? in : MPI_IN_PLACE, out, count, MPI_DOUBLE, MPI_SUM, comm);
        for (int i = 0; i < count && bad < 0; ++i) /* exact: quarters of small integers */
            if (out[i] != 0.125 * size * (size + 1) + (double)size * i) bad = i;
    } else {
        for (int i = 0; i < count; ++i) iin[i] = (long long)rank * 5 - i;
        MPI_Allreduce(iin, iout, count, MPI_LONG_LONG, MPI_MAX, comm);
        for (int i = 0; i < count && bad < 0; ++i)
            if (iout[i] != (long long)(size - 1) * 5 - i) bad = i;
    }
    ++g_checks;
    if (bad >= 0) {
        ++g_failures;
        if (g_failures <= 5)
            printf("rank %d: FAIL seed %u: %d elements, kind %d, wrong at element %d\n", g_world_rank, seed, count,
                   kind, bad);
    }
}

static long long query(const char *fn, const char *name) {
    long long (*f)(const char *) = (long long (*)(const char *))dlsym(RTLD_DEFAULT, fn);
    return f ? f(name) : -1;
}

static int finish(int live, long long limited) {
    int failures = 0, checks = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_world_rank == 0) {
        if (failures == 0)
            printf("check_many_comms: ok (%d checks, %d live communicators, comm_limit calls on rank 0: %lld)\n",
                   checks, live, limited);
        else
            printf("check_many_comms: %d failures\n", failures);
        /* The same as data, for the test (test_many_comms.py). */
        printf("{\"check_many_comms\": {\"checks\": %d, \"failures\": %d, \"live\": %d, \"comm_limit_calls\": %lld}}\n",
               checks, failures, live, limited);
    }
    return failures;
}

static int exhaust(int free_count, int calls) {
    enum { kMaxDups = 20000 };
    MPI_Comm *dups = malloc(sizeof(MPI_Comm) * kMaxDups);
    int made = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    while (made < kMaxDups && MPI_Comm_dup(MPI_COMM_WORLD, &dups[made]) == MPI_SUCCESS) ++made;
    for (int i = 0; i < free_count && made > 1; ++i) MPI_Comm_free(&dups[--made]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    for (int c = 0; c < calls; ++c) {
        reduce_once(MPI_COMM_WORLD, (unsigned)c);
        if (made > 0) reduce_once(dups[made - 1], (unsigned)(c * 5 + 1));
    }
    const int failures = finish(made, query("arshim_reason_calls", "comm_limit"));
    for (int i = 0; i < made; ++i) MPI_Comm_free(&dups[i]);
    free(dups);
    MPI_Finalize();
    return failures != 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    if (argc < 3) {
        if (g_world_rank == 0) fprintf(stderr, "usage: check_many_comms LIVE CALLS [--limit]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!strcmp(argv[1], "--exhaust")) return exhaust(argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 10);
    const int live = atoi(argv[1]), calls = atoi(argv[2]);
    const int limit_mode = argc > 3 && !strcmp(argv[3], "--limit");
    int world_rank = g_world_rank;

    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)live);
    for (int i = 0; i < live; ++i) {
        if (i % 3 == 0)
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        else if (i % 3 == 1)
            MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comms[i]);
        else
            MPI_Comm_dup(comms[i - 1], &comms[i]);
    }
    for (int c = 0; c < calls; ++c)
        for (int i = 0; i < live; ++i) reduce_once(comms[i], (unsigned)(i * 7 + c));
    const long long limited_1 = query("arshim_reason_calls", "comm_limit");

    /* Free in a drawn order, the same on every rank (a fixed LCG). */
    unsigned state = 12345u;
    for (int i = live - 1; i > 0; --i) {
        state = state * 1103515245u + 12345u;
        const int j = (int)((state >> 8) % (unsigned)(i + 1));
        MPI_Comm t = comms[i];
        comms[i] = comms[j];
        comms[j] = t;
    }
    for (int i = 0; i < live; ++i) MPI_Comm_free(&comms[i]);

    const long long served_before = query("arshim_path_calls", "native") >= 0
                                        ? query("arshim_path_calls", "multileader") +
                                              query("arshim_path_calls", "sharp") +
                                              query("arshim_path_calls", "reproducible")
                                        : -1;
    for (int k = 0; k < 2; ++k) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        for (int c = 0; c < calls; ++c) reduce_once(comm, (unsigned)(k * 13 + c));
        MPI_Comm_free(&comm);
    }
    const long long limited_2 = query("arshim_reason_calls", "comm_limit");
    const long long served_after = query("arshim_path_calls", "multileader") + query("arshim_path_calls", "sharp") +
                                   query("arshim_path_calls", "reproducible");
    if (limit_mode) {
        if (limited_1 <= 0) {
            ++g_failures;
            printf("rank %d: FAIL no call counted as comm_limit with %d live communicators (%lld)\n", world_rank, live,
                   limited_1);
        }
        if (limited_2 != limited_1 || served_before < 0 || served_after <= served_before) {
            ++g_failures;
            printf("rank %d: FAIL after the frees: comm_limit %lld -> %lld, node paths served %lld -> %lld\n",
                   world_rank, limited_1, limited_2, served_before, served_after);
        }
    }
    const int failures = finish(live, limited_1);
    free(comms);
    MPI_Finalize();
    return failures != 0;
}
