/* Reproducible-mode test program (test/reproducible/test_reproducible.py): an ordinary MPI program.
 *
 *   check_reproducible --mode layout [--counts 1,7,1000,...]
 *       every floating-point type (float, double, long double and their complex kinds), SUM and PROD, random data
 *       with a wide exponent range, in place and not: the result must be, bit for bit, the left fold in rank order
 *       that the program computes itself; interleaved int MAX calls must be right too. Rank 0 prints one
 *       "digest TYPE OP COUNT HEX" line per case (FNV-1a of the result's value bytes), which the script compares
 *       across paths, layouts, ISAs and MPIs.
 *   check_reproducible --mode exact [--order SEED]
 *       float and double SUM (ARSHIM_REPRODUCIBLE=any-np): contribution c of every element is the same whatever np
 *       (the exact sum of c's share of 84 atoms, so the global exact sum is the same for np 1, 2, 3, 4, 7); with
 *       --order the ranks are permuted (a communicator split with shuffled keys) so the contributions arrive in
 *       another order. The result must be the correctly rounded exact sum. Prints digests as above.
 *   check_reproducible --mode accuracy [--order SEED]
 *       double SUM of contributions with a wide exponent range (ARSHIM_REPRODUCIBLE=any-np): the result must be the
 *       correctly rounded exact sum, and never further from it than the rank-order sum (prints how often it was
 *       closer, and a digest: with --order the same contributions arrive in another rank order).
 *
 * Rank 0's last line gives the same as data: {"check_reproducible": {"wrong": calls wrong on any rank,
 * "fold_differences": results that differ from the rank-order fold, "digests": {"TYPE OP COUNT": HEX}}}.
 *
 * Exits 1 on any wrong result. Built with -ffp-contract=off: the expected values must be computed exactly as the
 * kernels do. */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size;
static long g_wrong;
static long g_fold_differences;  /* results not the rank-order fold (layout mode) */

/* Rank 0's digests as the members of a JSON object, for the last line. */
static char g_digests[32768];
static size_t g_digests_len;
static void add_digest(const char *key, unsigned long long h) {
    if (g_digests_len >= sizeof g_digests) return;
    g_digests_len += (size_t)snprintf(g_digests + g_digests_len, sizeof g_digests - g_digests_len, "%s\"%s\": \"%016llx\"",
                                      g_digests_len ? ", " : "", key, h);
}

static uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static uint64_t bits(int contributor, size_t i, int salt) {
    return mix(((uint64_t)contributor << 40) ^ ((uint64_t)salt << 32) ^ (uint64_t)i ^ 0x1234567ull);
}
/* A value with a wide exponent range for sums, near 1 for products. */
static double value(int contributor, size_t i, int salt, int prod, int exponent_range) {
    const uint64_t b = bits(contributor, i, salt);
    const double m = 1.0 + (double)(b >> 11) * 0x1p-53;  /* [1, 2) with 52 random bits */
    if (prod) return ldexp(m, (int)(b % 3) - 1) * ((b >> 8) & 1 ? -1 : 1);
    const int e = (int)(b % (2 * exponent_range + 1)) - exponent_range;
    return ldexp(m, e) * ((b >> 9) & 1 ? -1 : 1);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 1099511628211ull;
    return h;
}

enum { FLOAT, DOUBLE, LDOUBLE, CFLOAT, CDOUBLE, CLDOUBLE, NTYPES };
static const char *const kTypeNames[] = {"float", "double", "long_double", "complex_float", "complex_double",
                                         "complex_long_double"};
static MPI_Datatype mpi_type(int t) {
    const MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                                  MPI_C_LONG_DOUBLE_COMPLEX};
    return types[t];
}
static size_t elem_size(int t) {
    const size_t sizes[] = {sizeof(float), sizeof(double), sizeof(long double), sizeof(float complex),
                            sizeof(double complex), sizeof(long double complex)};
    return sizes[t];
}
/* Bytes of an element that carry its value (x87 long double: 10 of 16). */
static size_t value_bytes(int t) { return t == LDOUBLE ? 10 : t == CLDOUBLE ? 10 : elem_size(t); }

static void fill(int t, int prod, int contributor, int salt, size_t n, void *out) {
    const int range = t == FLOAT || t == CFLOAT ? 20 : 60;
    for (size_t i = 0; i < n; ++i) {
        const double re = value(contributor, i, salt, prod, range), im = value(contributor, i, salt + 1000, prod, range);
        switch (t) {
        case FLOAT: ((float *)out)[i] = (float)re; break;
        case DOUBLE: ((double *)out)[i] = re; break;
        case LDOUBLE: ((long double *)out)[i] = (long double)re * (1 + 0x1p-60L * (long double)(i % 7)); break;
        case CFLOAT: ((float complex *)out)[i] = (float)re + (float)im * I; break;
        case CDOUBLE: ((double complex *)out)[i] = re + im * I; break;
        default: ((long double complex *)out)[i] = (long double)re + (long double)im * I; break;
        }
    }
}

/* acc = acc op x, element by element, as the kernels fold (kernels/semantics.inc). */
static void fold(int t, int prod, void *acc, const void *x, size_t n) {
    for (size_t i = 0; i < n; ++i) switch (t) {
        case FLOAT: ((float *)acc)[i] = prod ? ((float *)acc)[i] * ((const float *)x)[i] : ((float *)acc)[i] + ((const float *)x)[i]; break;
        case DOUBLE: ((double *)acc)[i] = prod ? ((double *)acc)[i] * ((const double *)x)[i] : ((double *)acc)[i] + ((const double *)x)[i]; break;
        case LDOUBLE: ((long double *)acc)[i] = prod ? ((long double *)acc)[i] * ((const long double *)x)[i] : ((long double *)acc)[i] + ((const long double *)x)[i]; break;
        case CFLOAT: ((float complex *)acc)[i] = prod ? ((float complex *)acc)[i] * ((const float complex *)x)[i] : ((float complex *)acc)[i] + ((const float complex *)x)[i]; break;
        case CDOUBLE: ((double complex *)acc)[i] = prod ? ((double complex *)acc)[i] * ((const double complex *)x)[i] : ((double complex *)acc)[i] + ((const double complex *)x)[i]; break;
        default: ((long double complex *)acc)[i] = prod ? ((long double complex *)acc)[i] * ((const long double complex *)x)[i] : ((long double complex *)acc)[i] + ((const long double complex *)x)[i]; break;
        }
}

/* Compares value bytes only; returns the digest of the result's value bytes. */
static uint64_t compare(int t, const char *got, const char *want, size_t n, const char *what) {
    const size_t es = elem_size(t), vb = value_bytes(t);
    uint64_t h = 1469598103934665603ull;
    long bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; ++i) {
        const int complex_kind = t >= CFLOAT;
        for (int part = 0; part <= complex_kind; ++part) {
            const size_t off = i * es + (size_t)part * (es / 2);
            const size_t len = complex_kind ? (t == CLDOUBLE ? 10 : es / 2) : vb;
            h = fnv(h, got + off, len);
            if (memcmp(got + off, want + off, len) != 0 && bad++ == 0) first = i;
        }
    }
    if (bad) {
        ++g_wrong;
        ++g_fold_differences;
        fprintf(stderr, "check_reproducible: rank %d: %s: %ld elements differ from the rank-order fold (first %zu)\n",
                g_rank, what, bad, first);
    }
    return h;
}

static void add_doubles(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; ++i) ((double *)inout)[i] += ((double *)in)[i];
}

static void run_layout(const size_t *counts, int ncounts) {
    /* A user op: no path can sum it in rank order; the library does, counted as not reproducible. */
    MPI_Op user;
    MPI_Op_create(add_doubles, 1, &user);
    double one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_DOUBLE, user, MPI_COMM_WORLD);
    MPI_Op_free(&user);
    if (total != g_size) ++g_wrong;
    for (int t = 0; t < NTYPES; ++t)
        for (int prod = 0; prod < 2; ++prod)
            for (int c = 0; c < ncounts; ++c)
                for (int in_place = 0; in_place < 2; ++in_place) {
                    const size_t n = counts[c], es = elem_size(t);
                    const int salt = t * 100 + prod * 10 + c;
                    char *send = malloc(n * es + 16), *recv = malloc(n * es + 16), *want = malloc(n * es + 16),
                         *other = malloc(n * es + 16);
                    fill(t, prod, g_rank, salt, n, send);
                    fill(t, prod, 0, salt, n, want);
                    for (int r = 1; r < g_size; ++r) {
                        fill(t, prod, r, salt, n, other);
                        fold(t, prod, want, other, n);
                    }
                    if (in_place) memcpy(recv, send, n * es);
                    MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)n, mpi_type(t), prod ? MPI_PROD : MPI_SUM,
                                  MPI_COMM_WORLD);
                    char what[96];
                    snprintf(what, sizeof what, "%s %s count %zu%s", kTypeNames[t], prod ? "PROD" : "SUM", n,
                             in_place ? " in place" : "");
                    const uint64_t h = compare(t, recv, want, n, what);
                    if (g_rank == 0 && !in_place) {
                        printf("digest %s %s %zu %016llx\n", kTypeNames[t], prod ? "PROD" : "SUM", n,
                               (unsigned long long)h);
                        char key[96];
                        snprintf(key, sizeof key, "%s %s %zu", kTypeNames[t], prod ? "PROD" : "SUM", n);
                        add_digest(key, (unsigned long long)h);
                    }
                    /* An exact op between them, served by the other paths. */
                    int mine[3] = {g_rank, -g_rank, (int)n}, most[3];
                    MPI_Allreduce(mine, most, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                    if (most[0] != g_size - 1 || most[1] != 0 || most[2] != (int)n) {
                        ++g_wrong;
                        fprintf(stderr, "check_reproducible: rank %d: int MAX wrong\n", g_rank);
                    }
                    free(send), free(recv), free(want), free(other);
                }
}

/* MPI_COMM_WORLD, or (seed != 0) its ranks in another order: the same contributions arrive in another order. */
static MPI_Comm ordered_comm(int seed, int *world_of) {
    MPI_Comm comm = MPI_COMM_WORLD;
    if (seed) {
        const int key = (int)(mix((uint64_t)seed * 1000 + (uint64_t)g_rank) % 1000000) * 64 + g_rank;
        MPI_Comm_split(MPI_COMM_WORLD, 0, key, &comm);
    }
    MPI_Allgather(&g_rank, 1, MPI_INT, world_of, 1, MPI_INT, comm);
    return comm;
}

/* 84 atoms per element: integer multiples of 2^(s - 40) below 2^s (float: 2^(s - 15) below 2^s), s varying widely
 * over the elements: any subset sums exactly, so contribution c (the sum of its share of the atoms) is exact for
 * every np, and so is the global sum: the same global data for np 1, 2, 3, 4, 7. */
static double atom(int k, size_t i, int bits_wide) {
    const uint64_t b = bits(k, i, 77);
    const int s = (int)(mix(i) % (bits_wide == 40 ? 601 : 121)) - (bits_wide == 40 ? 300 : 60);
    const double m = (double)(int64_t)(b % (1ull << bits_wide)) - (double)(1ull << (bits_wide - 1));
    return ldexp(m, s - bits_wide);
}

static void run_exact(int order_seed) {
    int *world_of = malloc(sizeof(int) * (size_t)g_size);
    MPI_Comm comm = ordered_comm(order_seed, world_of);
    const size_t n = 5003;
    double *d = malloc(n * sizeof(double)), *dr = malloc(n * sizeof(double));
    float *f = malloc(n * sizeof(float)), *fr = malloc(n * sizeof(float));
    const int per = 84 / g_size;
    for (size_t i = 0; i < n; ++i) {
        double share = 0, fshare = 0;  /* exact: see atom() */
        for (int k = g_rank * per; k < (g_rank + 1) * per; ++k) share += atom(k, i, 40), fshare += atom(k, i, 15);
        d[i] = share;
        f[i] = (float)fshare;  /* exact: below 2^22 steps of the atoms' unit */
    }
    MPI_Allreduce(d, dr, (int)n, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(f, fr, (int)n, MPI_FLOAT, MPI_SUM, comm);
    long bad = 0;
    for (size_t i = 0; i < n; ++i) {
        double all = 0, fall = 0;
        for (int k = 0; k < 84; ++k) all += atom(k, i, 40), fall += atom(k, i, 15);
        if (dr[i] != all || fr[i] != (float)fall) ++bad;
    }
    if (bad) {
        ++g_wrong;
        fprintf(stderr, "check_reproducible: rank %d: %ld sums are not the exact global sum\n", g_rank, bad);
    }
    if (g_rank == 0) {
        const unsigned long long hd = fnv(1469598103934665603ull, dr, n * sizeof(double)),
                                 hf = fnv(1469598103934665603ull, fr, n * sizeof(float));
        printf("digest exact double %zu %016llx\ndigest exact float %zu %016llx\n", n, hd, n, hf);
        char key[64];
        snprintf(key, sizeof key, "exact double %zu", n);
        add_digest(key, hd);
        snprintf(key, sizeof key, "exact float %zu", n);
        add_digest(key, hf);
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    free(world_of), free(d), free(dr), free(f), free(fr);
}

/* Contribution of world rank q: m * 2^(e - 52), e in [-40, 20]: exact sums as 2^-92-scaled 128-bit integers. */
static double wide(int q, size_t i) {
    return ldexp((double)(int64_t)(bits(q, i, 5) % (1ull << 53)) - (double)(1ull << 52),
                 (int)(bits(q, i, 6) % 61) - 40 - 52);
}

/* (ARSHIM_REPRODUCIBLE=any-np) correctly rounded, never further from the exact sum than the rank-order sum; a
 * digest of the results for the script to compare across rank orders. */
static void run_accuracy(int order_seed) {
    int *world_of = malloc(sizeof(int) * (size_t)g_size);
    MPI_Comm comm = ordered_comm(order_seed, world_of);
    const size_t n = 20000;
    double *x = malloc(n * sizeof(double)), *r = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; ++i) x[i] = wide(g_rank, i);
    MPI_Allreduce(x, r, (int)n, MPI_DOUBLE, MPI_SUM, comm);
    long worse = 0, closer = 0, not_rounded = 0;
    for (size_t i = 0; i < n; ++i) {
        __int128 exact = 0;
        double rank_order = 0;
        for (int q = 0; q < g_size; ++q) {
            const double v = wide(world_of[q], i);
            exact += (__int128)ldexp(v, 92);
            rank_order = q == 0 ? v : rank_order + v;
        }
        const double rounded = ldexp((double)exact, -92);  /* __int128 -> double rounds to nearest even */
        const long double e = (long double)exact * 0x1p-92L;
        if (r[i] != rounded) ++not_rounded;
        if (fabsl((long double)r[i] - e) > fabsl((long double)rank_order - e)) ++worse;
        if (fabsl((long double)r[i] - e) < fabsl((long double)rank_order - e)) ++closer;
    }
    if (not_rounded || worse) {
        ++g_wrong;
        fprintf(stderr, "check_reproducible: rank %d: %ld sums not correctly rounded, %ld further from the exact sum "
                        "than the rank-order sum\n", g_rank, not_rounded, worse);
    }
    if (g_rank == 0) {
        const unsigned long long h = fnv(1469598103934665603ull, r, n * sizeof(double));
        printf("accuracy: %zu sums correctly rounded; closer to the exact sum than the rank-order sum in %ld, never "
               "further\ndigest accuracy double %zu %016llx\n", n, closer, n, h);
        char key[64];
        snprintf(key, sizeof key, "accuracy double %zu", n);
        add_digest(key, h);
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    free(world_of), free(x), free(r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const char *mode = "layout";
    size_t counts[16] = {1, 7, 1000, 100003};
    int ncounts = 4, order_seed = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--order")) order_seed = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--counts")) {
            ncounts = 0;
            for (char *p = argv[i + 1]; *p && ncounts < 16; ++p) {
                counts[ncounts++] = strtoull(p, &p, 10);
                if (*p != ',') break;
            }
        }
    }
    if (!strcmp(mode, "layout")) run_layout(counts, ncounts);
    else if (!strcmp(mode, "exact")) run_exact(order_seed);
    else if (!strcmp(mode, "accuracy")) run_accuracy(order_seed);
    else if (g_rank == 0) fprintf(stderr, "check_reproducible: unknown --mode %s (allowed: layout, exact, accuracy)\n", mode);
    /* One call (the statistics test counts this program's calls). */
    long mine[2] = {g_wrong, g_fold_differences}, sums[2] = {0, 0};
    MPI_Allreduce(mine, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const long all = sums[0], fold_differences = sums[1];
    if (g_rank == 0) printf("check_reproducible: %s\n", all ? "WRONG RESULTS" : "all results as expected");
    if (g_rank == 0)
        printf("{\"check_reproducible\": {\"wrong\": %ld, \"fold_differences\": %ld, \"digests\": {%s}}}\n", all,
               fold_differences, g_digests);
    fflush(stdout);
    MPI_Finalize();
    return all ? 1 : 0;
}
