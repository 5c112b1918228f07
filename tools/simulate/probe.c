/* arshim simulate's probe (tools/arshim/simulate.py): times MPI_Allreduce of doubles (MPI_SUM, separate buffers) at
 * each size given, in simulated time, under SimGrid's smpirun. Built twice with smpicc: arshim-simulate-probe-native
 * (SMPI's own allreduce) and arshim-simulate-probe-arshim (linked with libarshim-smpi.a: ARShim routes the calls).
 *
 *   probe [--iterations N] BYTES...
 *
 * Per size: two warm-up calls (a communicator's first SMP-aware collective costs O(p) in SMPI, and ARShim builds its
 * state on first calls), a barrier, then N calls between two MPI_Wtime; the time per call is the maximum over ranks.
 * Rank 0 prints one line per size: "probe BYTES SIM_US". Buffers of 1 MiB and more are SMPI_SHARED_MALLOC: every
 * rank's buffer is the same memory, so 1 024 ranks fit, and the results are garbage (not checked; test/smpi checks
 * results). */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* alloc(size_t bytes, int shared) {
  if (shared) return SMPI_SHARED_MALLOC(bytes);
  void* p = malloc(bytes);
  if (p != NULL) memset(p, 0, bytes);
  return p;
}

static void release(void* p, int shared) {
  if (shared) SMPI_SHARED_FREE(p);
  else free(p);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int iterations = 5, first = 1;
  if (argc > 2 && strcmp(argv[1], "--iterations") == 0) {
    iterations = atoi(argv[2]);
    first = 3;
  }
  if (iterations < 1) iterations = 1;
  for (int a = first; a < argc; ++a) {
    const long long bytes = atoll(argv[a]);
    long long count = bytes / (long long)sizeof(double);
    if (count < 1) count = 1;
    const size_t size = (size_t)count * sizeof(double);
    const int shared = size >= (1u << 20);
    double* in = alloc(size, shared);
    double* out = alloc(size, shared);
    if (in == NULL || out == NULL) {
      fprintf(stderr, "probe: cannot allocate %zu bytes\n", size);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int w = 0; w < 2; ++w) MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double per_call = (MPI_Wtime() - t0) / iterations, slowest = 0;
    MPI_Reduce(&per_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("probe %lld %.3f\n", bytes, slowest * 1e6);
      fflush(stdout);
    }
    release(in, shared);
    release(out, shared);
  }
  MPI_Finalize();
  return 0;
}
