/* cluster_probe: the emulated cluster's self-check (`arshim cluster verify`), an ordinary MPI program.
 *
 *   cluster_probe [--ppn P] [--hosts H] [--prefix NAME] [--bytes N] [--reps R]
 *
 * 1. Node split: every rank reports its host name and the MPI_COMM_TYPE_SHARED communicator the MPI library gives
 *    it. Rank 0 prints one line per rank and checks that two ranks share a node exactly when they run on the same
 *    (virtual) host, and, with --ppn/--prefix, that rank r runs on host NAME<r / P> (block mapping).
 * 2. Traffic: R allreduces of N bytes of floats, timed; the caller compares the NICs' byte counters before and after.
 * 3. The library's point-to-point floor among one rank per host (each node's lowest rank; the others wait in a
 *    barrier, as an allreduce's non-leaders wait), R times each, medians of the slowest host:
 *    one stream: every host sends 2(H-1)/H x N bytes to the next host while it receives as much from the previous
 *                one (the bytes the link bound counts, no dependency between them);
 *    steps:      2(H-1) blocking exchanges of N/H bytes round the same ring, each after the previous one (a ring
 *                allreduce's dependencies without its reductions).
 *    What the second costs over the first is what a step costs on this machine (docs/cluster.md "What a step
 *    costs when the hosts share two cores").
 * Exit status 0 when the node split and every allreduce result are right. */
#define _DEFAULT_SOURCE /* gethostname under -std=c11 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"

#define NAME_LEN 64

/* Section 3 above; prints one line on world rank 0 when there are two hosts or more. */
static void point_to_point_floor(MPI_Comm node, long bytes, int reps) {
    int node_rank, world_rank;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm hosts;
    MPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, world_rank, &hosts);
    int h = 0;
    if (hosts != MPI_COMM_NULL) MPI_Comm_size(hosts, &h);
    MPI_Bcast(&h, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (h < 2 || reps < 1 || 2L * bytes > INT_MAX) {
        if (hosts != MPI_COMM_NULL) MPI_Comm_free(&hosts);
        return;
    }
    const long block = bytes / h, share = 2L * (h - 1) * block;
    double *times = calloc(2 * (size_t)reps, sizeof(double));
    char *out = calloc((size_t)share + 1, 1), *in = calloc((size_t)share + 1, 1);
    for (int way = 0; way < 2; ++way) {
        for (int rep = 0; rep < reps; ++rep) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (hosts == MPI_COMM_NULL) continue;
            int r;
            MPI_Comm_rank(hosts, &r);
            const int right = (r + 1) % h, left = (r + h - 1) % h;
            double t = MPI_Wtime();
            if (way == 0) {
                MPI_Request q[2];
                MPI_Irecv(in, (int)share, MPI_BYTE, left, 1, hosts, &q[0]);
                MPI_Isend(out, (int)share, MPI_BYTE, right, 1, hosts, &q[1]);
                MPI_Wait(&q[0], MPI_STATUS_IGNORE);
                MPI_Wait(&q[1], MPI_STATUS_IGNORE);
            } else {
                for (int k = 0; k < 2 * (h - 1); ++k)
                    MPI_Sendrecv(out + k * block, (int)block, MPI_BYTE, right, 2, in + k * block, (int)block,
                                 MPI_BYTE, left, 2, hosts, MPI_STATUS_IGNORE);
            }
            t = MPI_Wtime() - t;
            MPI_Allreduce(&t, &times[way * reps + rep], 1, MPI_DOUBLE, MPI_MAX, hosts);
        }
    }
    if (world_rank == 0) {
        const double stream = cli_median(times, reps), steps = cli_median(times + reps, reps);
        printf("probe: point-to-point hosts=%d bytes=%ld stream_seconds=%.6f steps_seconds=%.6f\n", h, bytes, stream,
               steps);
    }
    free(times);
    free(out);
    free(in);
    if (hosts != MPI_COMM_NULL) MPI_Comm_free(&hosts);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ppn = 0, hosts = 0, reps = 4, bad_size = 0;
    long bytes = 16L << 20;
    const char *prefix = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--ppn") && i + 1 < argc) ppn = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hosts") && i + 1 < argc) hosts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc) prefix = argv[++i];
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = cli_size_arg("cluster_probe", "--bytes", argv[++i], rank != 0, &bad_size);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    }
    if (bad_size) {
        MPI_Finalize();
        return 2;
    }

    /* 1. node split */
    char host[NAME_LEN] = {0}, proc[MPI_MAX_PROCESSOR_NAME] = {0};
    gethostname(host, sizeof host - 1);
    int len = 0;
    MPI_Get_processor_name(proc, &len);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_size, node_id;
    MPI_Comm_size(node, &node_size);
    MPI_Allreduce(&rank, &node_id, 1, MPI_INT, MPI_MIN, node); /* node id = its lowest world rank */
    char *hosts_all = rank == 0 ? malloc((size_t)size * NAME_LEN) : NULL;
    int *ids = rank == 0 ? malloc((size_t)size * 2 * sizeof(int)) : NULL;
    int mine[2] = {node_id, node_size};
    MPI_Gather(host, NAME_LEN, MPI_CHAR, hosts_all, NAME_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, 2, MPI_INT, ids, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 0) {
        for (int r = 0; r < size; ++r) {
            const char *h = hosts_all + (size_t)r * NAME_LEN;
            printf("rank %d host %s shared-memory node %d (%d ranks)\n", r, h, ids[2 * r], ids[2 * r + 1]);
            for (int q = 0; q < size; ++q) {
                int same_host = strcmp(h, hosts_all + (size_t)q * NAME_LEN) == 0;
                int same_node = ids[2 * r] == ids[2 * q];
                if (same_host != same_node) {
                    printf("probe: ERROR: ranks %d and %d: %s host, %s shared-memory node\n", r, q,
                           same_host ? "same" : "different", same_node ? "same" : "different");
                    bad = 1;
                }
            }
            if (prefix && ppn > 0) {
                char want[NAME_LEN];
                snprintf(want, sizeof want, "%s%d", prefix, r / ppn);
                if (strcmp(h, want) != 0) {
                    printf("probe: ERROR: rank %d runs on %s, expected %s\n", r, h, want);
                    bad = 1;
                }
            }
        }
        int distinct = 0;
        for (int r = 0; r < size; ++r) distinct += ids[2 * r] == r;
        if (hosts > 0 && distinct != hosts) {
            printf("probe: ERROR: %d shared-memory nodes, expected %d hosts\n", distinct, hosts);
            bad = 1;
        }
        if (!bad) printf("probe: node split matches hosts (%d nodes, %d ranks)\n", distinct, size);
    }

    /* 2. traffic */
    size_t count = (size_t)bytes / sizeof(float);
    float *buf = malloc(count * sizeof(float));
    long wrong = 0;
    double elapsed = 0;
    for (int r = 0; r < reps; ++r) {
        for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1 + (int)(i % 5));
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        elapsed += MPI_Wtime() - t0;
        for (size_t i = 0; i < count; ++i)
            if (buf[i] != (float)(size * (size + 1) / 2 + size * (int)(i % 5))) {
                ++wrong;
                break;
            }
    }
    long wrong_all = 0;
    double slowest = 0;
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("probe: allreduce bytes=%ld reps=%d seconds=%.6f %s\n", bytes, reps, slowest,
               wrong_all ? "WRONG RESULTS" : "results correct");
        if (wrong_all) bad = 1;
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    point_to_point_floor(node, bytes, reps);
    free(buf);
    free(hosts_all);
    free(ids);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return bad;
}
