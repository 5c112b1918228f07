/* bench_first_calls: what the first calls cost, per size bucket, on new communicators (docs/paths.md "First calls").
 *
 *   mpirun -n 4 [-x LD_PRELOAD=libarshim-openmpi.so -x ARSHIM_PATH=...] ./bench_first_calls-openmpi
 *        [--sizes 8,1K,32K,1M] [--calls 100] [--comms 5]
 *
 * For each of --comms new communicators (MPI_Comm_dup of MPI_COMM_WORLD, freed after), and each size of --sizes in
 * turn (each names a size bucket [2^(k-1), 2^k)): the bucket's first call at its smallest size, then --calls calls
 * of sizes drawn in the whole bucket (the same sizes on every rank), each timed alone; a call's time is the slowest
 * rank's (taken after the loop, so nothing but the calls runs between them). Prints one line per (communicator,
 * bucket):
 *   first COMM BUCKET_FLOOR_BYTES FIRST_US MEDIAN_US MAX_US MAX_AT
 * FIRST_US is the bucket's first call (for the first bucket, the communicator's first call), MEDIAN_US and MAX_US
 * are over the later calls of the bucket, MAX_AT is the later call that took MAX_US (1 = the second call). tools/bench/bench_first_calls.py runs it natively and under each path
 * and reports the ratios. MPI_DOUBLE sums; a program, not a test. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

enum { MAX_SIZES = 16 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long long sizes[MAX_SIZES] = {8, 1024, 32768, 1048576};
    int nsizes = 4, calls = 100, comms = 5, bad = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *item = strtok(argv[++i], ","); item && nsizes < MAX_SIZES; item = strtok(NULL, ","))
                sizes[nsizes++] = cli_size_arg(argv[0], "--sizes", item, rank != 0, &bad);
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--comms") && i + 1 < argc) {
            comms = atoi(argv[++i]);
        } else {
            if (rank == 0) fprintf(stderr, "%s: unknown argument '%s' (--sizes LIST, --calls N, --comms N)\n", argv[0], argv[i]);
            bad = 1;
        }
    }
    if (calls < 1 || comms < 1) bad = 1;
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    long long largest = 8;
    for (int s = 0; s < nsizes; ++s) {
        long long floor = 8;
        while (floor * 2 <= sizes[s]) floor *= 2;
        sizes[s] = floor;  /* the bucket's smallest size */
        if (2 * floor > largest) largest = 2 * floor;
    }
    const int max_count = (int)(largest / 8);
    double *in = malloc((size_t)max_count * sizeof(double)), *out = malloc((size_t)max_count * sizeof(double));
    double *times = malloc((size_t)(calls + 1) * sizeof(double)), *slowest = malloc((size_t)(calls + 1) * sizeof(double));
    int *counts = malloc((size_t)(calls + 1) * sizeof(int));
    for (int i = 0; i < max_count; ++i) in[i] = 1.0;
    int wrong = 0;
    unsigned seed = 12345;  /* the same sequence on every rank */
    for (int c = 0; c < comms; ++c) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        int size = 0;
        MPI_Comm_size(comm, &size);
        for (int s = 0; s < nsizes; ++s) {
            const int floor_count = (int)(sizes[s] / 8);
            counts[0] = floor_count;
            for (int k = 1; k <= calls; ++k) {
                seed = seed * 1103515245u + 12345u;
                counts[k] = floor_count + (floor_count > 1 ? (int)((seed >> 8) % (unsigned)floor_count) : 0);
            }
            MPI_Barrier(comm);
            for (int k = 0; k <= calls; ++k) {
                const double t0 = MPI_Wtime();
                MPI_Allreduce(in, out, counts[k], MPI_DOUBLE, MPI_SUM, comm);
                times[k] = MPI_Wtime() - t0;
                if (out[0] != size || out[counts[k] - 1] != size) wrong = 1;
            }
            MPI_Reduce(times, slowest, calls + 1, MPI_DOUBLE, MPI_MAX, 0, comm);
            if (rank == 0) {
                double worst = 0;
                int worst_at = 1;
                for (int k = 1; k <= calls; ++k)
                    if (slowest[k] > worst) worst = slowest[k], worst_at = k;
                const double median = cli_median(slowest + 1, calls);  /* sorts the later calls in place */
                printf("first %d %lld %.2f %.2f %.2f %d\n", c, sizes[s], slowest[0] * 1e6, median * 1e6, worst * 1e6,
                       worst_at);
            }
        }
        MPI_Comm_free(&comm);
    }
    int any_wrong = 0;
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any_wrong) fprintf(stderr, "bench_first_calls: WRONG RESULTS\n");
    free(in), free(out), free(times), free(slowest), free(counts);
    MPI_Finalize();
    return any_wrong ? 1 : 0;
}
