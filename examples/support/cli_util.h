/* cli_util.h: the few helpers the example programs and the benchmark tools share (header only, C11, no MPI).
 *
 *   cli_size_arg(PROGRAM, OPTION, TEXT, QUIET, &bad)  a byte count such as 4096, 64K, 4MiB, 1G or 1.5M (binary
 *                                                      units, either case); a bad one prints one line naming the
 *                                                      option and the value (unless QUIET: MPI ranks other than 0)
 *                                                      and sets bad = 1
 *   cli_sort(v, n)                                     sorts doubles, smallest first
 *   cli_median(v, n)                                   sorts and returns v[n / 2] (for even n the upper middle)
 *   cli_now()                                          monotonic wall clock, seconds
 *
 * A program that calls cli_now() defines _DEFAULT_SOURCE (or _GNU_SOURCE / _POSIX_C_SOURCE) before its first
 * include, for clock_gettime under -std=c11. */
#ifndef ARSHIM_CLI_UTIL_H
#define ARSHIM_CLI_UTIL_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Parses TEXT as a byte count: digits, optionally a fraction, optionally K, M or G (2^10, 2^20, 2^30), optionally
 * B or iB after the unit ("64K", "64KiB", "64kb", "4096", "4096B", "1.5M"). Returns 1 and stores the count
 * (fractions of a byte dropped) in *bytes, or 0 for anything else: empty, signs, other characters, overflow. */
static inline int cli_parse_size(const char *text, long long *bytes) {
    const char *p = text;
    if (p == NULL || *p < '0' || *p > '9') return 0;
    long long whole = 0;
    for (; *p >= '0' && *p <= '9'; ++p) {
        if (whole > (LLONG_MAX - 9) / 10) return 0;
        whole = whole * 10 + (*p - '0');
    }
    double fraction = 0, scale = 0.1;
    if (*p == '.') {
        ++p;
        if (*p < '0' || *p > '9') return 0;
        for (; *p >= '0' && *p <= '9'; ++p, scale /= 10) fraction += (*p - '0') * scale;
    }
    int shift = 0;
    switch (*p) {
    case 'K': case 'k': shift = 10; ++p; break;
    case 'M': case 'm': shift = 20; ++p; break;
    case 'G': case 'g': shift = 30; ++p; break;
    default: break;
    }
    if (shift && (*p == 'i' || *p == 'I')) {
        ++p;
        if (*p != 'B' && *p != 'b') return 0;
    }
    if (*p == 'B' || *p == 'b') ++p;
    if (*p != '\0') return 0;
    if (whole > (LLONG_MAX >> shift) - 1) return 0;
    *bytes = (whole << shift) + (long long)(fraction * (double)(1LL << shift));
    return 1;
}

/* cli_parse_size for the value of a command-line option; on a bad value prints (unless quiet)
 *   PROGRAM: bad size 'TEXT' for OPTION (a byte count: 4096, 64K, 4M, 1G; K/M/G are 1024, 1024^2, 1024^3)
 * sets *bad = 1 and returns 0. */
static inline long long cli_size_arg(const char *program, const char *option, const char *text, int quiet, int *bad) {
    long long bytes = 0;
    if (cli_parse_size(text, &bytes)) return bytes;
    if (!quiet)
        fprintf(stderr, "%s: bad size '%s' for %s (a byte count: 4096, 64K, 4M, 1G; K/M/G are 1024, 1024^2, 1024^3)\n",
                program, text, option);
    *bad = 1;
    return 0;
}

static inline int cli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline void cli_sort(double *v, int n) {
    if (n > 0) qsort(v, (size_t)n, sizeof(double), cli_cmp_double);
}

static inline double cli_median(double *v, int n) {
    cli_sort(v, n);
    return v[n / 2];
}

#if defined(_POSIX_C_SOURCE) || defined(_DEFAULT_SOURCE) || defined(_GNU_SOURCE) || defined(_POSIX_TIMERS)
static inline double cli_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#endif

#endif /* ARSHIM_CLI_UTIL_H */
