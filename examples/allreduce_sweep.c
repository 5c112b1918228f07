/* allreduce_sweep: an ordinary MPI program (no ARShim headers) that allreduces float vectors of 8 B .. 64 MiB,
 * checks every result on every rank, and prints a latency table (median over repetitions).
 *
 *   mpirun -n 4 ./allreduce_sweep [--min BYTES] [--max BYTES] [--reps N] [--in-place]
 *
 * Values are small integers, so the float sums are exact whatever order the reduction uses. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long min_bytes = 8, max_bytes = 64L << 20;
    int reps_cap = 50, in_place = 0, bad = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min_bytes = cli_size_arg("allreduce_sweep", "--min", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max_bytes = cli_size_arg("allreduce_sweep", "--max", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps_cap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--in-place")) in_place = 1;
        else {
            if (rank == 0) fprintf(stderr, "usage: %s [--min BYTES] [--max BYTES] [--reps N] [--in-place]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    if (min_bytes < 4) min_bytes = 4;
    size_t max_count = (size_t)max_bytes / sizeof(float);
    float *send = malloc(max_count * sizeof(float)), *recv = malloc(max_count * sizeof(float));
    double *times = malloc((size_t)reps_cap * sizeof(double));
    if (!send || !recv || !times) MPI_Abort(MPI_COMM_WORLD, 1);

    if (rank == 0) printf("%12s %8s %12s %12s %10s\n", "bytes", "reps", "median_us", "min_us", "GB/s");
    long errors = 0;
    for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        int count = (int)(bytes / (long)sizeof(float));
        /* fewer repetitions for large messages: the sweep must finish in seconds on a small machine */
        long budget = (256L << 20) / bytes;
        int reps = budget < 3 ? 3 : (budget > reps_cap ? reps_cap : (int)budget);
        for (int r = 0; r < reps; ++r) {
            for (int i = 0; i < count; ++i) send[i] = (float)((rank + 1) * (i % 7 + 1) + r);
            if (in_place) memcpy(recv, send, (size_t)count * sizeof(float));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            times[r] = MPI_Wtime() - t0;
            for (int i = 0; i < count; ++i) {
                float want = (float)((i % 7 + 1) * size * (size + 1) / 2 + size * r);
                if (recv[i] != want) {
                    if (errors < 5)
                        fprintf(stderr, "rank %d: wrong result at %ld bytes, element %d: %g != %g\n", rank, bytes,
                                i, recv[i], want);
                    ++errors;
                    break;
                }
            }
        }
        double median = cli_median(times, reps);
        if (rank == 0)
            printf("%12ld %8d %12.2f %12.2f %10.3f\n", bytes, reps, median * 1e6, times[0] * 1e6,
                   (double)bytes / median / 1e9);
    }
    long total_errors = 0;
    MPI_Reduce(&errors, &total_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("allreduce_sweep: %d ranks, %s\n", size, total_errors ? "WRONG RESULTS" : "all results correct");
    free(send);
    free(recv);
    free(times);
    int failed = total_errors != 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
