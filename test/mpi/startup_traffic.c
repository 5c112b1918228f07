/* An MPI program whose only traffic is one 8-byte MPI_Allreduce on MPI_COMM_WORLD and one on a split communicator
 * (and, with --odd, one broadcast: the control that the checker sees an odd count). Run under Open MPI's message
 * monitoring by test_startup_traffic.py. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    double half_sum = 0;
    MPI_Allreduce(&one, &half_sum, 1, MPI_DOUBLE, MPI_SUM, half);
    MPI_Comm_free(&half);
    if (argc > 1 && strcmp(argv[1], "--odd") == 0) {
        int x = 0;
        MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int ok = sum == size;
    if (rank == 0) printf("startup_traffic: %s\n", ok ? "ok" : "WRONG SUM");
    /* The same as data, for the test (test_startup_traffic.py). */
    if (rank == 0) printf("{\"startup_traffic\": {\"ok\": %s}}\n", ok ? "true" : "false");
    MPI_Finalize();
    return ok ? 0 : 1;
}
