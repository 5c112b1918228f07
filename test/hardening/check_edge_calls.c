/* MPI program for the hardening tests (test/hardening/hardening_test.sh): runs with or without ARShim preloaded.
 *
 *   check_edge_calls sum                 a few allreduces checked on every rank (partial preload, hostile settings)
 *   check_edge_calls null-buffer         NULL send or receive buffer with count > 0: the same error class as the
 *                                        library's own PMPI_Allreduce, and the communicator still works after it
 *   check_edge_calls cold K BYTES        a new communicator's first K-1 calls go native (cold_communicator), the
 *                                        rest take a path (ARShim's counters); results checked
 *   check_edge_calls churn N             N x (MPI_Comm_dup, one 8-byte allreduce, MPI_Comm_free); prints the time
 *   check_edge_calls attributes PATH     allreduces on MPI_COMM_WORLD and on a duplicate, both carrying an attribute
 *                                        whose copy and delete callbacks count their calls: they run only for the
 *                                        program's own MPI_Comm_dup / MPI_Comm_free (ARShim's private communicators
 *                                        never copy the user's attributes); PATH must have served calls
 *
 * Prints "<mode>: ok" on rank 0 and exits 0 when every check held on every rank. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_;

static long long counter(const char *symbol, const char *name) {
    long long (*fn)(const char *) = (long long (*)(const char *))dlsym(RTLD_DEFAULT, symbol);
    return fn ? fn(name) : -1;
}

/* One allreduce of `count` ints on `comm`, checked; returns the number of wrong elements. */
static long checked_sum(MPI_Comm comm, int count) {
    int n = 0, r = 0;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    int *in = malloc(sizeof(int) * (size_t)(count ? count : 1)), *out = malloc(sizeof(int) * (size_t)(count ? count : 1));
    for (int i = 0; i < count; ++i) in[i] = (r + 1) * (i % 5 + 1);
    MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    long wrong = 0;
    for (int i = 0; i < count; ++i) wrong += out[i] != n * (n + 1) / 2 * (i % 5 + 1);
    free(in);
    free(out);
    return wrong;
}

static int attribute_copies_, attribute_deletes_;

static int count_copy(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag) {
    (void)old, (void)key, (void)extra;
    ++attribute_copies_;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)value, (void)extra;
    ++attribute_deletes_;
    return MPI_SUCCESS;
}

static int finish(const char *mode, long failures) {
    long total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0) printf("%s: %s (%ld failures)\n", mode, total ? "FAIL" : "ok", total);
    MPI_Finalize();
    return total ? 1 : 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const char *mode = argc > 1 ? argv[1] : "sum";
    long failures = 0;

    if (!strcmp(mode, "sum")) {
        const int counts[] = {1, 7, 1000, 70000};
        for (int i = 0; i < 4; ++i) failures += checked_sum(MPI_COMM_WORLD, counts[i]) != 0;
    } else if (!strcmp(mode, "null-buffer")) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        int buf[16] = {0};
        for (int which = 0; which < 2; ++which) {
            const void *send = which == 0 ? NULL : buf;
            void *recv = which == 0 ? (void *)buf : NULL;
            const int shim = MPI_Allreduce(send, recv, 16, MPI_INT, MPI_SUM, comm);
            const int lib = PMPI_Allreduce(send, recv, 16, MPI_INT, MPI_SUM, comm);
            int shim_class = shim, lib_class = lib;
            if (shim != MPI_SUCCESS) MPI_Error_class(shim, &shim_class);
            if (lib != MPI_SUCCESS) MPI_Error_class(lib, &lib_class);
            if (shim_class != lib_class) {
                printf("rank %d: FAIL NULL %s buffer: error class %d through ARShim, %d from the library\n", rank_,
                       which == 0 ? "send" : "receive", shim_class, lib_class);
                ++failures;
            }
        }
        if (checked_sum(comm, 1000) != 0) {
            printf("rank %d: FAIL the communicator is not usable after the erroneous calls\n", rank_);
            ++failures;
        }
        MPI_Comm_free(&comm);
    } else if (!strcmp(mode, "cold") && argc > 3) {
        const long after = atol(argv[2]);
        const int count = atoi(argv[3]) / (int)sizeof(int);
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        const long long cold0 = counter("arshim_reason_calls", "cold_communicator");
        const long long native0 = counter("arshim_path_calls", "native");
        const int calls = 20;
        for (int c = 0; c < calls; ++c) failures += checked_sum(comm, count) != 0;
        const long long cold = counter("arshim_reason_calls", "cold_communicator") - cold0;
        const long long native = counter("arshim_path_calls", "native") - native0;
        if (cold != after - 1 || native != after - 1) {
            printf("rank %d: FAIL %d calls on a new communicator: %lld cold_communicator, %lld native (want %ld)\n",
                   rank_, calls, cold, native, after - 1);
            ++failures;
        }
        MPI_Comm_free(&comm);
    } else if (!strcmp(mode, "attributes") && argc > 2) {
        int key = MPI_KEYVAL_INVALID;
        MPI_Comm_create_keyval(count_copy, count_delete, &key, NULL);
        MPI_Comm_set_attr(MPI_COMM_WORLD, key, &key);
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // the program's own copy: 1
        const long long served0 = counter("arshim_path_calls", argv[2]);
        const int counts[] = {1, 7, 70001, 300007};
        for (int round = 0; round < 2; ++round)
            for (int i = 0; i < 4; ++i) {
                failures += checked_sum(MPI_COMM_WORLD, counts[i]) != 0;
                failures += checked_sum(comm, counts[i]) != 0;
            }
        const long long served = counter("arshim_path_calls", argv[2]) - served0;
        MPI_Comm_free(&comm);  // the program's own delete: 1 (ARShim's context of `comm` goes with it)
        if (attribute_copies_ != 1 || attribute_deletes_ != 1) {
            printf("rank %d: FAIL the attribute's copy callback ran %d times and its delete callback %d times (the "
                   "program's own MPI_Comm_dup and MPI_Comm_free: once each)\n",
                   rank_, attribute_copies_, attribute_deletes_);
            ++failures;
        }
        if (served <= 0) {
            printf("rank %d: FAIL no call took the %s path (%lld)\n", rank_, argv[2], served);
            ++failures;
        }
        MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
        MPI_Comm_free_keyval(&key);
    } else if (!strcmp(mode, "churn") && argc > 2) {
        const int n = atoi(argv[2]);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (int i = 0; i < n; ++i) {
            MPI_Comm comm;
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            failures += checked_sum(comm, 2) != 0;
            MPI_Comm_free(&comm);
        }
        const double elapsed = MPI_Wtime() - start;
        double slowest = 0;
        MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank_ == 0) printf("churn: %d dup/allreduce/free cycles in %.3f s (%.1f us each)\n", n, slowest,
                               1e6 * slowest / n);
    } else {
        if (rank_ == 0) fprintf(stderr, "check_edge_calls: unknown mode '%s' (allowed: sum, null-buffer, cold K BYTES, churn N, attributes PATH)\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return finish(mode, failures);
}
