/* arshim-tune-probe: the measurement program `arshim tune` launches (docs/tuning.md "arshim tune").
 *
 * Under ARShim with a forced path (ARSHIM_PATH and its parameters, set by the tuner), it times, size by size, the
 * shim's MPI_Allreduce (the candidate) against the library's own PMPI_Allreduce (native) in the same run,
 * interleaved call by call (the order alternates so neither always runs first), each call between barriers, and
 * the time of a call is the slowest rank's. It repeats a size in batches until both medians move less than 2%
 * between batches, or a repetition or time cap is reached. Rank 0 prints CSV on stdout:
 *   layout,<nodes>,<ppn>,<ranks>
 *   size,<bytes>,<reps>,<cand_p25_us>,<cand_median_us>,<cand_p75_us>,<native_p25_us>,<native_median_us>,
 *        <native_p75_us>,<served>,<right>
 * served: the fraction of the candidate's calls ARShim's path served (arshim_path_calls, found with dlsym; -1 when
 * not preloaded); right: 1 when the candidate's first result was exact (integer-valued floats).
 *
 *   arshim-tune-probe --sizes B[,B...] --path NAME [--max-reps N] [--seconds S]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p-th quantile (0..1) of the first n values, sorted in a copy. */
static double quantile(const double *v, int n, double p, double *scratch) {
    memcpy(scratch, v, sizeof(double) * (size_t)n);
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    const int i = (int)(p * (n - 1) + 0.5);
    return scratch[i];
}

static long long path_calls(const char *path) {
    static long long (*fn)(const char *);
    static int looked;
    if (!looked) {
        looked = 1;
        *(void **)&fn = dlsym(RTLD_DEFAULT, "arshim_path_calls");
    }
    return fn ? fn(path) : -1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *sizes_arg = NULL, *path = "native";
    int max_reps = 200;
    double seconds = 2.0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--path") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--max-reps") && i + 1 < argc) max_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else {
            if (rank == 0) fprintf(stderr, "arshim-tune-probe: unknown argument '%.100s'\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (!sizes_arg || max_reps < 5 || max_reps > 100000 || !(seconds > 0)) {
        if (rank == 0) fprintf(stderr, "arshim-tune-probe: --sizes B[,B...] required; --max-reps 5..100000\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* The layout as the tuner's table keys it: nodes and processes per node (the largest node). */
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_rank = 0, node_size = 1, leader = 0, nodes = 0, ppn = 0;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    leader = node_rank == 0;
    PMPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(&node_size, &ppn, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    if (rank == 0) printf("layout,%d,%d,%d\n", nodes, ppn, size);

    double *cand = malloc(sizeof(double) * (size_t)max_reps), *native = malloc(sizeof(double) * (size_t)max_reps);
    double *scratch = malloc(sizeof(double) * (size_t)max_reps);
    char *list = strdup(sizes_arg);
    if (!cand || !native || !scratch || !list) MPI_Abort(MPI_COMM_WORLD, 1);
    for (char *word = strtok(list, ","); word; word = strtok(NULL, ",")) {
        const long long bytes = atoll(word);
        const int count = (int)(bytes / 4);
        if (bytes < 0 || bytes / 4 > 0x7fffffffLL) MPI_Abort(MPI_COMM_WORLD, 2);
        float *send = malloc((size_t)count * 4 + 64), *recv = malloc((size_t)count * 4 + 64);
        if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < count; ++i) send[i] = (float)(rank + i % 3);

        /* Two warm-up calls each (a path's first call builds its windows), the first one checked. */
        int right = 1;
        for (int w = 0; w < 2; ++w) {
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (w == 0)
                for (int i = 0; i < count; ++i)
                    if (recv[i] != (float)((double)size * (size - 1) / 2 + (double)size * (i % 3))) {
                        right = 0;
                        break;
                    }
            PMPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        PMPI_Allreduce(MPI_IN_PLACE, &right, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        const long long served_before = path_calls(path);

        int reps = 0;
        double prev_c = 0, prev_n = 0;
        const double started = MPI_Wtime();
        for (;;) {
            const int batch = reps + 10 > max_reps ? max_reps - reps : 10;
            for (int r = 0; r < batch; ++r, ++reps) {
                for (int half = 0; half < 2; ++half) {
                    const int shim_now = (half == 0) == (reps % 2 == 0);
                    PMPI_Barrier(MPI_COMM_WORLD);
                    const double t0 = MPI_Wtime();
                    if (shim_now) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                    else PMPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                    (shim_now ? cand : native)[reps] = MPI_Wtime() - t0;
                }
            }
            /* Every rank decides alike: the slowest rank's times and rank 0's clock. */
            PMPI_Allreduce(MPI_IN_PLACE, cand, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            PMPI_Allreduce(MPI_IN_PLACE, native, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            const double mc = quantile(cand, reps, 0.5, scratch), mn = quantile(native, reps, 0.5, scratch);
            int more = reps < max_reps && MPI_Wtime() - started < seconds &&
                       (reps < 20 || mc > prev_c * 1.02 || mc < prev_c * 0.98 || mn > prev_n * 1.02 ||
                        mn < prev_n * 0.98);
            PMPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
            prev_c = mc;
            prev_n = mn;
            if (!more) break;
        }
        const long long served_after = path_calls(path);
        const double served =
            served_before < 0 ? -1.0 : (double)(served_after - served_before) / (reps > 0 ? reps : 1);
        if (rank == 0)
            printf("size,%lld,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%d\n", bytes, reps,
                   quantile(cand, reps, 0.25, scratch) * 1e6, quantile(cand, reps, 0.5, scratch) * 1e6,
                   quantile(cand, reps, 0.75, scratch) * 1e6, quantile(native, reps, 0.25, scratch) * 1e6,
                   quantile(native, reps, 0.5, scratch) * 1e6, quantile(native, reps, 0.75, scratch) * 1e6, served,
                   right);
        fflush(stdout);
        free(send);
        free(recv);
    }
    free(list);
    free(cand);
    free(native);
    free(scratch);
    MPI_Finalize();
    return 0;
}
