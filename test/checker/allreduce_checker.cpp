// An independent checker of MPI_Allreduce: an ordinary MPI program that shares no code with ARShim or with the
// other tests. For every predefined datatype the standard allows a reduction on (MPI 4.0 §6.9.2), every op that
// type allows, a list of counts from 0 to 20000 (all of 0..33, the neighbours of powers of two, primes), with and
// without MPI_IN_PLACE, it computes the expected result itself (every rank can generate every rank's input) and
// compares, on every rank, element by element. It also checks that the send buffer is left alone.
//
// It judges the MPI library as a user sees it: run it with and without ARShim preloaded, under any setting.
//
//   allreduce_checker [--max-count N] [--quick] [--comm world|split|dup] [--show N] [--seed S]
//
// Prints one summary line "checker: C cases, W wrong" on rank 0 and up to --show wrong cases (type, op, count,
// in-place, element, got, expected); exits 1 when any case is wrong. Values: integers full width (SUM wraps
// around, MIN/MAX see the sign bit and the high bit of unsigned types); floating-point values are small integers so
// that every reduction order gives the same exact result; MINLOC/MAXLOC have many ties (the lowest index wins).
#include <mpi.h>

#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t g_seed = 1;
uint64_t random_bits(int rank, std::size_t index, int case_id) {
    return splitmix(g_seed * 0x2545F4914F6CDD1Dull ^ splitmix(static_cast<uint64_t>(rank) << 40 ^
                                                               static_cast<uint64_t>(case_id) << 24 ^ index));
}

enum Op { SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, MINLOC, MAXLOC, OP_COUNT };
const char* const kOpName[] = {"SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
                               "MINLOC", "MAXLOC"};
MPI_Op mpi_op(Op op) {
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR,
                          MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    return ops[op];
}

// The standard's categories and the ops each allows.
enum Category { C_INTEGER, FORTRAN_INTEGER, MULTI_LANGUAGE, FLOATING, COMPLEX, LOGICAL, BYTE, PAIR };
bool allowed(Category c, Op op) {
    switch (c) {
    case C_INTEGER: return op <= BXOR;
    case FORTRAN_INTEGER:
    case MULTI_LANGUAGE: return op <= MAX || (op >= BAND && op <= BXOR);
    case FLOATING: return op <= MAX;
    case COMPLEX: return op == SUM || op == PROD;
    case LOGICAL: return op == LAND || op == LOR || op == LXOR;
    case BYTE: return op >= BAND && op <= BXOR;
    case PAIR: return op == MINLOC || op == MAXLOC;
    }
    return false;
}

struct Result {
    long long cases = 0, wrong = 0;
    std::vector<std::string> reports;  // the first few wrong cases of this rank
};

int g_rank = 0, g_size = 1;
std::size_t g_show = 10;

// ---- element semantics per representation --------------------------------------------------------------------

template <typename T>
struct Integer {
    using Elem = T;
    static Elem value(uint64_t bits, Op op) {
        if (op == LAND || op == LOR || op == LXOR) return static_cast<T>(bits % 3);  // 0, 1, 2 (2 is true)
        return static_cast<T>(bits);                                                 // full width
    }
    static Elem combine(Op op, Elem a, Elem b) {
        using U = typename std::make_unsigned<T>::type;
        switch (op) {
        case SUM: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        case PROD: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        case MIN: return b < a ? b : a;
        case MAX: return a < b ? b : a;
        case LAND: return static_cast<T>(a != 0 && b != 0);
        case LOR: return static_cast<T>(a != 0 || b != 0);
        case LXOR: return static_cast<T>((a != 0) != (b != 0));
        case BAND: return static_cast<T>(a & b);
        case BOR: return static_cast<T>(a | b);
        case BXOR: return static_cast<T>(a ^ b);
        default: std::abort();
        }
    }
    static bool equal(const Elem& a, const Elem& b) { return a == b; }
    static std::string show(const Elem& e) {
        return std::is_signed<T>::value ? std::to_string(static_cast<long long>(e))
                                        : std::to_string(static_cast<unsigned long long>(e));
    }
};

// C _Bool and Fortran LOGICAL (gfortran: .TRUE. = 1): inputs 0 or 1, results 0 or 1.
template <typename T>
struct Logical {
    using Elem = T;
    static Elem value(uint64_t bits, Op) { return static_cast<T>(bits & 1); }
    static Elem combine(Op op, Elem a, Elem b) {
        switch (op) {
        case LAND: return static_cast<T>(a != 0 && b != 0);
        case LOR: return static_cast<T>(a != 0 || b != 0);
        case LXOR: return static_cast<T>((a != 0) != (b != 0));
        default: std::abort();
        }
    }
    static bool equal(const Elem& a, const Elem& b) { return a == b; }
    static std::string show(const Elem& e) { return std::to_string(static_cast<int>(e)); }
};

template <typename T>
struct Real {
    using Elem = T;
    // Small integers: every order of summation gives the same, exact, result. Products of +-1, +-2, 0.5 are exact.
    static Elem value(uint64_t bits, Op op) {
        if (op == PROD) {
            const T choices[] = {1, -1, 2, -2, 0.5, 1, -1, 1};
            return choices[bits % 8];
        }
        return static_cast<T>(static_cast<int64_t>(bits % 200001) - 100000);
    }
    static Elem combine(Op op, Elem a, Elem b) {
        switch (op) {
        case SUM: return a + b;
        case PROD: return a * b;
        case MIN: return b < a ? b : a;
        case MAX: return a < b ? b : a;
        default: std::abort();
        }
    }
    static bool equal(const Elem& a, const Elem& b) { return a == b; }
    static std::string show(const Elem& e) {
        char text[64];
        std::snprintf(text, sizeof text, "%.21Lg", static_cast<long double>(e));
        return text;
    }
};

template <typename T>
struct Complex {
    using Elem = std::complex<T>;
    static Elem value(uint64_t bits, Op op) {
        if (op == PROD) {  // components in {-1, 0, 1, 2}: products of a few stay small integers, exact
            const int re = static_cast<int>(bits % 4) - 1, im = static_cast<int>((bits >> 8) % 4) - 1;
            return Elem(static_cast<T>(re), static_cast<T>(im));
        }
        return Elem(static_cast<T>(static_cast<int64_t>(bits % 20001) - 10000),
                    static_cast<T>(static_cast<int64_t>((bits >> 20) % 20001) - 10000));
    }
    static Elem combine(Op op, Elem a, Elem b) {
        switch (op) {
        case SUM: return a + b;
        // The textbook product: exact for small integer components (no Annex G special cases involved).
        case PROD: return Elem(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
        default: std::abort();
        }
    }
    static bool equal(const Elem& a, const Elem& b) { return a.real() == b.real() && a.imag() == b.imag(); }
    static std::string show(const Elem& e) { return "(" + Real<T>::show(e.real()) + "," + Real<T>::show(e.imag()) + ")"; }
};

// MINLOC/MAXLOC pairs {value; index} with the C layout MPI uses (MPI_SHORT_INT: {short; int}, padding included).
template <typename V, typename I>
struct Pair {
    struct Elem {
        V value;
        I index;
    };
    static Elem value(uint64_t bits, Op) {
        Elem e;
        std::memset(&e, 0, sizeof e);
        e.value = static_cast<V>(static_cast<int>(bits % 7) - 3);  // many ties
        e.index = static_cast<I>((bits >> 16) % 1000);
        return e;
    }
    static Elem combine(Op op, Elem a, Elem b) {
        const bool better = op == MINLOC ? b.value < a.value : b.value > a.value;
        if (better) return b;
        if (b.value == a.value && b.index < a.index) a.index = b.index;
        return a;
    }
    static bool equal(const Elem& a, const Elem& b) { return a.value == b.value && a.index == b.index; }
    static std::string show(const Elem& e) {
        return "{" + std::to_string(static_cast<long double>(e.value)) + ", " +
               std::to_string(static_cast<long long>(e.index)) + "}";
    }
};

using FloatInt = Pair<float, int>;
using DoubleInt = Pair<double, int>;
using LongInt = Pair<long, int>;
using IntInt = Pair<int, int>;
using ShortInt = Pair<short, int>;
using LongDoubleInt = Pair<long double, int>;
using FloatFloat = Pair<float, float>;        // MPI_2REAL
using DoubleDouble = Pair<double, double>;    // MPI_2DOUBLE_PRECISION
using IntegerInteger = Pair<int32_t, int32_t>;  // MPI_2INTEGER

// ---- one case -------------------------------------------------------------------------------------------------

template <typename Sem>
void check_case(const char* type_name, MPI_Datatype dt, Op op, int count, bool in_place, MPI_Comm comm,
                int case_id, Result* result) {
    using Elem = typename Sem::Elem;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const std::size_t n = static_cast<std::size_t>(count);
    // One spare element on each side: a path that writes past the buffer is caught.
    // Plain arrays (std::vector<bool> has no contiguous storage).
    std::unique_ptr<Elem[]> send(new Elem[n + 2]), recv(new Elem[n + 2]), expected(new Elem[n + 1]),
        original(new Elem[n + 2]);
    for (std::size_t i = 0; i < n + 2; ++i) {
        send[i] = Sem::value(random_bits(rank, i, case_id), op);
        std::memset(static_cast<void*>(&recv[i]), 0x5A, sizeof(Elem));
    }
    for (std::size_t i = 0; i < n; ++i) {
        Elem acc = Sem::value(random_bits(0, i + 1, case_id), op);
        for (int r = 1; r < size; ++r) acc = Sem::combine(op, acc, Sem::value(random_bits(r, i + 1, case_id), op));
        expected[i] = acc;
    }
    // As bytes: copying a long double (or a pair with padding) as a value need not copy its padding.
    unsigned char guard_low[sizeof(Elem)], guard_high[sizeof(Elem)];
    std::memcpy(guard_low, &recv[0], sizeof(Elem));
    std::memcpy(guard_high, &recv[n + 1], sizeof(Elem));
    if (in_place) std::memcpy(static_cast<void*>(&recv[1]), &send[1], n * sizeof(Elem));
    std::memcpy(static_cast<void*>(original.get()), send.get(), (n + 2) * sizeof(Elem));

    const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : static_cast<const void*>(&send[1]), &recv[1], count, dt,
                                 mpi_op(op), comm);
    ++result->cases;
    std::string problem;
    if (rc != MPI_SUCCESS) {
        problem = "returned error " + std::to_string(rc);
    } else if (std::memcmp(&recv[0], guard_low, sizeof(Elem)) != 0 ||
               std::memcmp(&recv[n + 1], guard_high, sizeof(Elem)) != 0) {
        problem = "wrote outside the receive buffer";
    } else if (!in_place && std::memcmp(send.get(), original.get(), (n + 2) * sizeof(Elem)) != 0) {
        problem = "modified the send buffer";
    } else {
        for (std::size_t i = 0; i < n; ++i)
            if (!Sem::equal(recv[i + 1], expected[i])) {
                problem = "element " + std::to_string(i) + ": got " + Sem::show(recv[i + 1]) + ", expected " +
                          Sem::show(expected[i]);
                break;
            }
    }
    if (problem.empty()) return;
    ++result->wrong;
    if (result->reports.size() < g_show)
        result->reports.push_back(std::string(type_name) + " " + kOpName[op] + " count " + std::to_string(count) +
                                  (in_place ? " in place" : "") + ", rank " + std::to_string(g_rank) + ": " + problem);
}

struct TypeCase {
    const char* name;
    MPI_Datatype dt;
    Category category;
    void (*run)(const char*, MPI_Datatype, Op, int, bool, MPI_Comm, int, Result*);
};

#define CASE(handle, category, sem) TypeCase{#handle, handle, category, &check_case<sem>}

std::vector<TypeCase> type_cases() {
    std::vector<TypeCase> list = {
        CASE(MPI_SIGNED_CHAR, C_INTEGER, Integer<signed char>),
        CASE(MPI_UNSIGNED_CHAR, C_INTEGER, Integer<unsigned char>),
        CASE(MPI_SHORT, C_INTEGER, Integer<short>),
        CASE(MPI_UNSIGNED_SHORT, C_INTEGER, Integer<unsigned short>),
        CASE(MPI_INT, C_INTEGER, Integer<int>),
        CASE(MPI_UNSIGNED, C_INTEGER, Integer<unsigned>),
        CASE(MPI_LONG, C_INTEGER, Integer<long>),
        CASE(MPI_UNSIGNED_LONG, C_INTEGER, Integer<unsigned long>),
        CASE(MPI_LONG_LONG, C_INTEGER, Integer<long long>),
        CASE(MPI_LONG_LONG_INT, C_INTEGER, Integer<long long>),
        CASE(MPI_UNSIGNED_LONG_LONG, C_INTEGER, Integer<unsigned long long>),
        CASE(MPI_INT8_T, C_INTEGER, Integer<int8_t>),
        CASE(MPI_UINT8_T, C_INTEGER, Integer<uint8_t>),
        CASE(MPI_INT16_T, C_INTEGER, Integer<int16_t>),
        CASE(MPI_UINT16_T, C_INTEGER, Integer<uint16_t>),
        CASE(MPI_INT32_T, C_INTEGER, Integer<int32_t>),
        CASE(MPI_UINT32_T, C_INTEGER, Integer<uint32_t>),
        CASE(MPI_INT64_T, C_INTEGER, Integer<int64_t>),
        CASE(MPI_UINT64_T, C_INTEGER, Integer<uint64_t>),
        CASE(MPI_AINT, MULTI_LANGUAGE, Integer<MPI_Aint>),
        CASE(MPI_OFFSET, MULTI_LANGUAGE, Integer<MPI_Offset>),
        CASE(MPI_COUNT, MULTI_LANGUAGE, Integer<MPI_Count>),
        CASE(MPI_INTEGER, FORTRAN_INTEGER, Integer<int32_t>),
        CASE(MPI_FLOAT, FLOATING, Real<float>),
        CASE(MPI_DOUBLE, FLOATING, Real<double>),
        CASE(MPI_LONG_DOUBLE, FLOATING, Real<long double>),
        CASE(MPI_REAL, FLOATING, Real<float>),
        CASE(MPI_DOUBLE_PRECISION, FLOATING, Real<double>),
        CASE(MPI_C_FLOAT_COMPLEX, COMPLEX, Complex<float>),
        CASE(MPI_C_COMPLEX, COMPLEX, Complex<float>),
        CASE(MPI_C_DOUBLE_COMPLEX, COMPLEX, Complex<double>),
        CASE(MPI_C_LONG_DOUBLE_COMPLEX, COMPLEX, Complex<long double>),
        CASE(MPI_COMPLEX, COMPLEX, Complex<float>),
        CASE(MPI_DOUBLE_COMPLEX, COMPLEX, Complex<double>),
        CASE(MPI_C_BOOL, LOGICAL, Logical<bool>),
        CASE(MPI_LOGICAL, LOGICAL, Logical<int32_t>),
        CASE(MPI_BYTE, BYTE, Integer<unsigned char>),
        CASE(MPI_FLOAT_INT, PAIR, FloatInt),
        CASE(MPI_DOUBLE_INT, PAIR, DoubleInt),
        CASE(MPI_LONG_INT, PAIR, LongInt),
        CASE(MPI_2INT, PAIR, IntInt),
        CASE(MPI_SHORT_INT, PAIR, ShortInt),
        CASE(MPI_LONG_DOUBLE_INT, PAIR, LongDoubleInt),
        CASE(MPI_2REAL, PAIR, FloatFloat),
        CASE(MPI_2DOUBLE_PRECISION, PAIR, DoubleDouble),
        CASE(MPI_2INTEGER, PAIR, IntegerInteger),
#ifdef MPI_CXX_BOOL
        CASE(MPI_CXX_BOOL, LOGICAL, Logical<bool>),
        CASE(MPI_CXX_FLOAT_COMPLEX, COMPLEX, Complex<float>),
        CASE(MPI_CXX_DOUBLE_COMPLEX, COMPLEX, Complex<double>),
        CASE(MPI_CXX_LONG_DOUBLE_COMPLEX, COMPLEX, Complex<long double>),
#endif
#ifdef MPI_INTEGER1
        CASE(MPI_INTEGER1, FORTRAN_INTEGER, Integer<int8_t>),
#endif
#ifdef MPI_INTEGER2
        CASE(MPI_INTEGER2, FORTRAN_INTEGER, Integer<int16_t>),
#endif
#ifdef MPI_INTEGER4
        CASE(MPI_INTEGER4, FORTRAN_INTEGER, Integer<int32_t>),
#endif
#ifdef MPI_INTEGER8
        CASE(MPI_INTEGER8, FORTRAN_INTEGER, Integer<int64_t>),
#endif
#ifdef MPI_REAL4
        CASE(MPI_REAL4, FLOATING, Real<float>),
#endif
#ifdef MPI_REAL8
        CASE(MPI_REAL8, FLOATING, Real<double>),
#endif
#ifdef MPI_COMPLEX8
        CASE(MPI_COMPLEX8, COMPLEX, Complex<float>),
#endif
#ifdef MPI_COMPLEX16
        CASE(MPI_COMPLEX16, COMPLEX, Complex<double>),
#endif
    };
    return list;
}

// Whether this MPI build provides the type with the size the check assumes (Fortran types may be missing).
bool available(const TypeCase& t, std::size_t expected_size) {
    if (t.dt == MPI_DATATYPE_NULL) return false;
    int size = 0;
    if (MPI_Type_size(t.dt, &size) != MPI_SUCCESS || size <= 0) return false;
    return static_cast<std::size_t>(size) <= expected_size;
}

std::vector<int> counts(int max_count, bool quick) {
    std::vector<int> out;
    for (int c = 0; c <= (quick ? 9 : 33); ++c) out.push_back(c);
    for (int p = 64; p <= max_count; p *= quick ? 8 : 2) {
        out.push_back(p - 1);
        out.push_back(p);
        if (!quick) out.push_back(p + 1);
    }
    for (int prime : {61, 127, 509, 1021, 4093, 10007, 19997})
        if (prime <= max_count) out.push_back(prime);
    if (max_count > 33) out.push_back(max_count);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int max_count = 20000;
    bool quick = false;
    std::string comm_kind = "world";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--max-count" && i + 1 < argc) max_count = std::atoi(argv[++i]);
        else if (arg == "--quick") quick = true;
        else if (arg == "--comm" && i + 1 < argc) comm_kind = argv[++i];
        else if (arg == "--show" && i + 1 < argc) g_show = static_cast<std::size_t>(std::atoi(argv[++i]));
        else if (arg == "--seed" && i + 1 < argc) g_seed = std::strtoull(argv[++i], nullptr, 10);
        else {
            if (g_rank == 0)
                std::fprintf(stderr, "usage: %s [--max-count N] [--quick] [--comm world|split|dup] [--show N] "
                                     "[--seed S]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    if (comm_kind == "split")  // the ranks in reverse order: rank order matters for the reduction's order
        MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &comm);
    else if (comm_kind == "dup")
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);

    Result result;
    long long skipped_types = 0;
    int case_id = 0;
    const std::vector<int> count_list = counts(max_count, quick);
    for (const TypeCase& t : type_cases()) {
        if (!available(t, 32)) {
            ++skipped_types;
            continue;
        }
        for (int op = 0; op < OP_COUNT; ++op) {
            if (!allowed(t.category, static_cast<Op>(op))) continue;
            for (int count : count_list)
                for (int in_place = 0; in_place < 2; ++in_place)
                    t.run(t.name, t.dt, static_cast<Op>(op), count, in_place != 0, comm, ++case_id, &result);
        }
    }

    long long totals[2] = {result.cases, result.wrong}, sums[2] = {0, 0};
    MPI_Reduce(totals, sums, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    // Every rank's first reports, in rank order.
    for (int r = 0; r < g_size; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == g_rank)
            for (const std::string& line : result.reports) std::fprintf(stderr, "checker: WRONG %s\n", line.c_str());
        std::fflush(stderr);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int any_wrong = sums[1] != 0;
    MPI_Bcast(&any_wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (g_rank == 0)
        std::printf("checker: %lld cases, %lld wrong results over all ranks, np %d, comm %s, counts 0..%d%s\n",
                    result.cases, sums[1], g_size, comm_kind.c_str(), max_count,
                    skipped_types ? " (some types absent in this MPI)" : "");
    // The same as data, for the test (test_checker.py).
    if (g_rank == 0)
        std::printf("{\"checker\": {\"cases\": %lld, \"wrong\": %lld, \"np\": %d, \"comm\": \"%s\"}}\n",
                    result.cases, sums[1], g_size, comm_kind.c_str());
    std::fflush(stdout);
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    MPI_Finalize();
    return any_wrong ? 1 : 0;
}
