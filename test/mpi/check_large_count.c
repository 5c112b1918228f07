/* MPI 4 large-count entry point (MPICH): MPI_Allreduce_c is intercepted and served, with counts that fit in an int
 * and, with --huge, a count beyond INT_MAX (2 GiB of MPI_UINT8_T per buffer), checked on every rank. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long check(MPI_Count count, int rank, int size) {
    unsigned char *in = malloc((size_t)count), *out = malloc((size_t)count);
    if (!in || !out) {
        fprintf(stderr, "check_large_count: cannot allocate %lld bytes\n", (long long)count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (MPI_Count i = 0; i < count; ++i) in[i] = (unsigned char)((i * 7 + rank) & 0x3f);
    MPI_Allreduce_c(in, out, count, MPI_UINT8_T, MPI_BXOR, MPI_COMM_WORLD);
    long errors = 0;
    for (MPI_Count i = 0; i < count && errors == 0; ++i) {
        unsigned char want = 0;
        for (int r = 0; r < size; ++r) want ^= (unsigned char)((i * 7 + r) & 0x3f);
        if (out[i] != want) {
            fprintf(stderr, "rank %d: count %lld: wrong byte at %lld\n", rank, (long long)count, (long long)i);
            ++errors;
        }
    }
    free(in);
    free(out);
    return errors;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long errors = check(1, rank, size) + check(1021, rank, size) + check(1 << 20, rank, size);
    if (argc > 1 && strcmp(argv[1], "--huge") == 0) errors += check((MPI_Count)INT_MAX + 17, rank, size);
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("check_large_count: %ld wrong results\n", total);
    int failed = total != 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
