/* MPI test of the policy in the library: an ordinary MPI program that makes one MPI_Allreduce per size given on
 * the command line and checks, on every rank, that the call took the path expected for that size (ARShim's
 * per-path counters, found with dlsym) and that the result is right (values the program computes itself). It
 * also checks that every rank counted the same paths: ranks that decided differently would hang or corrupt the
 * result, and this makes the disagreement visible even when they happen not to.
 *
 *   check_policy_paths BYTES:PATH [BYTES:PATH ...]      e.g. 512:native 8192:pipelined 1048576:multileader
 *
 * Exit 0 when every check held on every rank. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kPaths[] = {"native", "pipelined", "multileader", "sharp", "reproducible", "latency"};
enum { kPathCount = 6 };

static long long path_calls(const char *path) {
    long long (*fn)(const char *) = (long long (*)(const char *))dlsym(RTLD_DEFAULT, "arshim_path_calls");
    return fn ? fn(path) : -1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (path_calls("native") < 0) {
        if (rank == 0) fprintf(stderr, "check_policy_paths: ARShim is not preloaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long failures = 0;
    for (int a = 1; a < argc; ++a) {
        const char *colon = strchr(argv[a], ':');
        if (colon == NULL) {
            if (rank == 0) fprintf(stderr, "check_policy_paths: bad argument '%s' (want BYTES:PATH)\n", argv[a]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const long bytes = atol(argv[a]);
        const char *want = colon + 1;
        const int count = (int)(bytes / (long)sizeof(int));
        int *send = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
        int *recv = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
        for (int i = 0; i < count; ++i) send[i] = (rank + 1) * (i % 7 + 1);

        long long before[kPathCount], after[kPathCount];
        for (int p = 0; p < kPathCount; ++p) before[p] = path_calls(kPaths[p]);
        MPI_Allreduce(send, recv, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int p = 0; p < kPathCount; ++p) after[p] = path_calls(kPaths[p]);

        const int tri = size * (size + 1) / 2;
        long wrong = 0;
        for (int i = 0; i < count; ++i) wrong += recv[i] != tri * (i % 7 + 1);
        const char *took = "none";
        for (int p = 0; p < kPathCount; ++p)
            if (after[p] == before[p] + 1) took = kPaths[p];
        if (wrong) {
            ++failures;
            printf("rank %d: FAIL %ld B: %ld wrong elements\n", rank, bytes, wrong);
        }
        if (strcmp(took, want) != 0) {
            ++failures;
            printf("rank %d: FAIL %ld B took path %s, want %s\n", rank, bytes, took, want);
        }
        /* Every rank took the same path: compare the path index across ranks. */
        int mine = -1, lo = 0, hi = 0;
        for (int p = 0; p < kPathCount; ++p)
            if (strcmp(took, kPaths[p]) == 0) mine = p;
        PMPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        PMPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (lo != hi) {
            ++failures;
            printf("rank %d: FAIL %ld B: ranks took different paths\n", rank, bytes);
        }
        free(send);
        free(recv);
    }
    long total = 0;
    PMPI_Allreduce(&failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("check_policy_paths: %d ranks, %d calls, %ld failures\n", size, argc - 1, total);
    MPI_Finalize();
    return total != 0;
}
