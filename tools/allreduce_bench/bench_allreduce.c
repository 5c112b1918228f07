/* bench_allreduce: an ordinary MPI program that times MPI_Allreduce (float SUM by default) over a range of sizes and
 * prints one CSV line per size: bytes,reps,median_us,min_us,p90_us. Each repetition is timed from a barrier, and the
 * time of a repetition is the slowest rank's. The first result of every size is checked on every rank.
 * With --batch B a repetition is B back-to-back calls after the barrier and its time is theirs divided by B: the
 * time per call of a loop of calls (as the OSU micro-benchmarks time it), without the barrier's exit skew and the
 * clock reads that a single timed call carries.
 *
 *   bench_allreduce [--min BYTES] [--max BYTES] [--factor F] [--reps N] [--budget BYTES] [--batch B]
 *                   [--type float|double|int|uint8|unsigned|ulong] [--op sum|max] [--in-place]
 *
 * uint8 SUM (Open MPI 4.1), unsigned MAX (MPICH 4.0) and ulong MAX (Open MPI 4.1.2-4.1.4) are reductions the
 * libraries compute wrong (docs/library-bugs.md): ARShim routes them around, and these types time that route. The
 * values stay small, so the library's own result is right here too and the two can be timed side by side. */
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
    long long min_bytes = 8, max_bytes = 64LL << 20, budget = 512LL << 20;
    int factor = 4, max_reps = 200, in_place = 0, bad = 0, batch = 1;
    MPI_Datatype type = MPI_FLOAT;
    MPI_Op op = MPI_SUM;
    int elem = 4;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min_bytes = cli_size_arg("bench_allreduce", "--min", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max_bytes = cli_size_arg("bench_allreduce", "--max", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--factor") && i + 1 < argc) factor = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) max_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            budget = cli_size_arg("bench_allreduce", "--budget", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--in-place")) in_place = 1;
        else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            ++i;
            if (!strcmp(argv[i], "double")) type = MPI_DOUBLE, elem = 8;
            else if (!strcmp(argv[i], "int")) type = MPI_INT, elem = 4;
            else if (!strcmp(argv[i], "uint8")) type = MPI_UINT8_T, elem = 1;
            else if (!strcmp(argv[i], "unsigned")) type = MPI_UNSIGNED, elem = 4;
            else if (!strcmp(argv[i], "ulong")) type = MPI_UNSIGNED_LONG, elem = 8;
            else type = MPI_FLOAT, elem = 4;
        } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
            ++i;
            op = !strcmp(argv[i], "max") ? MPI_MAX : MPI_SUM;
        } else {
            if (rank == 0) fprintf(stderr, "bench_allreduce: unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    if (factor < 2) factor = 2;
    if (batch < 1 || batch > 1000000) {
        if (rank == 0) fprintf(stderr, "bench_allreduce: --batch %d: must be between 1 and 1000000\n", batch);
        MPI_Finalize();
        return 2;
    }
    if (min_bytes < elem) min_bytes = elem;
    size_t max_count = (size_t)(max_bytes / elem);
    char *send = malloc(max_count * elem + 64), *recv = malloc(max_count * elem + 64);
    double *times = malloc(sizeof(double) * (size_t)(max_reps > 0 ? max_reps : 1));
    if (!send || !recv || !times) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(send, 0, max_count * elem);
    memset(recv, 0, max_count * elem);
    long errors = 0;
    if (rank == 0) printf("bytes,reps,median_us,min_us,p90_us\n");
    for (long long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        int count = (int)(bytes / elem);
        long long fit = budget / (bytes * batch);
        int reps = fit < 5 ? 5 : (fit > max_reps ? max_reps : (int)fit);
        /* values: small integers, exact in any summation order */
        for (int i = 0; i < count; ++i) {
            if (type == MPI_FLOAT) ((float *)send)[i] = (float)(rank + i % 3);
            else if (type == MPI_DOUBLE) ((double *)send)[i] = (double)(rank + i % 3);
            else if (type == MPI_UINT8_T) ((unsigned char *)send)[i] = (unsigned char)(rank + i % 3);
            else if (type == MPI_UNSIGNED) ((unsigned *)send)[i] = (unsigned)(rank + i % 3);
            else if (type == MPI_UNSIGNED_LONG) ((unsigned long *)send)[i] = (unsigned long)(rank + i % 3);
            else ((int *)send)[i] = rank + i % 3;
        }
        for (int r = -2; r < reps; ++r) { /* two warm-up calls */
            if (in_place) memcpy(recv, send, (size_t)count * elem);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, type, op, MPI_COMM_WORLD);
            /* the rest of the batch (not in the first warm-up call, whose result is checked): in place, the values
             * grow and may overflow, which changes no timing here */
            const int calls = r == -2 ? 1 : batch;
            for (int b = 1; b < calls; ++b)
                MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, type, op, MPI_COMM_WORLD);
            double t = (MPI_Wtime() - t0) / calls;
            if (r == -2)
                for (int i = 0; i < count; ++i) {
                    double want = op == MPI_MAX ? (double)(size - 1 + i % 3)
                                                : (double)size * (size - 1) / 2 + (double)size * (i % 3);
                    double got = type == MPI_FLOAT    ? ((float *)recv)[i]
                                 : type == MPI_DOUBLE ? ((double *)recv)[i]
                                 : type == MPI_UINT8_T ? ((unsigned char *)recv)[i]
                                 : type == MPI_UNSIGNED ? ((unsigned *)recv)[i]
                                 : type == MPI_UNSIGNED_LONG ? (double)((unsigned long *)recv)[i]
                                                             : ((int *)recv)[i];
                    if (got != want) {
                        ++errors;
                        break;
                    }
                }
            if (r >= 0) times[r] = t;
        }
        MPI_Allreduce(MPI_IN_PLACE, times, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        cli_sort(times, reps);
        if (rank == 0)
            printf("%lld,%d,%.3f,%.3f,%.3f\n", bytes, reps, times[reps / 2] * 1e6, times[0] * 1e6,
                   times[(reps * 9) / 10] * 1e6);
        fflush(stdout);
    }
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total) fprintf(stderr, "bench_allreduce: %ld WRONG RESULTS\n", total);
    free(send);
    free(recv);
    free(times);
    MPI_Finalize();
    return total != 0;
}
