/* Same job, same bits (issue 41): float and double SUM allreduces whose results round differently under different
 * orders of summation, at sizes that the built-in policy sends to ARShim's paths and to the library; prints one JSON
 * line on rank 0 with a 64-bit FNV-1a digest of every result bit, per size and type and in all:
 *
 *   check_same_bits [--calls N] [--minmax [--agree-up-to BYTES]]   (40 calls by default: enough for online tuning to
 *                                                                    decide every key)
 *   {"ranks": 4, "digest": "...", "keys": {"float 8": "...", ...}}
 *
 * --minmax (issue 56 item 1): MPI_MAX and MPI_MIN instead, over values whose result bits depend on the operand order:
 * -0 on even ranks and +0 on odd ranks, a NaN (payload 0x1234...) on rank 0 and another (payload 0x4321...) on the
 * last rank against numbers; keys "float max 8", ... The digest covers every rank's result (the library's own ranks
 * may differ from each other there: not an error; a rerun must give the same bits on every rank). --agree-up-to BYTES:
 * every rank must get the same bits for the sizes up to BYTES too (a route that promises it: exit 1 otherwise).
 *
 * Every rank must get the same bits (checked here: exit 1 otherwise), and every result must lie within the
 * reassociation bound of the exact sum (checked against a long double sum of the same values: exit 1 otherwise). The
 * digests are compared across runs by test/reproducible/test_same_bits.py. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Value i of rank r: one rank holds a large term and the next rank its negative; the others small ones, which the
 * large terms swallow in some orders of summation and not in others (added before they cancel, a small term is
 * rounded to the large one's precision: 2 for doubles near 1e16, 8 for floats near 1e8). Which ranks hold the large
 * terms moves with the element, so that every order a library or path may use differs from another somewhere. */
static double value(int r, int size, long i, int call, int is_float) {
    const double big = (is_float ? 1.0e8 : 1.0e16) * (1 + (i + call) % 3);
    /* Two ranks: every order is the same (a + b == b + a), but the sum still rounds, so that a route computing anything
     * but one rounded addition of the two values would show in the digest. */
    if (size == 2) return r == (int)(i % 2) ? big + 1.0 + (double)((i + call) % 7) : -0.75 * big + 0.3 * (1 + i % 5);
    if (r == (int)(i % size)) return big;
    if (r == (int)((i + 1) % size)) return -big;
    return 1.0 + ((r * 7 + i * 13 + call) % 9) + 0.5 * (r % 2);
}

/* Element i of rank r for --minmax: signed zeros, two NaNs with different payloads, numbers. */
static double minmax_value(int r, int size, long i, int call, int is_float, int *is_nan_a, int *is_nan_b) {
    *is_nan_a = *is_nan_b = 0;
    switch ((i + call) % 4) {
    case 0: return r % 2 == 0 ? -0.0 : 0.0;
    case 1:
        if (r == 0) return *is_nan_a = 1, 0.0;
        if (r == size - 1) return *is_nan_b = 1, 0.0;
        return r % 2 == 0 ? -0.0 : 0.0;
    case 2: return r == 0 ? (*is_nan_a = 1, 0.0) : (double)(r * 3 % 5) - 2.0;
    default: return (double)((r * 7 + i) % 5) - 2.0 + (is_float ? 0.25 : 0.125);
    }
}

static int run_minmax(int rank, int size, int calls, long agree_up_to) {
    int bad = 0;
    const long sizes[] = {8, 64, 1024, 16384, 262144, 1048576};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    uint64_t all = 1469598103934665603ull;
    char keys[4096] = "";
    for (int t = 0; t < 2; ++t)
        for (int o = 0; o < 2; ++o) {
            const int is_float = t == 0;
            const MPI_Op op = o == 0 ? MPI_MAX : MPI_MIN;
            const size_t element = is_float ? sizeof(float) : sizeof(double);
            for (int s = 0; s < nsizes; ++s) {
                const long n = sizes[s] / (long)element > 0 ? sizes[s] / (long)element : 1;
                unsigned char *send = malloc((size_t)n * element), *recv = malloc((size_t)n * element);
                uint64_t h = 1469598103934665603ull;
                for (int c = 0; c < calls; ++c) {
                    for (long i = 0; i < n; ++i) {
                        int a, b;
                        const double v = minmax_value(rank, size, i, c, is_float, &a, &b);
                        if (is_float) {
                            float f = (float)v;
                            const uint32_t nan = a ? 0x7fc01234u : 0x7fc04321u;
                            if (a || b) memcpy(&f, &nan, sizeof f);
                            memcpy(send + i * element, &f, sizeof f);
                        } else {
                            double d = v;
                            const uint64_t nan = a ? 0x7ff8000000001234ull : 0x7ff8000000004321ull;
                            if (a || b) memcpy(&d, &nan, sizeof d);
                            memcpy(send + i * element, &d, sizeof d);
                        }
                    }
                    MPI_Allreduce(send, recv, (int)n, is_float ? MPI_FLOAT : MPI_DOUBLE, op, MPI_COMM_WORLD);
                    h = fnv(h, recv, (size_t)n * element);
                }
                /* every rank's bits, in rank order */
                uint64_t *every = malloc(sizeof(uint64_t) * (size_t)size);
                MPI_Allgather(&h, 1, MPI_UINT64_T, every, 1, MPI_UINT64_T, MPI_COMM_WORLD);
                for (int r = 1; r < size && sizes[s] <= agree_up_to; ++r)
                    if (every[r] != every[0]) {
                        if (rank == 0)
                            fprintf(stderr, "check_same_bits: ranks 0 and %d differ at %s %s %ld B\n", r,
                                    is_float ? "float" : "double", o == 0 ? "max" : "min", sizes[s]);
                        ++bad;
                        break;
                    }
                h = fnv(1469598103934665603ull, every, sizeof(uint64_t) * (size_t)size);
                free(every);
                all = fnv(all, &h, sizeof h);
                char item[96];
                snprintf(item, sizeof item, "%s\"%s %s %ld\": \"%016llx\"", keys[0] ? ", " : "",
                         is_float ? "float" : "double", o == 0 ? "max" : "min", sizes[s], (unsigned long long)h);
                strncat(keys, item, sizeof keys - strlen(keys) - 1);
                free(send);
                free(recv);
            }
        }
    if (rank == 0)
        printf("{\"ranks\": %d, \"ok\": %s, \"digest\": \"%016llx\", \"keys\": {%s}}\n", size,
               bad ? "false" : "true", (unsigned long long)all, keys);
    MPI_Finalize();
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, calls = 40;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int minmax = 0;
    long agree_up_to = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--minmax")) minmax = 1;
        else if (!strcmp(argv[i], "--agree-up-to") && i + 1 < argc) agree_up_to = atol(argv[++i]);
    }
    if (minmax) return run_minmax(rank, size, calls, agree_up_to);
    const long sizes[] = {8, 64, 1024, 16384, 262144, 1048576};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    uint64_t all = 1469598103934665603ull;
    char keys[4096] = "";
    int bad = 0;
    for (int t = 0; t < 2; ++t) {
        const int is_float = t == 0;
        const size_t element = is_float ? sizeof(float) : sizeof(double);
        for (int s = 0; s < nsizes; ++s) {
            const long n = sizes[s] / (long)element > 0 ? sizes[s] / (long)element : 1;
            void *send = malloc((size_t)n * element), *recv = malloc((size_t)n * element);
            uint64_t h = 1469598103934665603ull;
            for (int c = 0; c < calls; ++c) {
                for (long i = 0; i < n; ++i) {
                    if (is_float) ((float *)send)[i] = (float)value(rank, size, i, c, 1);
                    else ((double *)send)[i] = value(rank, size, i, c, 0);
                }
                MPI_Allreduce(send, recv, (int)n, is_float ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                h = fnv(h, recv, (size_t)n * element);
                /* within the reassociation bound of the exact sum: 2 (p-1) u sum|x| */
                for (long i = 0; i < n && bad < 5; ++i) {
                    long double exact = 0, magnitude = 0;
                    for (int r = 0; r < size; ++r) {
                        const long double x = is_float ? (long double)(float)value(r, size, i, c, 1)
                                                       : (long double)value(r, size, i, c, 0);
                        exact += x;
                        magnitude += fabsl(x);
                    }
                    const long double got = is_float ? ((float *)recv)[i] : ((double *)recv)[i];
                    const long double u = is_float ? 5.96e-8L : 1.11e-16L;
                    if (fabsl(got - exact) > 2 * (size - 1) * u * magnitude + 1e-30L) {
                        fprintf(stderr, "check_same_bits: rank %d %s %ld B element %ld: %Lg, exact %Lg\n", rank,
                                is_float ? "float" : "double", sizes[s], i, got, exact);
                        ++bad;
                    }
                }
            }
            all = fnv(all, &h, sizeof h);
            /* every rank the same bits */
            unsigned long long mine = h, lo = 0, hi = 0;
            MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
            if (lo != hi) {
                if (rank == 0) fprintf(stderr, "check_same_bits: ranks differ at %s %ld B\n", is_float ? "float" : "double", sizes[s]);
                ++bad;
            }
            char item[96];
            snprintf(item, sizeof item, "%s\"%s %ld\": \"%016llx\"", keys[0] ? ", " : "", is_float ? "float" : "double",
                     sizes[s], (unsigned long long)h);
            strncat(keys, item, sizeof keys - strlen(keys) - 1);
            free(send);
            free(recv);
        }
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"ranks\": %d, \"ok\": %s, \"digest\": \"%016llx\", \"keys\": {%s}}\n", size, any ? "false" : "true",
               (unsigned long long)all, keys);
    MPI_Finalize();
    return any != 0;
}
