/* dp_training_replay: an ordinary MPI program (no ARShim headers) that replays the gradient allreduces of one
 * data-parallel training step, Horovod style, for the four networks of seeds/000 (Castello et al.) Table 2:
 *
 *   model      parameters    layers (Table 2)   layer shapes used here
 *   AlexNet    62,378,344    22                 original AlexNet (5 conv + 3 fc, 1000 classes)   exact total
 *   ResNet50   25,636,712    176                Keras ResNet50 (conv with bias, BN with 4 values) exact total
 *   VGG11      132,863,336   30                 VGG-A (8 conv + 3 fc, 1000 classes)              exact total
 *   ResNet110  1,747,898     393                CIFAR ResNet v1, 3 x 18 basic blocks, 1x1 projection shortcuts
 *                                               (1,742,762); the 5,136 missing parameters are added to the classifier
 *
 * One step: the backward pass produces gradients layer by layer from the last layer to the first; each layer's
 * tensors (weights + bias, and a batch-norm tensor) are float32. As in Horovod's tensor fusion, ready tensors are
 * packed (memcpy) into a fusion buffer of --bucket bytes (64 MiB by default, HOROVOD_FUSION_THRESHOLD's default);
 * when the next tensor does not fit, the buffer is allreduced (MPI_SUM, in place) and unpacked; a tensor larger
 * than the bucket is allreduced on its own, in place. Before each bucket is sent, the "compute" of the layer group
 * that filled it is emulated by a delay of --compute-us microseconds (sleeping: the accelerator computes, the CPU
 * waits; --spin burns the CPU instead).
 *
 *   mpirun -n 4 ./dp_training_replay [--model all|alexnet|resnet50|vgg11|resnet110] [--bucket 64M]
 *          [--steps 3] [--warmup 1] [--compute-us 0] [--spin] [--no-check] [--csv]
 *
 * Reported per model (rank 0; medians over the timed steps, each the slowest rank's time): step time, time in
 * MPI_Allreduce (the "step communication time"), fusion copies, compute delay; buckets per step; and the gradient
 * bytes per step over the allreduce time. Gradient values are small integers, so the float sums are exact in any
 * order: every element is checked after the first timed step (--no-check skips it). Exit status 1 on a wrong sum. */
#define _DEFAULT_SOURCE /* strcasecmp, clock_gettime, nanosleep under -std=c11 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli_util.h"

#define MAX_TENSORS 1024

typedef struct {
    const char *name;
    long table2_params; /* seeds/000 Table 2 */
    long count[MAX_TENSORS];
    int tensors;
} Model;

static void add(Model *m, long n) {
    if (m->tensors >= MAX_TENSORS) {
        fprintf(stderr, "dp_training_replay: too many tensors in %s\n", m->name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    m->count[m->tensors++] = n;
}
static long conv(long in, long out, long k) { return in * out * k * k + out; } /* kernel + bias */
static long bn(long c) { return 4 * c; }                                         /* gamma, beta, mean, variance */

static void alexnet(Model *m) {
    add(m, conv(3, 96, 11));
    add(m, conv(96, 256, 5));
    add(m, conv(256, 384, 3));
    add(m, conv(384, 384, 3));
    add(m, conv(384, 256, 3));
    add(m, 9216L * 4096 + 4096);
    add(m, 4096L * 4096 + 4096);
    add(m, 4096L * 1000 + 1000);
}

static void vgg11(Model *m) {
    const long channels[][2] = {{3, 64}, {64, 128}, {128, 256}, {256, 256},
                                {256, 512}, {512, 512}, {512, 512}, {512, 512}};
    for (int i = 0; i < 8; ++i) add(m, conv(channels[i][0], channels[i][1], 3));
    add(m, 25088L * 4096 + 4096);
    add(m, 4096L * 4096 + 4096);
    add(m, 4096L * 1000 + 1000);
}

static void resnet50(Model *m) {
    add(m, conv(3, 64, 7));
    add(m, bn(64));
    const long width[] = {64, 128, 256, 512};
    const int blocks[] = {3, 4, 6, 3};
    long in = 64;
    for (int s = 0; s < 4; ++s)
        for (int b = 0; b < blocks[s]; ++b) {
            long w = width[s];
            add(m, conv(in, w, 1));
            add(m, bn(w));
            add(m, conv(w, w, 3));
            add(m, bn(w));
            add(m, conv(w, 4 * w, 1));
            add(m, bn(4 * w));
            if (b == 0) {
                add(m, conv(in, 4 * w, 1)); /* projection shortcut */
                add(m, bn(4 * w));
            }
            in = 4 * w;
        }
    add(m, 2048L * 1000 + 1000);
}

static void resnet110(Model *m) {
    add(m, conv(3, 16, 3));
    add(m, bn(16));
    long in = 16;
    const long width[] = {16, 32, 64};
    for (int s = 0; s < 3; ++s)
        for (int b = 0; b < 18; ++b) {
            long w = width[s];
            add(m, conv(in, w, 3));
            add(m, bn(w));
            add(m, conv(w, w, 3));
            add(m, bn(w));
            if (in != w) add(m, conv(in, w, 1));
            in = w;
        }
    add(m, 64L * 10 + 10);
}

static long total(const Model *m) {
    long t = 0;
    for (int i = 0; i < m->tensors; ++i) t += m->count[i];
    return t;
}

static void compute_delay(long us, int spin) {
    if (us <= 0) return;
    if (spin) {
        double end = cli_now() + 1e-6 * (double)us;
        while (cli_now() < end) {
        }
    } else {
        struct timespec t = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&t, NULL);
    }
}

/* gradient value of element i of tensor t on rank r at step s: small integers, exact float sums */
static float grad(int r, int t, long i, int s) { return (float)((r + 1) * (int)((i + t) % 7 + 1) + s % 3); }

typedef struct {
    double step, comm, copy, compute;
    int buckets;
} Times;

/* One training step: backward order, fusion, allreduce. */
static Times step(const Model *m, float **tensors, float *fusion, long bucket_elems, long compute_us, int spin) {
    Times t = {0, 0, 0, 0, 0};
    double t0 = cli_now();
    int pending[MAX_TENSORS], npending = 0;
    long filled = 0;
    for (int k = m->tensors - 1; k >= -1; --k) {
        /* flush the fusion buffer when the next tensor does not fit, or at the end of the backward pass */
        int flush = npending > 0 && (k < 0 || filled + m->count[k] > bucket_elems);
        if (flush) {
            double c0 = cli_now();
            compute_delay(compute_us, spin);
            double c1 = cli_now();
            if (npending == 1) {
                MPI_Allreduce(MPI_IN_PLACE, tensors[pending[0]], (int)filled, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                t.comm += cli_now() - c1;
            } else {
                long off = 0;
                for (int p = 0; p < npending; ++p) {
                    memcpy(fusion + off, tensors[pending[p]], (size_t)m->count[pending[p]] * sizeof(float));
                    off += m->count[pending[p]];
                }
                double c2 = cli_now();
                MPI_Allreduce(MPI_IN_PLACE, fusion, (int)filled, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                double c3 = cli_now();
                off = 0;
                for (int p = 0; p < npending; ++p) {
                    memcpy(tensors[pending[p]], fusion + off, (size_t)m->count[pending[p]] * sizeof(float));
                    off += m->count[pending[p]];
                }
                t.comm += c3 - c2;
                t.copy += (c2 - c1) + (cli_now() - c3);
            }
            t.compute += c1 - c0;
            t.buckets++;
            npending = 0;
            filled = 0;
        }
        if (k < 0) break;
        /* a tensor larger than the bucket is reduced on its own, in place (npending == 1 above) */
        pending[npending++] = k;
        filled += m->count[k];
    }
    t.step = cli_now() - t0;
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *which = "all";
    long bucket_bytes = 64L << 20, compute_us = 0;
    int steps = 3, warmup = 1, spin = 0, check = 1, csv = 0, bad = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) which = argv[++i];
        else if (!strcmp(argv[i], "--bucket") && i + 1 < argc)
            bucket_bytes = cli_size_arg("dp_training_replay", "--bucket", argv[++i], rank != 0, &bad);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--compute-us") && i + 1 < argc) compute_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--spin")) spin = 1;
        else if (!strcmp(argv[i], "--no-check")) check = 0;
        else if (!strcmp(argv[i], "--csv")) csv = 1;
        else {
            if (rank == 0)
                fprintf(stderr, "usage: %s [--model all|alexnet|resnet50|vgg11|resnet110] [--bucket BYTES] "
                                "[--steps N] [--warmup N] [--compute-us US] [--spin] [--no-check] [--csv]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (bad) {
        MPI_Finalize();
        return 2;
    }
    if (steps < 1) steps = 1;
    if (bucket_bytes < (long)sizeof(float)) bucket_bytes = sizeof(float);
    const long bucket_elems = bucket_bytes / (long)sizeof(float);

    static Model models[4] = {{"AlexNet", 62378344L, {0}, 0}, {"ResNet50", 25636712L, {0}, 0},
                              {"VGG11", 132863336L, {0}, 0}, {"ResNet110", 1747898L, {0}, 0}};
    alexnet(&models[0]);
    resnet50(&models[1]);
    vgg11(&models[2]);
    resnet110(&models[3]);
    models[3].count[models[3].tensors - 1] += models[3].table2_params - total(&models[3]);
    for (int i = 0; i < 4; ++i)
        if (total(&models[i]) != models[i].table2_params) {
            if (rank == 0) fprintf(stderr, "dp_training_replay: %s has %ld parameters, Table 2 says %ld\n",
                                   models[i].name, total(&models[i]), models[i].table2_params);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }

    if (rank == 0) {
        if (csv)
            printf("model,params,tensors,ranks,bucket_bytes,compute_us,buckets,step_ms,comm_ms,copy_ms,compute_ms,"
                   "comm_GBps\n");
        else
            printf("dp_training_replay: %d ranks, bucket %ld B, compute delay %ld us per layer group (%s), "
                   "%d timed steps after %d warm-up\n%-10s %12s %8s %8s %10s %10s %9s %11s %10s\n",
                   size, bucket_bytes, compute_us, spin ? "spin" : "sleep", steps, warmup, "model", "params",
                   "tensors", "buckets", "step_ms", "comm_ms", "copy_ms", "compute_ms", "comm_GB/s");
    }
    long errors = 0;
    for (int mi = 0; mi < 4; ++mi) {
        const Model *m = &models[mi];
        if (strcmp(which, "all") != 0 && strcasecmp(which, m->name) != 0) continue;
        float **tensors = malloc((size_t)m->tensors * sizeof(float *));
        float *fusion = malloc((size_t)bucket_elems * sizeof(float));
        double *step_t = malloc((size_t)steps * sizeof(double)), *comm_t = malloc((size_t)steps * sizeof(double));
        double *copy_t = malloc((size_t)steps * sizeof(double)), *comp_t = malloc((size_t)steps * sizeof(double));
        if (!tensors || !fusion || !step_t || !comm_t || !copy_t || !comp_t) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int k = 0; k < m->tensors; ++k) {
            tensors[k] = malloc((size_t)m->count[k] * sizeof(float));
            if (!tensors[k]) MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int buckets = 0;
        for (int s = -warmup; s < steps; ++s) {
            for (int k = 0; k < m->tensors; ++k)
                for (long i = 0; i < m->count[k]; ++i) tensors[k][i] = grad(rank, k, i, s + warmup);
            MPI_Barrier(MPI_COMM_WORLD);
            Times t = step(m, tensors, fusion, bucket_elems, compute_us, spin);
            double mine[4] = {t.step, t.comm, t.copy, t.compute}, slowest[4];
            MPI_Allreduce(mine, slowest, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            buckets = t.buckets;
            if (s >= 0) {
                step_t[s] = slowest[0];
                comm_t[s] = slowest[1];
                copy_t[s] = slowest[2];
                comp_t[s] = slowest[3];
            }
            if (s == 0 && check) {
                for (int k = 0; k < m->tensors; ++k)
                    for (long i = 0; i < m->count[k]; ++i) {
                        float want = 0;
                        for (int r = 0; r < size; ++r) want += grad(r, k, i, s + warmup);
                        if (tensors[k][i] != want) {
                            if (errors < 5)
                                fprintf(stderr, "rank %d: %s tensor %d element %ld: %g != %g\n", rank, m->name, k,
                                        i, tensors[k][i], want);
                            ++errors;
                            break;
                        }
                    }
            }
        }
        cli_sort(step_t, steps);
        cli_sort(comm_t, steps);
        cli_sort(copy_t, steps);
        cli_sort(comp_t, steps);
        const int mid = steps / 2;
        const double gbps = (double)m->table2_params * sizeof(float) / comm_t[mid] / 1e9;
        if (rank == 0) {
            if (csv)
                printf("%s,%ld,%d,%d,%ld,%ld,%d,%.3f,%.3f,%.3f,%.3f,%.4f\n", m->name, m->table2_params, m->tensors,
                       size, bucket_bytes, compute_us, buckets, step_t[mid] * 1e3, comm_t[mid] * 1e3,
                       copy_t[mid] * 1e3, comp_t[mid] * 1e3, gbps);
            else
                printf("%-10s %12ld %8d %8d %10.1f %10.1f %9.1f %11.1f %10.3f\n", m->name, m->table2_params,
                       m->tensors, buckets, step_t[mid] * 1e3, comm_t[mid] * 1e3, copy_t[mid] * 1e3,
                       comp_t[mid] * 1e3, gbps);
            fflush(stdout);
        }
        for (int k = 0; k < m->tensors; ++k) free(tensors[k]);
        free(tensors);
        free(fusion);
        free(step_t);
        free(comm_t);
        free(copy_t);
        free(comp_t);
    }
    long all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !csv)
        printf("dp_training_replay: %s\n", all_errors ? "WRONG RESULTS" : (check ? "all sums correct" : "not checked"));
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
