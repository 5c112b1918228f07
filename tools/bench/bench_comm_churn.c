/* bench_comm_churn: communicators made, used for a few small allreduces and freed, over and over (a solver that
 * duplicates its communicator per solve); docs/paths.md "Reused windows".
 *
 *   mpirun -n 2 [-x LD_PRELOAD=libarshim-openmpi.so] ./bench_comm_churn-openmpi [--calls 10] [--cycles 200]
 *       [--bytes 8] [--repeat 5]
 *
 * One cycle: MPI_Comm_dup(MPI_COMM_WORLD), --calls allreduces of --bytes (MPI_DOUBLE sum, results checked),
 * MPI_Comm_free. Prints "churn US" on rank 0: the median over --repeat timed loops (after one untimed loop) of
 * the microseconds per cycle, slowest rank. A program, not a test. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int calls = 10, cycles = 200, repeat = 5, bad = 0;
    long long bytes = 8;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cycles") && i + 1 < argc) cycles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = cli_size_arg(argv[0], "--bytes", argv[++i], rank != 0, &bad);
        else {
            if (rank == 0)
                fprintf(stderr, "%s: unknown argument '%s' (--calls N, --cycles N, --bytes SIZE, --repeat N)\n",
                        argv[0], argv[i]);
            bad = 1;
        }
    }
    const int count = (int)(bytes / 8);
    if (calls < 0 || cycles < 1 || repeat < 1 || count < 1 || repeat > 1000) bad = 1;
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    double *in = malloc((size_t)count * sizeof(double)), *out = malloc((size_t)count * sizeof(double));
    double *per_cycle = malloc((size_t)repeat * sizeof(double));
    for (int i = 0; i < count; ++i) in[i] = 1.0;
    int wrong = 0;
    for (int loop = 0; loop <= repeat; ++loop) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int c = 0; c < cycles; ++c) {
            MPI_Comm comm;
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            for (int k = 0; k < calls; ++k) {
                MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, comm);
                if (out[0] != size || out[count - 1] != size) wrong = 1;
            }
            MPI_Comm_free(&comm);
        }
        double mine = (MPI_Wtime() - t0) / cycles, slowest = 0;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (loop > 0) per_cycle[loop - 1] = slowest;
    }
    if (rank == 0) printf("churn %.2f\n", cli_median(per_cycle, repeat) * 1e6);
    int any_wrong = 0;
    MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any_wrong) fprintf(stderr, "bench_comm_churn: WRONG RESULTS\n");
    free(in), free(out), free(per_cycle);
    MPI_Finalize();
    return any_wrong ? 1 : 0;
}
