// Reductions checked against the test's own arithmetic, for the shim's tests on the fake MPI (test/fake_mpi): each
// rank fills its vector from (rank, index), calls MPI_Allreduce through the shim, and compares every element with the
// fold, in rank order, that the test computes itself. The values are exact in their types (no rounding to forgive).
#pragma once

#include <mpi.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_mpi.h"

namespace fake_checks {

template <typename T, typename Value, typename Fold>
void check_op(fake_mpi::Checks& c, MPI_Comm comm, MPI_Datatype type, MPI_Op op, std::size_t n, Value value, Fold fold,
              const std::string& what, bool in_place = false) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    std::vector<T> in(n), out(n), want(n);
    for (std::size_t i = 0; i < n; ++i) {
        in[i] = value(rank, i);
        T acc = value(0, i);
        for (int r = 1; r < size; ++r) acc = fold(acc, value(r, i));
        want[i] = acc;
    }
    int rc;
    if (in_place) {
        out = in;
        rc = MPI_Allreduce(MPI_IN_PLACE, out.data(), static_cast<int>(n), type, op, comm);
    } else {
        rc = MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), type, op, comm);
    }
    const std::string label = what + " (" + std::to_string(n) + (in_place ? ", in place)" : ")");
    c.equal(rc, MPI_SUCCESS, label + ": return code");
    std::size_t wrong = 0, first = n;
    for (std::size_t i = 0; i < n; ++i)
        if (!(out[i] == want[i])) {
            if (wrong++ == 0) first = i;
        }
    c.check(wrong == 0, label + ": " + std::to_string(wrong) + " wrong elements, the first at " + std::to_string(first));
}

struct IntPair {
    int value, index;
    bool operator==(const IntPair& o) const { return value == o.value && index == o.index; }
};

// A commutative user-defined op: integer sum, counted.
inline long g_user_sum_calls = 0;
inline void user_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    ++g_user_sum_calls;
    const int* a = static_cast<const int*>(in);
    int* b = static_cast<int*>(inout);
    for (int i = 0; i < *len; ++i) b[i] += a[i];
}

// The predefined ops and datatypes a program sends, at `n` elements, on `comm`.
inline void check_many(fake_mpi::Checks& c, MPI_Comm comm, std::size_t n, bool in_place = false) {
    auto ival = [](int r, std::size_t i) { return static_cast<int>((r * 37 + static_cast<int>(i) * 11) % 200) - 100; };
    check_op<int>(c, comm, MPI_INT, MPI_SUM, n, ival, [](int a, int b) { return a + b; }, "int sum", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_MIN, n, ival, [](int a, int b) { return a < b ? a : b; }, "int min", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_MAX, n, ival, [](int a, int b) { return a > b ? a : b; }, "int max", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_BXOR, n, ival, [](int a, int b) { return a ^ b; }, "int bxor", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_BAND, n, ival, [](int a, int b) { return a & b; }, "int band", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_LOR, n, [](int r, std::size_t i) { return (r + static_cast<int>(i)) % 3 == 0; },
                  [](int a, int b) { return (a || b) ? 1 : 0; }, "int lor", in_place);
    check_op<int>(c, comm, MPI_INT, MPI_PROD, n, [](int r, std::size_t i) { return 1 + static_cast<int>((r + i) % 2); },
                  [](int a, int b) { return a * b; }, "int prod", in_place);
    auto dval = [](int r, std::size_t i) { return static_cast<double>(r * 1000 + static_cast<int>(i % 1000)) * 0.5; };
    check_op<double>(c, comm, MPI_DOUBLE, MPI_SUM, n, dval, [](double a, double b) { return a + b; }, "double sum",
                     in_place);
    check_op<double>(c, comm, MPI_DOUBLE, MPI_MAX, n, dval, [](double a, double b) { return a > b ? a : b; },
                     "double max", in_place);
    check_op<float>(c, comm, MPI_FLOAT, MPI_SUM, n, [](int r, std::size_t i) { return static_cast<float>(r + i % 64); },
                    [](float a, float b) { return a + b; }, "float sum", in_place);
    check_op<float>(c, comm, MPI_FLOAT, MPI_MIN, n,
                    [](int r, std::size_t i) { return static_cast<float>((r * 7 + i) % 13) - 6.0f; },
                    [](float a, float b) { return a < b ? a : b; }, "float min", in_place);
    // Unsigned MIN/MAX: MPICH 4.0.2 compares them as signed (the fake says it is 4.0.2: the shim routes around it).
    auto u8 = [](int r, std::size_t i) { return static_cast<uint8_t>((r * 101 + i * 7) % 256); };
    check_op<uint8_t>(c, comm, MPI_UINT8_T, MPI_MAX, n, u8, [](uint8_t a, uint8_t b) { return a > b ? a : b; },
                      "uint8 max", in_place);
    check_op<uint8_t>(c, comm, MPI_UINT8_T, MPI_MIN, n, u8, [](uint8_t a, uint8_t b) { return a < b ? a : b; },
                      "uint8 min", in_place);
    check_op<uint8_t>(c, comm, MPI_UINT8_T, MPI_SUM, n, u8,
                      [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a + b); }, "uint8 sum", in_place);
    check_op<unsigned long long>(c, comm, MPI_UNSIGNED_LONG_LONG, MPI_MAX, n,
                                 [](int r, std::size_t i) { return (1ull << 63) + static_cast<unsigned long long>(r * 3 + i); },
                                 [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, "ull max",
                                 in_place);
    check_op<int16_t>(c, comm, MPI_INT16_T, MPI_SUM, n,
                      [](int r, std::size_t i) { return static_cast<int16_t>(r - static_cast<int>(i % 50)); },
                      [](int16_t a, int16_t b) { return static_cast<int16_t>(a + b); }, "int16 sum", in_place);
    check_op<int64_t>(c, comm, MPI_INT64_T, MPI_SUM, n,
                      [](int r, std::size_t i) { return static_cast<int64_t>(r) * 1000000007 + static_cast<int64_t>(i); },
                      [](int64_t a, int64_t b) { return a + b; }, "int64 sum", in_place);
    check_op<std::complex<double>>(
        c, comm, MPI_C_DOUBLE_COMPLEX, MPI_SUM, n,
        [](int r, std::size_t i) { return std::complex<double>(r + 0.5, static_cast<double>(i % 10)); },
        [](std::complex<double> a, std::complex<double> b) { return a + b; }, "complex sum", in_place);
    check_op<IntPair>(c, comm, MPI_2INT, MPI_MAXLOC, n,
                      [](int r, std::size_t i) { return IntPair{static_cast<int>((r * 5 + i) % 4), r}; },
                      [](IntPair a, IntPair b) { return b.value > a.value ? b : a; }, "2int maxloc", in_place);
}

}  // namespace fake_checks
