// Ranks with different settings where MPI_Init is not intercepted (issue 56 item 3): the program starts MPI with
// PMPI_Init (as a tool or a wrapper does), so ARShim reads each rank's own environment; rank 0 alone turns the
// argument check on (set here before PMPI_Init, from the launcher's rank variable). Every decision on a communicator
// must come from its agreed settings: the job must finish with every result right (it died with MPI_ERR_TRUNCATE
// or hung when the engine read the rank's own setting). Prints {"local_settings": {"ok": ..., "calls": N}}.
#define _DEFAULT_SOURCE /* setenv under -std=c11 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int launcher_rank(void) {
    const char* names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (int i = 0; i < 3; ++i)
        if (getenv(names[i]) != NULL) return atoi(getenv(names[i]));
    return -1;
}

int main(int argc, char** argv) {
    if (launcher_rank() == 0) setenv("ARSHIM_CHECK_ARGS", "1", 1);
    PMPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    long bad = 0, calls = 0;
    for (int round = 0; round < 50; ++round)
        for (int c = 0; c < 2; ++c) {
            const MPI_Comm comm = c == 0 ? MPI_COMM_WORLD : dup;
            for (int n = 1; n <= 1000; n *= 10) {
                int* in = malloc(sizeof(int) * n);
                int* out = malloc(sizeof(int) * n);
                for (int i = 0; i < n; ++i) in[i] = rank + i;
                MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, comm);
                for (int i = 0; i < n; ++i)
                    if (out[i] != size * (size - 1) / 2 + size * i) ++bad;
                ++calls;
                free(in);
                free(out);
            }
        }
    long total = 0;
    MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("{\"local_settings\": {\"ok\": %s, \"calls\": %ld, \"wrong\": %ld}}\n", total == 0 ? "true" : "false", calls, total);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
