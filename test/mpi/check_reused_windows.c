/* Node windows taken over from freed communicators (shim/paths/window_pool.h): communicators made and freed in many
 * shapes, each reducing a few times at sizes that grow the window, checked exactly on every rank against values
 * computed here. Shapes: dups of MPI_COMM_WORLD (the same node members as the last one freed), even/odd halves, the
 * world in reverse order (the same members in another order: another key), all ranks but the last (uneven nodes),
 * and dups of a communicator that stays alive (two live communicators of the same members, freed in either order),
 * with calls on the long-lived communicator in between.
 *
 *   check_reused_windows [--cycles N] [--multiple] [--threads T]
 *
 * --multiple initializes with MPI_THREAD_MULTIPLE; --threads T (T >= 2, implies it) then also runs T threads at once,
 * each making, using and freeing dups of its own duplicate of MPI_COMM_WORLD: communicators of the same members
 * freed and taken over concurrently. Prints "check_reused_windows: ok (C checks)" on rank 0 when every check passed
 * on every rank. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures = 0, g_checks = 0, g_world_rank = 0; /* counted atomically: threads share them */

/* Counts drawn over several size buckets: 1 element up to 40 KiB of doubles, so windows grow while reused. */
static const int kCounts[] = {1, 3, 17, 130, 1025, 5003, 0, 2};
enum { kCountKinds = sizeof kCounts / sizeof kCounts[0], kMaxCount = 5003 };

static _Thread_local double g_in[kMaxCount], g_out[kMaxCount];
static _Thread_local int g_iin[kMaxCount], g_iout[kMaxCount];

/* A few calls on `comm`, sizes and ops chosen by `seed`; every rank checks every element. */
static void reduce_on(MPI_Comm comm, unsigned seed, int calls, const char *what) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < calls; ++k) {
        seed = seed * 1103515245u + 12345u;
        const int count = kCounts[(seed >> 8) % kCountKinds];
        const int kind = (int)((seed >> 16) % 4);
        int bad = -1;
        if (kind < 2) { /* double SUM, out of place or in place */
            for (int i = 0; i < count; ++i) g_in[i] = g_out[i] = (double)(rank + 1) * 0.5 + i;
            if (kind == 0)
                MPI_Allreduce(g_in, g_out, count, MPI_DOUBLE, MPI_SUM, comm);
            else
                MPI_Allreduce(MPI_IN_PLACE, g_out, count, MPI_DOUBLE, MPI_SUM, comm);
            /* sum over r of ((r+1)/2 + i): exact in binary (halves of small integers) */
            for (int i = 0; i < count && bad < 0; ++i)
                if (g_out[i] != 0.25 * size * (size + 1) + (double)size * i) bad = i;
        } else { /* int MAX, int SUM */
            for (int i = 0; i < count; ++i) g_iin[i] = rank * 7 - i;
            MPI_Allreduce(g_iin, g_iout, count, MPI_INT, kind == 2 ? MPI_MAX : MPI_SUM, comm);
            for (int i = 0; i < count && bad < 0; ++i) {
                const int want = kind == 2 ? (size - 1) * 7 - i : 7 * size * (size - 1) / 2 - size * i;
                if (g_iout[i] != want) bad = i;
            }
        }
        __atomic_fetch_add(&g_checks, 1, __ATOMIC_RELAXED);
        if (bad >= 0) {
            __atomic_fetch_add(&g_failures, 1, __ATOMIC_RELAXED);
            printf("rank %d: FAIL %s call %d: %d elements, kind %d, wrong at element %d\n", g_world_rank, what, k,
                   count, kind, bad);
        }
    }
}

struct ThreadWork {
    MPI_Comm parent;
    int thread, cycles;
};

/* One thread's churn: dups of its own parent, a few calls each, freed. */
static void *churn(void *arg) {
    const struct ThreadWork *w = arg;
    for (int c = 0; c < w->cycles; ++c) {
        MPI_Comm comm;
        MPI_Comm_dup(w->parent, &comm);
        reduce_on(comm, 5000u + 100u * (unsigned)w->thread + (unsigned)c, 2 + c % 11, "threaded dup");
        MPI_Comm_free(&comm);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int cycles = 40, multiple = 0, threads = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc) cycles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--multiple")) multiple = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]), multiple = 1;
    }
    if (threads > 8) threads = 8;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    if (threads >= 2 && provided < MPI_THREAD_MULTIPLE) {
        if (g_world_rank == 0) printf("check_reused_windows: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 1;
    }
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (threads >= 2) {
        MPI_Comm parents[8];
        pthread_t ids[8];
        struct ThreadWork work[8];
        for (int t = 0; t < threads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
        for (int t = 0; t < threads; ++t) {
            work[t] = (struct ThreadWork){parents[t], t, cycles};
            pthread_create(&ids[t], NULL, churn, &work[t]);
        }
        for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
        for (int t = 0; t < threads; ++t) MPI_Comm_free(&parents[t]);
    }

    MPI_Comm lasting; /* lives through the loop */
    MPI_Comm_dup(MPI_COMM_WORLD, &lasting);
    reduce_on(lasting, 7u, 10, "lasting");
    MPI_Comm held = MPI_COMM_NULL; /* a dup of `lasting` kept for one more cycle */
    for (int c = 0; c < cycles; ++c) {
        MPI_Comm comm = MPI_COMM_NULL;
        const char *what = "dup(world)";
        switch (c % 5) {
        case 0: MPI_Comm_dup(MPI_COMM_WORLD, &comm); break;
        case 1: MPI_Comm_split(MPI_COMM_WORLD, g_world_rank % 2, g_world_rank, &comm), what = "halves"; break;
        case 2: MPI_Comm_split(MPI_COMM_WORLD, 0, size - g_world_rank, &comm), what = "reversed"; break;
        case 3:
            MPI_Comm_split(MPI_COMM_WORLD, g_world_rank < size - 1 || size == 1 ? 0 : MPI_UNDEFINED, g_world_rank,
                           &comm);
            what = "all but the last";
            break;
        case 4: MPI_Comm_dup(lasting, &comm), what = "dup(lasting)"; break;
        }
        if (comm != MPI_COMM_NULL) reduce_on(comm, 1000u + (unsigned)c, 3 + c % 17, what);
        reduce_on(lasting, 77u + (unsigned)c, 2, "lasting");
        if (c % 5 == 4) { /* two live dups of the same members: free the older first, or the newer */
            if (held != MPI_COMM_NULL) {
                if (c % 10 == 4) {
                    MPI_Comm_free(&held);
                    held = comm;
                    comm = MPI_COMM_NULL;
                } else {
                    MPI_Comm_free(&comm);
                }
            } else {
                held = comm;
                comm = MPI_COMM_NULL;
            }
        }
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
    if (held != MPI_COMM_NULL) {
        reduce_on(held, 99u, 5, "held");
        MPI_Comm_free(&held);
    }
    /* One window left in the pool at finalize, one live communicator with its own. */
    MPI_Comm last;
    MPI_Comm_dup(MPI_COMM_WORLD, &last);
    reduce_on(last, 5u, 12, "last");
    MPI_Comm_free(&last);
    MPI_Comm still_live;
    MPI_Comm_split(MPI_COMM_WORLD, g_world_rank % 2, 0, &still_live);
    reduce_on(still_live, 6u, 12, "still live");
    reduce_on(lasting, 8u, 4, "lasting");
    MPI_Comm_free(&lasting);

    int totals[2] = {0, 0}, mine[2] = {g_checks, g_failures};
    MPI_Reduce(mine, totals, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_world_rank == 0) {
        if (totals[1] == 0)
            printf("check_reused_windows: ok (%d checks)\n", totals[0]);
        else
            printf("check_reused_windows: %d of %d checks FAILED\n", totals[1], totals[0]);
        /* The same as data, for the test (test_reused_windows.py). */
        printf("{\"check_reused_windows\": {\"checks\": %d, \"failures\": %d}}\n", totals[0], totals[1]);
    }
    MPI_Finalize();
    return totals[1] == 0 ? 0 : 1;
}
