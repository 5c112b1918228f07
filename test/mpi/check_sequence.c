/* Back-to-back small allreduces with no lost or reordered result (issue 43): CALLS calls alternating among three
 * communicators (the world, a duplicate, and a split with the ranks in reverse order), each contributing a value that
 * encodes the call's sequence number, checked on every rank against the sum it must be. A slot reused too early,
 * a missing wait or a result from another call shows as a wrong sum (test/mpi/meson.build runs it with the latency
 * path's test faults too, which must fail it).
 *
 *   check_sequence [CALLS [COUNT [COMMS]]]   defaults: 1000000 calls of 1 element (MPI_LONG_LONG, MPI_SUM) on 3
 *                                            communicators (COMMS 1: the world only, so that a rank may run ahead of
 *                                            the others on one communicator by a whole call) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const long calls = argc > 1 ? atol(argv[1]) : 1000000;
    const int count = argc > 2 ? atoi(argv[2]) : 1;
    const int ncomms = argc > 3 && atoi(argv[3]) >= 1 && atoi(argv[3]) <= 3 ? atoi(argv[3]) : 3;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    long long* in = malloc(sizeof(long long) * (size_t)count);
    long long* out = malloc(sizeof(long long) * (size_t)count);
    long errors = 0;
    /* sum over ranks r of (i * 1000003 + r * 7 + j) */
    const long long rank_part = 7LL * size * (size - 1) / 2;
    for (long i = 0; i < calls; ++i) {
        const int in_place = (i / ncomms) % 2;
        for (int j = 0; j < count; ++j) (in_place ? out : in)[j] = (long long)i * 1000003 + rank * 7 + j;
        MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, count, MPI_LONG_LONG, MPI_SUM, comms[i % ncomms]);
        for (int j = 0; j < count; ++j) {
            const long long expected = (long long)size * ((long long)i * 1000003 + j) + rank_part;
            if (out[j] != expected) {
                if (errors < 5)
                    fprintf(stderr, "check_sequence: rank %d call %ld element %d: %lld, expected %lld\n", rank, i, j,
                            out[j], expected);
                ++errors;
            }
        }
    }
    long total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("check_sequence: %d ranks, %ld calls of %d element(s), %ld wrong\n", size, calls, count, total);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    free(in);
    free(out);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
