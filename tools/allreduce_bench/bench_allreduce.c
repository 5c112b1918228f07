/* bench_allreduce: an ordinary MPI program that times MPI_Allreduce (float SUM by default) over a range of sizes and
 * prints one CSV line per size: bytes,reps,median_us,min_us,p90_us. Each repetition is timed from a barrier, and the
 * time of a repetition is the slowest rank's. The first result of every size is checked on every rank.
 * With --batch B a repetition is B back-to-back calls after the barrier and its time is theirs divided by B: the
 * time per call of a loop of calls (as the OSU micro-benchmarks time it), without the barrier's exit skew and the
 * clock reads that a single timed call carries.
 * With --paired every repetition is timed twice, once through MPI_Allreduce (ARShim's, when it is preloaded) and once
 * through PMPI_Allreduce (the library's own, whatever is preloaded), in alternating order, each from its own barrier:
 * two more columns, library_median_us and paired_speedup (the median over repetitions of library time / MPI_Allreduce
 * time). This machine's speed drifts by 2-3x over seconds (measured within one launch); a pair is timed within
 * microseconds to milliseconds, so its ratio does not see that drift, where two launches' medians do.
 *
 *   bench_allreduce [--min BYTES] [--max BYTES] [--factor F] [--reps N] [--budget BYTES] [--batch B] [--paired]
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

/* What every timed repetition needs. */
struct job {
    char *send, *recv;
    MPI_Datatype type;
    MPI_Op op;
    int elem, in_place, rank, size;
};

/* One timed repetition: a barrier, then `calls` back-to-back calls through MPI_Allreduce or, with `library`, through
 * PMPI_Allreduce (the library's own even when ARShim is preloaded); this rank's time per call. */
static double timed_calls(const struct job *j, int count, int calls, int library) {
    int (*allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) =
        library ? PMPI_Allreduce : MPI_Allreduce;
    /* in place, the values grow over a batch and may overflow, which changes no timing here; the first call of a
     * repetition, whose result may be checked, starts from the send values */
    if (j->in_place) memcpy(j->recv, j->send, (size_t)count * j->elem);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int b = 0; b < calls; ++b)
        allreduce(j->in_place ? MPI_IN_PLACE : j->send, j->recv, count, j->type, j->op, MPI_COMM_WORLD);
    return (MPI_Wtime() - t0) / calls;
}

/* Whether the result of a single call from the send values is wrong on this rank (0 or 1). */
static long wrong_results(const struct job *j, int count) {
    for (int i = 0; i < count; ++i) {
        double want = j->op == MPI_MAX ? (double)(j->size - 1 + i % 3)
                                       : (double)j->size * (j->size - 1) / 2 + (double)j->size * (i % 3);
        double got = j->type == MPI_FLOAT           ? ((float *)j->recv)[i]
                     : j->type == MPI_DOUBLE        ? ((double *)j->recv)[i]
                     : j->type == MPI_UINT8_T       ? ((unsigned char *)j->recv)[i]
                     : j->type == MPI_UNSIGNED      ? ((unsigned *)j->recv)[i]
                     : j->type == MPI_UNSIGNED_LONG ? (double)((unsigned long *)j->recv)[i]
                                                    : ((int *)j->recv)[i];
        if (got != want) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long long min_bytes = 8, max_bytes = 64LL << 20, budget = 512LL << 20;
    int factor = 4, max_reps = 200, in_place = 0, bad = 0, batch = 1, paired = 0;
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
        else if (!strcmp(argv[i], "--paired")) paired = 1;
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
    /* a size gets at least 5 repetitions, whatever --reps says */
    const size_t most_reps = (size_t)(max_reps > 5 ? max_reps : 5);
    double *times = malloc(sizeof(double) * most_reps), *lib_times = malloc(sizeof(double) * most_reps),
           *ratios = malloc(sizeof(double) * most_reps);
    if (!send || !recv || !times || !lib_times || !ratios) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(send, 0, max_count * elem);
    memset(recv, 0, max_count * elem);
    long errors = 0;
    const struct job job = {send, recv, type, op, elem, in_place, rank, size};
    if (rank == 0) printf("bytes,reps,median_us,min_us,p90_us%s\n", paired ? ",library_median_us,paired_speedup" : "");
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
        for (int r = -2; r < reps; ++r) { /* two warm-up repetitions */
            /* paired: even repetitions time the library first, odd ones MPI_Allreduce first */
            for (int half = 0; half < (paired ? 2 : 1); ++half) {
                const int library = paired && ((half == 0) == (r % 2 == 0));
                double t = timed_calls(&job, count, r == -2 ? 1 : batch, library);
                if (r == -2) errors += wrong_results(&job, count);
                if (r >= 0) (library ? lib_times : times)[r] = t;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, times, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double paired_speedup = 0, library_median = 0;
        if (paired) {
            MPI_Allreduce(MPI_IN_PLACE, lib_times, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            for (int r = 0; r < reps; ++r) ratios[r] = lib_times[r] / times[r];
            paired_speedup = cli_median(ratios, reps);
            library_median = cli_median(lib_times, reps);
        }
        cli_sort(times, reps);
        if (rank == 0) {
            printf("%lld,%d,%.3f,%.3f,%.3f", bytes, reps, times[reps / 2] * 1e6, times[0] * 1e6,
                   times[(reps * 9) / 10] * 1e6);
            if (paired) printf(",%.3f,%.4f", library_median * 1e6, paired_speedup);
            printf("\n");
        }
        fflush(stdout);
    }
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total) fprintf(stderr, "bench_allreduce: %ld WRONG RESULTS\n", total);
    free(send);
    free(recv);
    free(times);
    free(lib_times);
    free(ratios);
    MPI_Finalize();
    return total != 0;
}
