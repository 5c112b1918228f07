/* Verify-mode test program (test/verify/test_verify.py): an ordinary MPI program that makes the same few
 * allreduces (keys) --calls times each and checks, where the result is exact, against values it computes itself.
 *
 * Keys: double SUM with cancelling values (1e16, -1e16 and a small one, rotated over the ranks: the result depends
 * on the order of summation, so ARShim's path and the library legitimately differ in some elements, which verify
 * mode must accept); then exact ones: double SUM of small integers, int SUM, float MAX, uint8 SUM (wrapping; a known
 * library bug under Open MPI 4.1), double complex SUM, float SUM in place.
 *
 * Prints "check_verify: W wrong results in C checked calls" on rank 0 (summed over ranks) and exits 0: whether
 * wrong results are expected (the test-only faulty kernels) is the script's to judge. */
#include <complex.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_, size_;
static long wrong, checked;

static void count_result(int ok) {
    ++checked;
    if (!ok) ++wrong;
}

static double small_int(int r, int i) { return (double)((r * 7 + i * 13) % 101 - 50); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    int calls = 10;
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
    enum { N = 1000, NC = 300, NF = 10007, NI = 17 };
    double *d = malloc(sizeof(double) * N), *dr = malloc(sizeof(double) * N);
    double complex *z = malloc(sizeof(double complex) * NC), *zr = malloc(sizeof(double complex) * NC);
    float *f = malloc(sizeof(float) * NF);
    uint8_t u[N], ur[N];
    int iv[NI], ir[NI];
    for (int c = 0; c < calls; ++c) {
        /* 1. cancellation: the order of summation changes the result */
        for (int i = 0; i < N; ++i) {
            const int k = (rank_ + i) % size_;
            d[i] = k == 0 ? 1e16 : k == 1 ? -1e16 : 1.0 + i * 1e-3;
        }
        MPI_Allreduce(d, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

        /* 2. exact double sums */
        for (int i = 0; i < N; ++i) d[i] = small_int(rank_, i);
        MPI_Allreduce(d, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (int i = 0; i < N; ++i) {
            double want = 0;
            for (int r = 0; r < size_; ++r) want += small_int(r, i);
            ok &= dr[i] == want;
        }
        count_result(ok);

        /* 3. int SUM */
        for (int i = 0; i < NI; ++i) iv[i] = rank_ * 1000 + i;
        MPI_Allreduce(iv, ir, NI, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < NI; ++i) ok &= ir[i] == 1000 * size_ * (size_ - 1) / 2 + size_ * i;
        count_result(ok);

        /* 4. float MAX of one element */
        float fm = (float)(rank_ * 3 % 5), fmr = 0;
        MPI_Allreduce(&fm, &fmr, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
        float want_max = 0;
        for (int r = 0; r < size_; ++r) want_max = (float)(r * 3 % 5) > want_max ? (float)(r * 3 % 5) : want_max;
        count_result(fmr == want_max);

        /* 5. uint8 SUM, wrapping */
        for (int i = 0; i < N; ++i) u[i] = (uint8_t)(200 + rank_ * 31 + i);
        MPI_Allreduce(u, ur, N, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < N; ++i) {
            unsigned want = 0;
            for (int r = 0; r < size_; ++r) want += (uint8_t)(200 + r * 31 + i);
            ok &= ur[i] == (uint8_t)want;
        }
        count_result(ok);

        /* 6. double complex SUM */
        for (int i = 0; i < NC; ++i) z[i] = small_int(rank_, i) + small_int(rank_ + 1, i) * I;
        MPI_Allreduce(z, zr, NC, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < NC; ++i) {
            double re = 0, im = 0;
            for (int r = 0; r < size_; ++r) re += small_int(r, i), im += small_int(r + 1, i);
            ok &= creal(zr[i]) == re && cimag(zr[i]) == im;
        }
        count_result(ok);

        /* 7. float SUM in place */
        for (int i = 0; i < NF; ++i) f[i] = (float)small_int(rank_, i);
        MPI_Allreduce(MPI_IN_PLACE, f, NF, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < NF; ++i) {
            float want = 0;
            for (int r = 0; r < size_; ++r) want += (float)small_int(r, i);
            ok &= f[i] == want;
        }
        count_result(ok);
    }
    long mine[2] = {wrong, checked}, all[2] = {0, 0};
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank_ == 0) printf("check_verify: %ld wrong results in %ld checked calls\n", all[0], all[1]);
    /* The same as data, for the test (test_verify.py). */
    if (rank_ == 0) printf("{\"check_verify\": {\"wrong\": %ld, \"checked\": %ld}}\n", all[0], all[1]);
    free(d), free(dr), free(z), free(zr), free(f);
    MPI_Finalize();
    return 0;
}
