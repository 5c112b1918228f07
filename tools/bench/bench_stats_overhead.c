/* bench_stats_overhead: the cost of ARShim's call statistics on the smallest allreduce, measured in one run.
 *
 *   mpirun -n 2 -x LD_PRELOAD=libarshim-openmpi.so ./bench_stats_overhead-openmpi [--iters N] [--reps R] [--bytes B]
 *                                                                              [--self]
 *   mpirun -n 2 [-x LD_PRELOAD=...] ./bench_stats_overhead-openmpi --plain [--sizes 8,1024] [--iters N] [--reps R]
 *
 * An 8-byte MPI_DOUBLE sum loop, in seven modes interleaved in every repetition (their order rotates):
 *   library    PMPI_Allreduce called directly: the library without ARShim, in the same process and run
 *   off        MPI_Pcontrol(0): collection paused (no clock, no counters; the shim still routes every call)
 *   count      the default without ARSHIM_STATS: per-path / per-reason counters only, no clock
 *   on         a log or summary is wanted (ARSHIM_STATS set), call sites off: the clock pair on one call in N per
 *              row (ARSHIM_STATS_SAMPLE, the process's setting: 64 by default)
 *   callsites  ARSHIM_STATS set with ARSHIM_STATS_CALLSITES=1 (the default): clock and call site on one call in N
 *   on-all     as `on`, every call timed (ARSHIM_STATS_SAMPLE=1)
 *   sites-all  as `callsites`, every call timed and its site recorded
 * (switched with the exported arshim_stats_set_timed / _set_callsites / _set_sample). Each phase times N calls after
 * a barrier; a phase's time per call is the slowest rank's. Prints the median and minimum over the repetitions and
 * the ratios to `library`, i.e. what preloading ARShim costs a call it routes to the library. --self loops on
 * MPI_COMM_SELF instead of MPI_COMM_WORLD: a call that costs the library almost nothing, so the differences are the
 * statistics' own nanoseconds. Without ARShim preloaded all modes are the same native loop (a baseline for the
 * shim's own cost).
 *
 * --plain switches nothing: it times the MPI_Allreduce loop as the process's environment configured it (native, or
 * ARShim with whatever ARSHIM_* settings), for each of --sizes in turn, and prints one line per size,
 *   plain BYTES MEDIAN_NS MIN_NS
 * so that separate launches (tools/bench/bench_stats_launches.py) compare configurations a process cannot switch:
 * the library alone, ARShim without statistics, ARShim with a log.
 * Built by tools/bench/meson.build; see docs/stats.md "Overhead". */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

enum { LIBRARY, OFF, COUNT, ON, SITES, ON_ALL, SITES_ALL, MODES };
static const char *mode_names[MODES] = {"library", "off", "count", "on", "callsites", "on-all", "sites-all"};
enum { MAX_SIZES = 8 };

static double median_of(double *values, int n) {
    cli_sort(values, n);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/* One timed phase: `iters` calls after a barrier; the slowest rank's time per call. */
static double phase(int library, long iters, double *in, double *out, int count, MPI_Comm comm) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (library)
        for (long i = 0; i < iters; ++i) PMPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, comm);
    else
        for (long i = 0; i < iters; ++i) MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, comm);
    double per_call = (MPI_Wtime() - t0) / (double)iters, slowest = 0;
    MPI_Allreduce(&per_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* --plain: each size's loop in turn (the order rotates per repetition), nothing switched. */
static void plain(int rank, const int *sizes, int nsizes, long iters, int reps, MPI_Comm comm) {
    double *t[MAX_SIZES];
    double *in[MAX_SIZES], *out[MAX_SIZES];
    for (int s = 0; s < nsizes; ++s) {
        t[s] = malloc(sizeof(double) * (size_t)reps);
        in[s] = calloc((size_t)sizes[s] / sizeof(double), sizeof(double));
        out[s] = calloc((size_t)sizes[s] / sizeof(double), sizeof(double));
        for (long i = 0; i < iters / 10 + 10; ++i)  /* warm-up: context, decision cache, rows */
            MPI_Allreduce(in[s], out[s], sizes[s] / (int)sizeof(double), MPI_DOUBLE, MPI_SUM, comm);
    }
    for (int r = 0; r < reps; ++r)
        for (int k = 0; k < nsizes; ++k) {
            int s = (r + k) % nsizes;
            t[s][r] = phase(0, iters, in[s], out[s], sizes[s] / (int)sizeof(double), comm);
        }
    for (int s = 0; s < nsizes; ++s) {
        double median = median_of(t[s], reps);
        if (rank == 0) printf("plain %d %.2f %.2f\n", sizes[s], median * 1e9, t[s][0] * 1e9);
        free(t[s]);
        free(in[s]);
        free(out[s]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 20000;
    int reps = 15, bytes = 8, plain_mode = 0, nsizes = 0, sizes[MAX_SIZES];
    MPI_Comm comm = MPI_COMM_WORLD;
    int bad = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--self")) comm = MPI_COMM_SELF;
        else if (!strcmp(argv[i], "--plain")) plain_mode = 1;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            for (char *p = strtok(argv[++i], ","); p && nsizes < MAX_SIZES; p = strtok(NULL, ",")) {
                sizes[nsizes] = atoi(p);
                bad |= sizes[nsizes++] < 8;
            }
        } else bad = 1;
    }
    if (bad) {
        if (rank == 0)
            fprintf(stderr, "usage: %s [--iters N] [--reps R] [--bytes B] [--self] | --plain [--sizes B,B...] "
                            "[--iters N] [--reps R] [--self]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (iters < 1 || reps < 1 || bytes < 8) MPI_Abort(MPI_COMM_WORLD, 2);
    if (plain_mode) {
        if (nsizes == 0) sizes[nsizes++] = bytes;
        plain(rank, sizes, nsizes, iters, reps, comm);
        MPI_Finalize();
        return 0;
    }
    int (*set_callsites)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "arshim_stats_set_callsites");
    int (*set_timed)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "arshim_stats_set_timed");
    int (*set_sample)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "arshim_stats_set_sample");
    int count = bytes / (int)sizeof(double);
    double *in = calloc((size_t)count, sizeof(double)), *out = calloc((size_t)count, sizeof(double));
    double *t[MODES];
    for (int m = 0; m < MODES; ++m) t[m] = malloc(sizeof(double) * (size_t)reps);

    /* warm-up: communicator context, decision cache, call-site table, counters */
    for (long i = 0; i < iters / 10 + 10; ++i) MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, comm);
    int initial_timed = set_timed ? set_timed(1) : 0;
    int initial_sites = set_callsites ? set_callsites(1) : 0;
    int period = set_sample ? set_sample(1) : 1;  /* the process's ARSHIM_STATS_SAMPLE */
    if (set_sample) set_sample(period);

    for (int r = 0; r < reps; ++r) {
        for (int k = 0; k < MODES; ++k) {
            int m = (r + k) % MODES;
            MPI_Pcontrol(m == OFF ? 0 : 1);
            if (set_timed) set_timed(m == ON || m == SITES || m == ON_ALL || m == SITES_ALL);
            if (set_callsites) set_callsites(m == SITES || m == SITES_ALL);
            if (set_sample) set_sample(m == ON_ALL || m == SITES_ALL ? 1 : period);
            t[m][r] = phase(m == LIBRARY, iters, in, out, count, comm);
        }
    }
    MPI_Pcontrol(1);
    if (set_timed) set_timed(initial_timed);
    if (set_callsites) set_callsites(initial_sites);
    if (set_sample) set_sample(period);

    if (rank == 0) {
        double median[MODES], best[MODES];
        for (int m = 0; m < MODES; ++m) {
            median[m] = median_of(t[m], reps);
            best[m] = t[m][0];
        }
        printf("bench_stats_overhead: %d ranks, %d B MPI_DOUBLE sum on %s, %ld calls x %d repetitions per mode, "
               "timed 1 in %d%s\n", size, bytes, comm == MPI_COMM_SELF ? "MPI_COMM_SELF" : "MPI_COMM_WORLD", iters,
               reps, period, set_callsites ? "" : " [ARShim not preloaded: all modes native]");
        printf("%-10s %12s %12s %12s %12s\n", "mode", "median_ns", "min_ns", "median/lib", "min/lib");
        for (int m = 0; m < MODES; ++m)
            printf("%-10s %12.1f %12.1f %12.3f %12.3f\n", mode_names[m], median[m] * 1e9, best[m] * 1e9,
                   median[m] / median[LIBRARY], best[m] / best[LIBRARY]);
        printf("bench_stats_overhead (median vs PMPI_Allreduce called directly):");
        for (int m = OFF; m < MODES; ++m)
            printf(" %s %+.1f%% (%+.1f ns)%s", mode_names[m], 100.0 * (median[m] / median[LIBRARY] - 1),
                   1e9 * (median[m] - median[LIBRARY]), m + 1 < MODES ? "," : "\n");
    }
    for (int m = 0; m < MODES; ++m) free(t[m]);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
