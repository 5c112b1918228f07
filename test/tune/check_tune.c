/* Online-tuning test program (test/tune/tune_test.sh): an ordinary MPI program that makes --calls SUM allreduces of
 * each size from 1 KiB to --max (x4 steps) of --type float (the default) or int, with an int MAX between them, and
 * checks every result on every rank against values it computes itself. Prints "check_tune: W wrong results in C
 * calls" on rank 0 and exits 1 on any. Exploration calls must return right answers like any other call. Under the
 * default ARSHIM_TUNE=guard a float SUM is not explored (its bits would depend on the candidate timing favoured:
 * docs/reproducible.md), an int SUM is. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, calls = 30, integers = 0;
    long max_bytes = 4L << 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--calls")) calls = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max")) max_bytes = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--type")) integers = !strcmp(argv[i + 1], "int");
    }
    float *send = malloc((size_t)max_bytes), *recv = malloc((size_t)max_bytes);
    long wrong = 0, made = 0;
    for (long bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        const int n = (int)(bytes / sizeof(float));
        for (int c = 0; c < calls; ++c) {
            int *isend = (int *)send, *irecv = (int *)recv;
            for (int i = 0; i < n; ++i) {
                if (integers) isend[i] = (rank + i + c) % 7;
                else send[i] = (float)((rank + i + c) % 7);
            }
            MPI_Allreduce(send, recv, n, integers ? MPI_INT : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            ++made;
            for (int i = 0; i < n; ++i) {
                int want = 0;
                for (int r = 0; r < size; ++r) want += (r + i + c) % 7;
                if (integers ? irecv[i] != want : recv[i] != (float)want) {
                    ++wrong;
                    break;
                }
            }
            int mine = rank * 3 + c, most = 0;
            MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            ++made;
            if (most != (size - 1) * 3 + c) ++wrong;
        }
    }
    long totals[2] = {wrong, made}, sums[2];
    MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("check_tune: %ld wrong results in %ld calls\n", sums[0], sums[1]);
    free(send);
    free(recv);
    MPI_Finalize();
    return sums[0] != 0 && rank == 0;
}
