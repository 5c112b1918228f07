/* The reductions that MPICH 4.0.2 and Open MPI 4.1.x compute wrong (policy/library_bugs.cpp), with data that
 * triggers each bug, checked on every rank against values computed here: counts 1, 2, 17 and 1000, separate buffers
 * and MPI_IN_PLACE, on MPI_COMM_WORLD, on a fresh duplicate (whose first calls go to the library: a cold context)
 * and on a split communicator. Runs with or without ARShim; prints "library bugs: N wrong calls of M" on rank 0
 * and exits 0 only when every result was right. */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long calls, wrong;

/* One case: every rank fills `n` elements with its value for element i, the expected result is computed from all
 * ranks' values. */
#define CASE(NAME, CTYPE, MPITYPE, MPIOP, VALUE, COMBINE)                                                           \
    static void NAME(MPI_Comm comm, int n, int in_place) {                                                          \
        int rank, size;                                                                                             \
        MPI_Comm_rank(comm, &rank);                                                                                 \
        MPI_Comm_size(comm, &size);                                                                                 \
        CTYPE *in = malloc(sizeof(CTYPE) * (size_t)n), *out = malloc(sizeof(CTYPE) * (size_t)n);                    \
        for (int i = 0; i < n; ++i) in[i] = (CTYPE)(VALUE(rank, i));                                                \
        if (in_place) memcpy(out, in, sizeof(CTYPE) * (size_t)n);                                                   \
        MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, n, MPITYPE, MPIOP, comm);                                  \
        long bad = 0;                                                                                               \
        for (int i = 0; i < n; ++i) {                                                                               \
            CTYPE want = (CTYPE)(VALUE(0, i));                                                                      \
            for (int r = 1; r < size; ++r) want = COMBINE(want, (CTYPE)(VALUE(r, i)));                              \
            bad += out[i] != want;                                                                                  \
        }                                                                                                           \
        ++calls;                                                                                                    \
        if (bad) {                                                                                                  \
            ++wrong;                                                                                                \
            if (rank == 0)                                                                                          \
                printf("wrong: %s, %d elements%s, comm size %d: %ld elements\n", #NAME, n,                         \
                       in_place ? " in place" : "", size, bad);                                                    \
        }                                                                                                           \
        free(in);                                                                                                   \
        free(out);                                                                                                  \
    }

#define MIN2(a, b) ((b) < (a) ? (b) : (a))
#define MAX2(a, b) ((b) > (a) ? (b) : (a))
/* Rank 0 holds values with the top bit set, the others small ones: signed comparison inverts MIN and MAX. */
static unsigned long long big_or_small(unsigned long long big, int r, int i) {
    return r == 0 ? big - (unsigned long long)(i % 3) : 4 + (unsigned long long)(i % 7);
}
#define U8_VAL(r, i) big_or_small(UINT8_MAX, r, i)
#define U32_VAL(r, i) big_or_small(UINT32_MAX, r, i)
#define UL_VAL(r, i) big_or_small(ULONG_MAX, r, i)
#define U64_VAL(r, i) big_or_small(UINT64_MAX, r, i)
/* Sums that overflow: saturation gives the type's maximum, the right answer wraps around. */
#define SUM_U8_VAL(r, i) (200 + ((i) % 3))
#define SUM_S16_VAL(r, i) (16384 + ((i) % 5))
/* MPI_OFFSET: the signed type compared as unsigned. */
#define OFF_VAL(r, i) ((r) == 0 ? -1 - (long long)((i) % 3) : 5 + (long long)((i) % 7))

static uint8_t add_u8(uint8_t a, uint8_t b) { return (uint8_t)(a + b); }
static short add_s16(short a, short b) { return (short)(uint16_t)((uint16_t)a + (uint16_t)b); }
#define ADD_U8(a, b) add_u8(a, b)
#define ADD_S16(a, b) add_s16(a, b)

CASE(uint8_min, uint8_t, MPI_UINT8_T, MPI_MIN, U8_VAL, MIN2)
CASE(uint8_max, uint8_t, MPI_UINT8_T, MPI_MAX, U8_VAL, MAX2)
CASE(unsigned_min, unsigned, MPI_UNSIGNED, MPI_MIN, U32_VAL, MIN2)
CASE(unsigned_long_max, unsigned long, MPI_UNSIGNED_LONG, MPI_MAX, UL_VAL, MAX2)
CASE(unsigned_long_min, unsigned long, MPI_UNSIGNED_LONG, MPI_MIN, UL_VAL, MIN2)
CASE(uint64_max, uint64_t, MPI_UINT64_T, MPI_MAX, U64_VAL, MAX2)
CASE(uint8_sum, uint8_t, MPI_UINT8_T, MPI_SUM, SUM_U8_VAL, ADD_U8)
CASE(unsigned_char_sum, unsigned char, MPI_UNSIGNED_CHAR, MPI_SUM, SUM_U8_VAL, ADD_U8)
CASE(short_sum, short, MPI_SHORT, MPI_SUM, SUM_S16_VAL, ADD_S16)
CASE(offset_min, MPI_Offset, MPI_OFFSET, MPI_MIN, OFF_VAL, MIN2)

typedef void (*CaseFn)(MPI_Comm, int, int);
static const CaseFn kCases[] = {uint8_min,      uint8_max,  unsigned_min,      unsigned_long_max, unsigned_long_min,
                                uint64_max,     uint8_sum,  unsigned_char_sum, short_sum,         offset_min};

static void all_cases(MPI_Comm comm) {
    const int counts[] = {1, 2, 17, 1000};
    for (size_t c = 0; c < sizeof kCases / sizeof *kCases; ++c)
        for (int k = 0; k < 4; ++k)
            for (int in_place = 0; in_place < 2; ++in_place) kCases[c](comm, counts[k], in_place);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    all_cases(MPI_COMM_WORLD);
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    all_cases(dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, rank, &half);
    all_cases(half);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    long totals[2] = {calls, wrong}, sums[2] = {0, 0};
    MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("library bugs: %ld wrong calls of %ld\n", sums[1], sums[0]);
    /* The same as data, for the test (test_library_bugs.py). */
    if (rank == 0) printf("{\"library_bugs\": {\"calls\": %ld, \"wrong\": %ld}}\n", sums[0], sums[1]);
    long any = wrong;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
