/* arshim simulate's probe (tools/arshim/simulate.py): times MPI_Allreduce of doubles (MPI_SUM, separate buffers) at
 * each size given, in simulated time, under SimGrid's smpirun. Built twice with smpicc: arshim-simulate-probe-native
 * (SMPI's own allreduce) and arshim-simulate-probe-arshim (linked with libarshim-smpi.a: ARShim routes the calls).
 *
 *   probe [--iterations N] BYTES...
 *
 * Per size: two warm-up calls (a communicator's first SMP-aware collective costs O(p) in SMPI, and ARShim builds its
 * state on first calls), a barrier, one more call (it absorbs the ranks' skew leaving the barrier), then N calls
 * between two MPI_Wtime; the time per call is the maximum over ranks.
 * Rank 0 prints one line per size: "probe BYTES SIM_US SERVED", SERVED the share of the timed calls that the path
 * ARSHIM_PATH forces served on every rank (the smallest share over ranks; -1 when no path is forced or without
 * ARShim): a forced path that declines a call (arshim_path_calls) is not measured as that path. Buffers of 1 MiB and more are SMPI_SHARED_MALLOC: every
 * rank's buffer is the same memory, so 1 024 ranks fit, and the results are garbage (not checked; test/smpi checks
 * results).
 *
 * Computation (docs/scale.md "Computation"): `arshim simulate` runs SMPI with smpi/simulate-computation:no and sets
 * ARSHIM_SMPI_REDUCE_BYTES_PER_S (and ARSHIM_SMPI_COPY_BYTES_PER_S), which ARShim's SMPI build charges its copies and
 * reductions at, the library's included (it hands the library an op that charges). Without ARShim (the native
 * probe) the calls reduce through a commutative user op that charges the same per-byte cost for the bytes it is
 * given and then sums: SMPI's selectors choose by commutativity alone, so the algorithm is the one MPI_SUM gets, and
 * its reductions, which SMPI never charges itself, cost what ARShim's do.
 *
 *   probe --startup BYTES
 *
 * Start-up instead (docs/scale.md "Start-up at scale"): one line "startup INIT_US WORLD_US TOTAL_US CHECK_US
 * NODES_US DUP_US FIRST_US STEADY_US", each the maximum over ranks: the simulated time at which MPI_Init returned,
 * the first allreduce on the world after it (ARShim's MPI_Init made some already), ARShim's own set-up in MPI_Init,
 * its start-up check and its world node map (arshim_startup_seconds; -1 without ARShim), an MPI_Comm_dup of the
 * world, the slowest of
 * the first 12 allreduces of BYTES on it (ARShim serves a new communicator from its 8th call, and builds the path's
 * state, such as a node window, there) and a later one. */
#include <mpi.h>
#include <simgrid/host.h>

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

/* Seconds per byte reduced (ARSHIM_SMPI_REDUCE_BYTES_PER_S), charged by the native probe's op; 0: none. */
static double g_reduce_seconds_per_byte;

/* MPI_SUM of doubles that first charges its bytes as computation on the rank's simulated core. */
static void charged_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  if (*len <= 0) return;
  smpi_execute_flops((double)*len * sizeof(double) * g_reduce_seconds_per_byte * sg_host_get_speed(sg_host_self()));
  const double* a = in;
  double* b = inout;
  for (int i = 0; i < *len; ++i) b[i] = a[i] + b[i];
}

/* ARShim's query API when the probe is linked with it (weak: null in the native probe). */
extern double arshim_startup_seconds(const char* stage) __attribute__((weak));
extern long long arshim_path_calls(const char* path) __attribute__((weak));

/* Calls this rank's ARShim sent to the forced path (ARSHIM_PATH), or -1 when none is forced or ARShim is absent. */
static long long forced_path_calls(void) {
  const char* path = getenv("ARSHIM_PATH");
  if (arshim_path_calls == NULL || path == NULL || path[0] == '\0') return -1;
  return arshim_path_calls(path);
}

/* The smallest of every rank's `share` (at rank 0). */
static double smallest(double share) {
  double least = 0;
  MPI_Reduce(&share, &least, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  return least;
}

/* The largest of every rank's `seconds`, in microseconds (at rank 0). */
static double slowest_us(double seconds) {
  double slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest * 1e6;
}

enum { FIRST_CALLS = 12 };

static void startup(int rank, long long bytes) {
  const double init = MPI_Wtime();
  /* SMPI sets a communicator's SMP-aware collectives up on the first one (O(p) in simulated time): ARShim's MPI_Init
   * pays it for the world, a program without ARShim at its first allreduce on it, here. */
  double t0 = MPI_Wtime(), one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double world = MPI_Wtime() - t0;
  const double total = arshim_startup_seconds ? arshim_startup_seconds("total") : -1e-6;
  const double check = arshim_startup_seconds ? arshim_startup_seconds("check") : -1e-6;
  const double nodes = arshim_startup_seconds ? arshim_startup_seconds("nodes") : -1e-6;
  long long count = bytes / (long long)sizeof(double);
  if (count < 1) count = 1;
  double* in = calloc((size_t)count, sizeof(double));
  double* out = calloc((size_t)count, sizeof(double));
  if (in == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Comm comm;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const double dup = MPI_Wtime() - t0;
  double first = 0; /* the slowest of the first calls: ARShim serves a new communicator from its 8th */
  for (int c = 0; c < FIRST_CALLS; ++c) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, comm);
    const double took = MPI_Wtime() - t0;
    if (took > first) first = took;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, comm);
  const double steady = MPI_Wtime() - t0;
  const double slowest[8] = {slowest_us(init),  slowest_us(world), slowest_us(total), slowest_us(check),
                             slowest_us(nodes), slowest_us(dup),   slowest_us(first), slowest_us(steady)};
  if (rank == 0) {
    printf("startup %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", slowest[0], slowest[1], slowest[2], slowest[3],
           slowest[4], slowest[5], slowest[6], slowest[7]);
    fflush(stdout);
  }
  MPI_Comm_free(&comm);
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc == 3 && strcmp(argv[1], "--startup") == 0) {
    startup(rank, atoll(argv[2]));
    MPI_Finalize();
    return 0;
  }
  int iterations = 5, first = 1;
  if (argc > 2 && strcmp(argv[1], "--iterations") == 0) {
    iterations = atoi(argv[2]);
    first = 3;
  }
  if (iterations < 1) iterations = 1;
  /* The op the timed calls reduce with: MPI_SUM, or without ARShim and with reductions charged the charging sum. */
  MPI_Op op = MPI_SUM;
  const char* rate = getenv("ARSHIM_SMPI_REDUCE_BYTES_PER_S");
  if (arshim_path_calls == NULL && rate != NULL && atof(rate) > 0) {
    g_reduce_seconds_per_byte = 1.0 / atof(rate);
    MPI_Op_create(charged_sum, 1, &op);
  }
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
    for (int w = 0; w < 2; ++w) MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, op, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Ranks leave a barrier at different times (under SMPI's ompi selector at 256 ranks, 8 B calls: 3 us a call over
     * 5 timed calls, 0.3 us over 50): one more untimed call absorbs that, so the timed calls are back-to-back calls
     * from a steady state, whatever the barrier's algorithm. */
    MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, op, MPI_COMM_WORLD);
    const long long calls_before = forced_path_calls();
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, op, MPI_COMM_WORLD);
    const double elapsed = MPI_Wtime() - t0;
    const long long calls_after = forced_path_calls();
    const double per_call_us = slowest_us(elapsed / iterations);
    const double served = smallest(calls_before < 0 ? -1.0 : (double)(calls_after - calls_before) / iterations);
    if (rank == 0) {
      printf("probe %lld %.3f %.3f\n", bytes, per_call_us, served);
      fflush(stdout);
    }
    release(in, shared);
    release(out, shared);
  }
  if (op != MPI_SUM) MPI_Op_free(&op);
  MPI_Finalize();
  return 0;
}
