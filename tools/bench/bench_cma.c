/* arshim-bench-cma: is Linux cross-memory attach (process_vm_readv, what Open MPI's smsc/cma uses) permitted here,
 * and is it faster than the copies the multi-leader path makes through its shared-memory window?
 *
 * A single-copy multi-leader design would have each leader read its partition of every peer's send buffer with
 * process_vm_readv and write the reduced partition into every peer's receive buffer with process_vm_writev,
 * instead of every rank copying its input into the node window and the result out of it. That pays only when a
 * CMA copy is about as fast as memcpy. This program measures both on the same buffers: a parent reads a forked
 * child's buffer in chunks (the child's pages are resident and untouched, as a peer's send buffer would be), and
 * times memcpy of the same size, median of --reps repetitions after one warm-up.
 *
 *   arshim-bench-cma [--min 64K] [--max 64M] [--chunk 1M] [--reps 7]
 *
 * Output: one line per size, GB/s of CMA reads, CMA writes and memcpy, and the ratio CMA/memcpy. Exit status 0,
 * or 1 with a one-line reason when CMA is not permitted (ptrace access mode checks, seccomp, containers). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"

/* One pass over [0, n) of the child's buffer in chunks; returns seconds, or -1 with errno set. */
static double cma_pass(pid_t child, char *local, char *remote, size_t n, size_t chunk, int write) {
    const double t0 = cli_now();
    for (size_t off = 0; off < n; off += chunk) {
        const size_t len = n - off < chunk ? n - off : chunk;
        struct iovec l = {local + off, len}, r = {remote + off, len};
        ssize_t done = write ? process_vm_writev(child, &l, 1, &r, 1, 0) : process_vm_readv(child, &l, 1, &r, 1, 0);
        if (done != (ssize_t)len) return -1;
    }
    return cli_now() - t0;
}

int main(int argc, char **argv) {
    size_t min = 64 << 10, max = 64 << 20, chunk = 1 << 20;
    int reps = 7, bad = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min = (size_t)cli_size_arg("arshim-bench-cma", "--min", argv[++i], 0, &bad);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = (size_t)cli_size_arg("arshim-bench-cma", "--max", argv[++i], 0, &bad);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = (size_t)cli_size_arg("arshim-bench-cma", "--chunk", argv[++i], 0, &bad);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: arshim-bench-cma [--min 64K] [--max 64M] [--chunk 1M] [--reps 7]\n");
            return 0;
        } else {
            fprintf(stderr, "usage: arshim-bench-cma [--min 64K] [--max 64M] [--chunk 1M] [--reps 7]\n");
            return 2;
        }
    }
    if (bad) return 2;
    if (reps < 1 || reps > 1000 || chunk == 0 || min == 0 || max < min) {
        fprintf(stderr, "arshim-bench-cma: bad arguments (reps 1..1000, sizes > 0, --max >= --min)\n");
        return 2;
    }
    char *remote = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
    char *local = aligned_alloc(4096, (max + 4095) / 4096 * 4096);
    if (!remote || !local) return 1;
    memset(remote, 1, max);
    memset(local, 2, max);
    const pid_t child = fork();
    if (child == 0) {  /* the peer: keeps its pages mapped until killed */
        for (;;) pause();
    }
    if (child < 0) {
        perror("arshim-bench-cma: fork");
        return 1;
    }
    int status = 0;
    if (cma_pass(child, local, remote, 4096, 4096, 0) < 0) {
        fprintf(stderr, "arshim-bench-cma: process_vm_readv not permitted here (%s): no single-copy path\n",
                strerror(errno));
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        return 1;
    }
    printf("CMA permitted (process_vm_readv/writev to a forked peer); chunk %zu B, median of %d\n", chunk, reps);
    printf("%12s %12s %12s %12s %10s\n", "bytes", "cma_read", "cma_write", "memcpy", "read/copy");
    double *t_read = malloc(sizeof(double) * (size_t)reps), *t_write = malloc(sizeof(double) * (size_t)reps),
           *t_copy = malloc(sizeof(double) * (size_t)reps);
    for (size_t n = min; n <= max; n *= 4) {
        /* warm-up: faults in both sides' pages */
        cma_pass(child, local, remote, n, chunk, 0);
        cma_pass(child, local, remote, n, chunk, 1);
        for (int r = 0; r < reps; ++r) {
            t_read[r] = cma_pass(child, local, remote, n, chunk, 0);
            t_write[r] = cma_pass(child, local, remote, n, chunk, 1);
            const double t0 = cli_now();
            memcpy(local, remote, n);
            t_copy[r] = cli_now() - t0;
            if (t_read[r] < 0 || t_write[r] < 0) {
                fprintf(stderr, "arshim-bench-cma: CMA failed at %zu B: %s\n", n, strerror(errno));
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
                return 1;
            }
        }
        const double read = cli_median(t_read, reps), write = cli_median(t_write, reps), copy = cli_median(t_copy, reps);
        printf("%12zu %9.2f GB/s %9.2f GB/s %9.2f GB/s %9.2fx\n", n, (double)n / read / 1e9,
               (double)n / write / 1e9, (double)n / copy / 1e9, copy / read);
    }
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    free(t_read);
    free(t_write);
    free(t_copy);
    free(remote);
    free(local);
    return 0;
}
