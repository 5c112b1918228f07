/* arshim-tune-probe: the measurement program `arshim tune` launches (docs/tuning.md "arshim tune").
 *
 * Under ARShim with a forced path (ARSHIM_PATH and its parameters, set by the tuner), it times, size by size, the
 * shim's MPI_Allreduce (the candidate) against the library's own PMPI_Allreduce (native) in the same run,
 * interleaved call by call (the order alternates so neither always runs first), each call between barriers, and
 * the time of a call is the slowest rank's. It repeats a size in batches until both medians move less than 2%
 * between batches, or a repetition or time cap is reached. Rank 0 prints CSV on stdout:
 *   layout,<nodes>,<ppn>,<ranks>
 *   size,<bytes>,<reps>,<cand_p25_us>,<cand_median_us>,<cand_p75_us>,<native_p25_us>,<native_median_us>,
 *        <native_p75_us>,<served>,<right>
 * served: the fraction of the candidate's calls ARShim's path served (arshim_path_calls, found with dlsym; -1 when
 * not preloaded); right: 1 when the candidate's first result was exact (integer-valued floats).
 *
 *   arshim-tune-probe --sizes B[,B...] --path NAME [--shape all|one-per-node] [--max-reps N] [--seconds S]
 *   arshim-tune-probe --params
 *
 * --params measures the cost model's machine parameters directly (policy/cost_model.h MachineParams), one line each,
 *   param,<name>,<value in SI units>
 * copy_bw (memcpy of 8 MiB on rank 0), gamma (the library's MPI_FLOAT SUM over 8 MiB, MPI_Reduce_local),
 * intra_latency (half the round trip of 8 B between rank 0 and another rank of its node), alpha and net_bw (half the
 * round trip of 8 B and of 4 MiB between rank 0 and the lowest rank of another node: alpha, then
 * bytes / (time - alpha)). A parameter the layout cannot show (no second node, no second rank on a node) is not
 * printed. Medians of repeated measurements.
 *
 * --shape one-per-node measures on a communicator of one rank per node (the lowest rank of each): the layout of a
 * job with one rank per node, from the same launch. The other ranks wait in a sleeping loop (MPI_Ibarrier polled
 * every millisecond), so they take no processor from the ranks measuring.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p-th quantile (0..1) of the first n values, sorted in a copy. */
static double quantile(const double *v, int n, double p, double *scratch) {
    memcpy(scratch, v, sizeof(double) * (size_t)n);
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    const int i = (int)(p * (n - 1) + 0.5);
    return scratch[i];
}

static long long path_calls(const char *path) {
    static long long (*fn)(const char *);
    static int looked;
    if (!looked) {
        looked = 1;
        *(void **)&fn = dlsym(RTLD_DEFAULT, "arshim_path_calls");
    }
    return fn ? fn(path) : -1;
}

/* Waits for every rank of `comm` to reach this point without spinning: the ranks left out of a measurement must
 * not compete for the processor with the ranks measuring (an oversubscribed or emulated node has few cores). */
static void sleeping_barrier(MPI_Comm comm) {
    MPI_Request request;
    int done = 0;
    PMPI_Ibarrier(comm, &request);
    const struct timespec millisecond = {0, 1000000};
    for (PMPI_Test(&request, &done, MPI_STATUS_IGNORE); !done; PMPI_Test(&request, &done, MPI_STATUS_IGNORE))
        nanosleep(&millisecond, NULL);
}

/* Half the median round trip of `bytes` between ranks `a` and `b` of MPI_COMM_WORLD (the other ranks return 0). */
static double half_round_trip(int a, int b, int bytes, int reps) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != a && rank != b) return 0;
    char *buf = calloc((size_t)bytes + 1, 1);
    double *times = malloc(sizeof(double) * (size_t)reps), *scratch = malloc(sizeof(double) * (size_t)reps);
    if (!buf || !times || !scratch) MPI_Abort(MPI_COMM_WORLD, 1);
    const int peer = rank == a ? b : a;
    for (int r = -2; r < reps; ++r) { /* two warm-up round trips: connections and registration */
        const double t0 = MPI_Wtime();
        if (rank == a) {
            PMPI_Send(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            PMPI_Recv(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            PMPI_Recv(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            PMPI_Send(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        }
        if (r >= 0) times[r] = (MPI_Wtime() - t0) / 2;
    }
    const double median = quantile(times, reps, 0.5, scratch);
    free(buf);
    free(times);
    free(scratch);
    return median;
}

/* Median time of `reps` runs of a local operation over 8 MiB: 0 memcpy, 1 MPI_Reduce_local SUM of MPI_FLOAT. */
static double local_seconds(int what, int reps) {
    const int count = 2 << 20;
    float *x = malloc(sizeof(float) * (size_t)count), *y = malloc(sizeof(float) * (size_t)count);
    double *times = malloc(sizeof(double) * (size_t)reps), *scratch = malloc(sizeof(double) * (size_t)reps);
    if (!x || !y || !times || !scratch) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < count; ++i) x[i] = (float)(i % 7), y[i] = 1.0f;
    for (int r = -1; r < reps; ++r) {
        const double t0 = MPI_Wtime();
        if (what == 0) memcpy(y, x, sizeof(float) * (size_t)count);
        else MPI_Reduce_local(x, y, count, MPI_FLOAT, MPI_SUM);
        if (r >= 0) times[r] = MPI_Wtime() - t0;
    }
    const double median = quantile(times, reps, 0.5, scratch);
    free(x);
    free(y);
    free(times);
    free(scratch);
    return median;
}

/* --params: the machine parameters (see the header comment). */
static void measure_params(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int lowest_on_node = rank;
    PMPI_Allreduce(MPI_IN_PLACE, &lowest_on_node, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    const int with_rank0 = lowest_on_node == 0;
    int local_peer = with_rank0 && rank != 0 ? rank : size, remote_peer = with_rank0 ? size : rank;
    PMPI_Allreduce(MPI_IN_PLACE, &local_peer, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(MPI_IN_PLACE, &remote_peer, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const double bytes8m = 8.0 * 1024 * 1024;
    if (rank == 0) {
        printf("param,copy_bw,%.6g\n", bytes8m / local_seconds(0, 9));
        printf("param,gamma,%.6g\n", bytes8m / local_seconds(1, 9));
    }
    if (local_peer < size) {
        const double t = half_round_trip(0, local_peer, 8, 200);
        if (rank == 0) printf("param,intra_latency,%.6g\n", t);
    }
    if (remote_peer < size) {
        const int big = 4 << 20;
        const double alpha = half_round_trip(0, remote_peer, 8, 100);
        const double t = half_round_trip(0, remote_peer, big, 7);
        if (rank == 0) {
            printf("param,alpha,%.6g\n", alpha);
            if (t > alpha) printf("param,net_bw,%.6g\n", big / (t - alpha));
        }
    }
    fflush(stdout);
    sleeping_barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    const char *sizes_arg = NULL, *path = "native", *shape = "all";
    int max_reps = 200, params = 0;
    double seconds = 2.0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--path") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) shape = argv[++i];
        else if (!strcmp(argv[i], "--params")) params = 1;
        else if (!strcmp(argv[i], "--max-reps") && i + 1 < argc) max_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else {
            if (world_rank == 0) fprintf(stderr, "arshim-tune-probe: unknown argument '%.100s'\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (params) {
        measure_params();
        MPI_Finalize();
        return 0;
    }
    const int one_per_node = !strcmp(shape, "one-per-node");
    if (!sizes_arg || max_reps < 5 || max_reps > 100000 || !(seconds > 0) || (!one_per_node && strcmp(shape, "all"))) {
        if (world_rank == 0)
            fprintf(stderr, "arshim-tune-probe: --sizes B[,B...] required; --max-reps 5..100000; "
                            "--shape all|one-per-node\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* The communicator measured: every rank, or the lowest rank of each node (world rank 0 is always in it). */
    MPI_Comm node, comm = MPI_COMM_WORLD;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_free(&node);
    if (one_per_node) {
        PMPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, world_rank, &comm);
        if (comm == MPI_COMM_NULL) {
            sleeping_barrier(MPI_COMM_WORLD);
            MPI_Finalize();
            return 0;
        }
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    /* The layout as the tuner's table keys it: nodes and processes per node (the largest node) of `comm`. */
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_size = 1, leader = 0, nodes = 0, ppn = 0;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    leader = node_rank == 0;
    PMPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
    PMPI_Allreduce(&node_size, &ppn, 1, MPI_INT, MPI_MAX, comm);
    MPI_Comm_free(&node);
    if (rank == 0) printf("layout,%d,%d,%d\n", nodes, ppn, size);

    double *cand = malloc(sizeof(double) * (size_t)max_reps), *native = malloc(sizeof(double) * (size_t)max_reps);
    double *scratch = malloc(sizeof(double) * (size_t)max_reps);
    char *list = strdup(sizes_arg);
    if (!cand || !native || !scratch || !list) MPI_Abort(comm, 1);
    for (char *word = strtok(list, ","); word; word = strtok(NULL, ",")) {
        const long long bytes = atoll(word);
        const int count = (int)(bytes / 4);
        if (bytes < 0 || bytes / 4 > 0x7fffffffLL) MPI_Abort(comm, 2);
        float *send = malloc((size_t)count * 4 + 64), *recv = malloc((size_t)count * 4 + 64);
        if (!send || !recv) MPI_Abort(comm, 1);
        for (int i = 0; i < count; ++i) send[i] = (float)(rank + i % 3);

        /* Two warm-up calls each (a path's first call builds its windows), the first one checked. */
        int right = 1;
        for (int w = 0; w < 2; ++w) {
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, comm);
            if (w == 0)
                for (int i = 0; i < count; ++i)
                    if (recv[i] != (float)((double)size * (size - 1) / 2 + (double)size * (i % 3))) {
                        right = 0;
                        break;
                    }
            PMPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, comm);
        }
        PMPI_Allreduce(MPI_IN_PLACE, &right, 1, MPI_INT, MPI_MIN, comm);
        const long long served_before = path_calls(path);

        int reps = 0;
        double prev_c = 0, prev_n = 0;
        const double started = MPI_Wtime();
        for (;;) {
            const int batch = reps + 10 > max_reps ? max_reps - reps : 10;
            for (int r = 0; r < batch; ++r, ++reps) {
                for (int half = 0; half < 2; ++half) {
                    const int shim_now = (half == 0) == (reps % 2 == 0);
                    PMPI_Barrier(comm);
                    const double t0 = MPI_Wtime();
                    if (shim_now) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, comm);
                    else PMPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, comm);
                    (shim_now ? cand : native)[reps] = MPI_Wtime() - t0;
                }
            }
            /* Every rank decides alike: the slowest rank's times and rank 0's clock. */
            PMPI_Allreduce(MPI_IN_PLACE, cand, reps, MPI_DOUBLE, MPI_MAX, comm);
            PMPI_Allreduce(MPI_IN_PLACE, native, reps, MPI_DOUBLE, MPI_MAX, comm);
            const double mc = quantile(cand, reps, 0.5, scratch), mn = quantile(native, reps, 0.5, scratch);
            int more = reps < max_reps && MPI_Wtime() - started < seconds &&
                       (reps < 20 || mc > prev_c * 1.02 || mc < prev_c * 0.98 || mn > prev_n * 1.02 ||
                        mn < prev_n * 0.98);
            PMPI_Bcast(&more, 1, MPI_INT, 0, comm);
            prev_c = mc;
            prev_n = mn;
            if (!more) break;
        }
        const long long served_after = path_calls(path);
        const double served =
            served_before < 0 ? -1.0 : (double)(served_after - served_before) / (reps > 0 ? reps : 1);
        if (rank == 0)
            printf("size,%lld,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%d\n", bytes, reps,
                   quantile(cand, reps, 0.25, scratch) * 1e6, quantile(cand, reps, 0.5, scratch) * 1e6,
                   quantile(cand, reps, 0.75, scratch) * 1e6, quantile(native, reps, 0.25, scratch) * 1e6,
                   quantile(native, reps, 0.5, scratch) * 1e6, quantile(native, reps, 0.75, scratch) * 1e6, served,
                   right);
        fflush(stdout);
        free(send);
        free(recv);
    }
    free(list);
    free(cand);
    free(native);
    free(scratch);
    if (one_per_node) {
        MPI_Comm_free(&comm);
        sleeping_barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
