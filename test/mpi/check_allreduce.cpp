// MPI integration test: an ordinary MPI program (no ARShim headers) that checks MPI_Allreduce against values it
// computes itself, on every rank, for every predefined datatype and op, several counts, MPI_IN_PLACE and
// sub-communicators. Run with and without ARShim preloaded, with every path forced.
//
// Both installed MPIs compute some predefined reductions wrong (pmodels/mpich#6083: MPICH 4.0.2 MIN/MAX compare
// unsigned types as signed; ompi#8045: Open MPI 4.1 op/avx uint8/uint16 SUM). A mismatch on exactly those
// (library, op, type) triples is reported by name as a known library bug — unless CHECK_NO_LIBRARY_BUGS=1 says the
// run must be free of them (ARShim's own kernels in use) — and any other mismatch fails the test.
//
// Options: --large N (elements of the large case, default 1<<17+3), --quick (fewer counts), --subcomms,
//          --fallbacks, --cycles N, --in-place-first (each case in place before out of place: a size bucket's
//          first call, where a path builds its state and tuning starts, is then an in-place one).
// Env: CHECK_EXPECT_PATH=name (some calls must have taken that path); CHECK_EXPECT_RANKS=n (MPI_COMM_WORLD must have
//      n ranks: a launcher of another MPI than the one the program loaded starts n singletons of 1 rank each).
#include <mpi.h>

#include <dlfcn.h>

#include <algorithm>
#include <complex>
#include <memory>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "check_ops.h"  // test/support

namespace {

using check::mix;
using check::mpi_op;
using check::Op;
using check::op_name;

int g_world_rank = 0;
long long g_calls = 0;        // MPI_Allreduce calls this rank made (all of them go through the shim)
long long g_cases = 0;
long long g_failures = 0;
long long g_known_bugs = 0;
bool g_no_library_bugs = false;
const char* g_flavor = nullptr;

int allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
    ++g_calls;
    return MPI_Allreduce(s, r, n, t, o, c);
}

// ---- ARShim counters, when the shim is preloaded ----
long long shim_path_calls(const char* path) {
    using Fn = long long (*)(const char*);
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "arshim_path_calls"));
    return fn ? fn(path) : -1;
}
long long shim_reason_calls(const char* reason) {
    using Fn = long long (*)(const char*);
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "arshim_reason_calls"));
    return fn ? fn(reason) : -1;
}
bool shim_loaded() { return dlsym(RTLD_DEFAULT, "arshim_path_calls") != nullptr; }
long long shim_total_calls() {
    long long total = 0;
    for (const char* p : {"native", "pipelined", "multileader", "sharp", "reproducible", "latency"}) total += shim_path_calls(p);
    return total;
}

// ---- values: deterministic per (rank, index) (check::mix), so every rank can compute every rank's contribution ----
template <typename T>
T value(int rank, std::size_t i, Op op) {
    uint64_t r = mix(rank, i, static_cast<int>(op));
    if constexpr (std::is_same_v<T, bool>) {
        return (r & 3) != 0;
    } else if constexpr (std::is_integral_v<T>) {
        if (op == Op::land || op == Op::lor || op == Op::lxor) return static_cast<T>(r % 3);  // 0, 1, 2 (2 is true)
        if (op == Op::prod) return static_cast<T>(r % 5) + static_cast<T>(std::is_signed_v<T> ? -2 : 0);
        // Full-width values: exercise wrap-around in SUM and the high bit in MIN/MAX of unsigned types.
        return static_cast<T>(r);
    } else {
        // Integer-valued floats: sums and small products are exact whatever the reduction order.
        if (op == Op::prod) return static_cast<T>(static_cast<int>(r % 5) - 2);
        return static_cast<T>(static_cast<int>(r % 2001) - 1000);
    }
}

template <typename T>
T apply(Op op, T a, T b) {  // a = accumulated lower ranks, b = next rank
    if constexpr (std::is_same_v<T, bool>) {
        switch (op) {
        case Op::land: return a && b;
        case Op::lor: return a || b;
        case Op::lxor: return a != b;
        default: std::abort();
        }
    } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        switch (op) {
        case Op::sum: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        case Op::prod: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        case Op::min: return b < a ? b : a;
        case Op::max: return b > a ? b : a;
        case Op::land: return static_cast<T>((a != 0) && (b != 0));
        case Op::lor: return static_cast<T>((a != 0) || (b != 0));
        case Op::lxor: return static_cast<T>((a != 0) != (b != 0));
        case Op::band: return static_cast<T>(a & b);
        case Op::bor: return static_cast<T>(a | b);
        case Op::bxor: return static_cast<T>(a ^ b);
        default: std::abort();
        }
    } else {
        switch (op) {
        case Op::sum: return a + b;
        case Op::prod: return a * b;
        case Op::min: return b < a ? b : a;
        case Op::max: return b > a ? b : a;
        default: std::abort();
        }
    }
}

template <typename T>
bool same(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T) == 16 && std::is_floating_point_v<T> ? 10 : sizeof(T)) == 0 || a == b;
}

// The (library, op, type) triples the installed MPIs are known to get wrong, with the issue that names each.
// nullptr when the triple is not a known library bug.
const char* known_library_bug(Op op, MPI_Datatype dt, bool is_unsigned, std::size_t size) {
    if (g_no_library_bugs) return nullptr;
    const bool minmax = op == Op::min || op == Op::max;
    if (std::strcmp(g_flavor, "mpich") == 0) {
        // MPICH 4.0.2 compares unsigned integers as signed in MIN/MAX.
        if (is_unsigned && minmax) return "pmodels/mpich#6083";
    } else if (std::strcmp(g_flavor, "openmpi") == 0) {
        // Open MPI 4.1 op/avx sums 8- and 16-bit integers with saturating instructions.
        if (op == Op::sum && size <= 2 && dt != MPI_BYTE) return "ompi#8045";
        // Open MPI 4.1.4 maps MPI_UNSIGNED_LONG to the signed long op (fixed after 4.1.4) ...
        if (minmax && dt == MPI_UNSIGNED_LONG) return "ompi#10525";
        // ... and op/avx compares MPI_OFFSET as unsigned (measured here, docs/library-bugs.md).
        if (minmax && dt == MPI_OFFSET) return "Open MPI op/avx MPI_OFFSET, docs/library-bugs.md";
    }
    return nullptr;
}

struct Report {
    const char* type_name;
    MPI_Comm comm;
    const char* comm_name;
};

void fail_or_known(const char* known, const Report& rep, Op op, int count, bool in_place, std::size_t index,
                   const std::string& got, const std::string& want) {
    if (known != nullptr) {
        ++g_known_bugs;
        if (g_known_bugs <= 3)
            std::printf("rank %d: KNOWN LIBRARY BUG (%s) %s %s count=%d%s [%zu]: got %s want %s\n", g_world_rank,
                        known, op_name(op), rep.type_name, count, in_place ? " in-place" : "", index, got.c_str(),
                        want.c_str());
        return;
    }
    ++g_failures;
    if (g_failures <= 20)
        std::printf("rank %d: FAIL %s %s on %s count=%d%s [%zu]: got %s want %s\n", g_world_rank, op_name(op),
                    rep.type_name, rep.comm_name, count, in_place ? " in-place" : "", index, got.c_str(),
                    want.c_str());
}

template <typename T>
std::string show(const T& v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<long long>(v));
    else return std::to_string(static_cast<double>(v));
}

// A plain array (std::vector<bool> has no data()).
template <typename T>
struct Array {
    explicit Array(std::size_t n) : items(new T[n ? n : 1]()), length(n) {}
    Array(const Array& other) : Array(other.length) { std::copy(other.items.get(), other.items.get() + length, items.get()); }
    T* data() { return items.get(); }
    const T* data() const { return items.get(); }
    T& operator[](std::size_t i) { return items[i]; }
    std::size_t size() const { return length; }
    std::unique_ptr<T[]> items;
    std::size_t length;
};

template <typename T>
void check_scalar(MPI_Datatype dt, const char* name, Op op, int count, bool in_place, MPI_Comm comm,
                  const char* comm_name) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    Array<T> send(count), recv(count), want(count);
    for (int i = 0; i < count; ++i) {
        send[i] = value<T>(rank, i, op);
        T acc = value<T>(0, i, op);
        for (int r = 1; r < size; ++r) acc = apply(op, acc, value<T>(r, i, op));
        want[i] = acc;
        recv[i] = in_place ? send[i] : T{};
    }
    const Array<T> send_copy = send;
    allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(), count, dt, mpi_op(op), comm);
    ++g_cases;
    bool is_unsigned = false;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) is_unsigned = std::is_unsigned_v<T>;
    Report rep{name, comm, comm_name};
    for (int i = 0; i < count; ++i) {
        if (!same(recv[i], want[i])) {
            fail_or_known(known_library_bug(op, dt, is_unsigned, sizeof(T)), rep, op, count, in_place, i,
                          show(recv[i]), show(want[i]));
            break;
        }
    }
    if (!in_place && std::memcmp(send.data(), send_copy.data(), send.size() * sizeof(T)) != 0) {
        ++g_failures;
        std::printf("rank %d: FAIL %s %s: sendbuf was modified\n", g_world_rank, op_name(op), name);
    }
}

template <typename C>
void check_complex(MPI_Datatype dt, const char* name, Op op, int count, bool in_place, MPI_Comm comm,
                   const char* comm_name) {
    using R = typename C::value_type;
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    auto val = [op](int r, std::size_t i) {
        return C(value<R>(r, 2 * i, op == Op::prod ? Op::prod : Op::sum),
                 value<R>(r, 2 * i + 1, op == Op::prod ? Op::prod : Op::sum));
    };
    std::vector<C> send(count), recv(count), want(count);
    for (int i = 0; i < count; ++i) {
        send[i] = val(rank, i);
        C acc = val(0, i);
        for (int r = 1; r < size; ++r) acc = op == Op::sum ? acc + val(r, i) : acc * val(r, i);
        want[i] = acc;
        recv[i] = in_place ? send[i] : C{};
    }
    allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(), count, dt, mpi_op(op), comm);
    ++g_cases;
    Report rep{name, comm, comm_name};
    for (int i = 0; i < count; ++i)
        if (recv[i] != want[i]) {
            fail_or_known(nullptr, rep, op, count, in_place, i, show(recv[i].real()) + "," + show(recv[i].imag()),
                          show(want[i].real()) + "," + show(want[i].imag()));
            break;
        }
}

template <typename V, typename I>
struct Pair {
    V value;
    I index;
};

template <typename V, typename I>
void check_pair(MPI_Datatype dt, const char* name, Op op, int count, bool in_place, MPI_Comm comm,
                const char* comm_name) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    using P = Pair<V, I>;
    // Few distinct values so that ties (resolved to the lower index) are common.
    auto val = [](int r, std::size_t i) {
        return P{static_cast<V>(static_cast<int>(mix(r, i, 99) % 3)), static_cast<I>((r * 7 + i) % 11)};
    };
    std::vector<P> send(count), recv(count), want(count);
    for (int i = 0; i < count; ++i) {
        send[i] = val(rank, i);
        P acc = val(0, i);
        for (int r = 1; r < size; ++r) {
            P b = val(r, i);
            bool better = op == Op::minloc ? b.value < acc.value : b.value > acc.value;
            if (better) acc = b;
            else if (b.value == acc.value && b.index < acc.index) acc.index = b.index;
        }
        want[i] = acc;
        recv[i] = in_place ? send[i] : P{};
    }
    allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(), count, dt, mpi_op(op), comm);
    ++g_cases;
    Report rep{name, comm, comm_name};
    for (int i = 0; i < count; ++i)
        if (!(recv[i].value == want[i].value && recv[i].index == want[i].index)) {
            fail_or_known(nullptr, rep, op, count, in_place, i,
                          show(recv[i].value) + "@" + show(static_cast<long long>(recv[i].index)),
                          show(want[i].value) + "@" + show(static_cast<long long>(want[i].index)));
            break;
        }
}

const Op kIntOps[] = {Op::sum, Op::prod, Op::min, Op::max, Op::land, Op::lor, Op::lxor, Op::band, Op::bor, Op::bxor};
const Op kFloatOps[] = {Op::sum, Op::prod, Op::min, Op::max};

template <typename T>
void int_type(MPI_Datatype dt, const char* name, int count, bool in_place, MPI_Comm comm, const char* cn) {
    for (Op op : kIntOps) check_scalar<T>(dt, name, op, count, in_place, comm, cn);
}
template <typename T>
void float_type(MPI_Datatype dt, const char* name, int count, bool in_place, MPI_Comm comm, const char* cn) {
    for (Op op : kFloatOps) check_scalar<T>(dt, name, op, count, in_place, comm, cn);
}

void all_types(int count, bool in_place, MPI_Comm comm, const char* cn) {
    int_type<signed char>(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", count, in_place, comm, cn);
    int_type<unsigned char>(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", count, in_place, comm, cn);
    int_type<short>(MPI_SHORT, "MPI_SHORT", count, in_place, comm, cn);
    int_type<unsigned short>(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", count, in_place, comm, cn);
    int_type<int>(MPI_INT, "MPI_INT", count, in_place, comm, cn);
    int_type<unsigned>(MPI_UNSIGNED, "MPI_UNSIGNED", count, in_place, comm, cn);
    int_type<long>(MPI_LONG, "MPI_LONG", count, in_place, comm, cn);
    int_type<unsigned long>(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", count, in_place, comm, cn);
    int_type<long long>(MPI_LONG_LONG, "MPI_LONG_LONG", count, in_place, comm, cn);
    int_type<unsigned long long>(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", count, in_place, comm, cn);
    int_type<int8_t>(MPI_INT8_T, "MPI_INT8_T", count, in_place, comm, cn);
    int_type<uint8_t>(MPI_UINT8_T, "MPI_UINT8_T", count, in_place, comm, cn);
    int_type<int16_t>(MPI_INT16_T, "MPI_INT16_T", count, in_place, comm, cn);
    int_type<uint16_t>(MPI_UINT16_T, "MPI_UINT16_T", count, in_place, comm, cn);
    int_type<int32_t>(MPI_INT32_T, "MPI_INT32_T", count, in_place, comm, cn);
    int_type<uint32_t>(MPI_UINT32_T, "MPI_UINT32_T", count, in_place, comm, cn);
    int_type<int64_t>(MPI_INT64_T, "MPI_INT64_T", count, in_place, comm, cn);
    int_type<uint64_t>(MPI_UINT64_T, "MPI_UINT64_T", count, in_place, comm, cn);
    int_type<MPI_Aint>(MPI_AINT, "MPI_AINT", count, in_place, comm, cn);
    int_type<MPI_Offset>(MPI_OFFSET, "MPI_OFFSET", count, in_place, comm, cn);
    int_type<MPI_Count>(MPI_COUNT, "MPI_COUNT", count, in_place, comm, cn);
    float_type<float>(MPI_FLOAT, "MPI_FLOAT", count, in_place, comm, cn);
    float_type<double>(MPI_DOUBLE, "MPI_DOUBLE", count, in_place, comm, cn);
    float_type<long double>(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", count, in_place, comm, cn);
    for (Op op : {Op::band, Op::bor, Op::bxor})
        check_scalar<unsigned char>(MPI_BYTE, "MPI_BYTE", op, count, in_place, comm, cn);
    for (Op op : {Op::land, Op::lor, Op::lxor})
        check_scalar<bool>(MPI_C_BOOL, "MPI_C_BOOL", op, count, in_place, comm, cn);
    for (Op op : {Op::sum, Op::prod}) {
        check_complex<std::complex<float>>(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", op, count, in_place, comm, cn);
        check_complex<std::complex<double>>(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", op, count, in_place, comm,
                                            cn);
    }
    for (Op op : {Op::minloc, Op::maxloc}) {
        check_pair<float, int>(MPI_FLOAT_INT, "MPI_FLOAT_INT", op, count, in_place, comm, cn);
        check_pair<double, int>(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", op, count, in_place, comm, cn);
        check_pair<long, int>(MPI_LONG_INT, "MPI_LONG_INT", op, count, in_place, comm, cn);
        check_pair<int, int>(MPI_2INT, "MPI_2INT", op, count, in_place, comm, cn);
        check_pair<short, int>(MPI_SHORT_INT, "MPI_SHORT_INT", op, count, in_place, comm, cn);
        check_pair<long double, int>(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", op, count, in_place, comm, cn);
    }
}

bool g_in_place_first = false;

void run_counts(const std::vector<int>& counts, int large, MPI_Comm comm, const char* cn) {
    const bool order[2] = {g_in_place_first, !g_in_place_first};
    for (int count : counts)
        for (bool in_place : order) all_types(count, in_place, comm, cn);
    if (large > 0)
        for (bool in_place : order) {
            float_type<float>(MPI_FLOAT, "MPI_FLOAT", large, in_place, comm, cn);
            float_type<double>(MPI_DOUBLE, "MPI_DOUBLE", large, in_place, comm, cn);
            int_type<int32_t>(MPI_INT32_T, "MPI_INT32_T", large, in_place, comm, cn);
            int_type<uint8_t>(MPI_UINT8_T, "MPI_UINT8_T", large + 1, in_place, comm, cn);
            check_pair<double, int>(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", Op::maxloc, large, in_place, comm, cn);
        }
}

// ---- calls ARShim must route native, with the reason counted ----
void user_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
    int bytes = 0;
    MPI_Type_size(*dt, &bytes);
    const int n = *len * (bytes / static_cast<int>(sizeof(int)));
    for (int i = 0; i < n; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}
// Non-commutative: 2x2 integer matrix product, inout = in * inout.
void matmul(void* in, void* inout, int* len, MPI_Datatype* dt) {
    int bytes = 0;
    MPI_Type_size(*dt, &bytes);
    const int matrices = *len * bytes / static_cast<int>(4 * sizeof(int));
    auto* a = static_cast<int*>(in);
    auto* b = static_cast<int*>(inout);
    for (int k = 0; k < matrices; ++k, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        std::memcpy(b, c, sizeof c);
    }
}

void check_reason(const char* reason, long long before) {
    if (!shim_loaded()) return;
    long long after = shim_reason_calls(reason);
    ++g_cases;
    if (after != before + 1) {
        ++g_failures;
        std::printf("rank %d: FAIL fallback reason %s counted %lld times, want 1\n", g_world_rank, reason,
                    after - before);
    }
}

void check_fallbacks(MPI_Comm comm) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size == 1) return;  // single-rank communicators count as single_rank instead

    MPI_Op sum_op;
    MPI_Op_create(user_sum, 1, &sum_op);
    // Derived datatype (with a user op: Open MPI rejects predefined ops on derived types): must go native.
    MPI_Datatype pair_of_ints;
    MPI_Type_contiguous(2, MPI_INT, &pair_of_ints);
    MPI_Type_commit(&pair_of_ints);
    int send[6] = {rank, 1, rank * 2, 3, 4, rank}, recv[6] = {};
    long long before = shim_reason_calls("derived_datatype");
    allreduce(send, recv, 3, pair_of_ints, sum_op, comm);
    check_reason("derived_datatype", before);
    int tri = size * (size - 1) / 2;
    int want[6] = {tri, size, 2 * tri, 3 * size, 4 * size, tri};
    ++g_cases;
    if (std::memcmp(recv, want, sizeof want) != 0) {
        ++g_failures;
        std::printf("rank %d: FAIL derived datatype SUM\n", g_world_rank);
    }
    MPI_Type_free(&pair_of_ints);

    before = shim_reason_calls("user_op");
    allreduce(send, recv, 6, MPI_INT, sum_op, comm);
    check_reason("user_op", before);
    ++g_cases;
    if (std::memcmp(recv, want, sizeof want) != 0) {
        ++g_failures;
        std::printf("rank %d: FAIL commutative user op\n", g_world_rank);
    }
    MPI_Op_free(&sum_op);

    MPI_Op mat_op;
    MPI_Op_create(matmul, 0, &mat_op);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    // Rank r contributes [[1, r+1], [0, 1]]; the ordered product is [[1, sum(r+1)], [0, 1]] and the
    // non-commutative test is the order itself: use [[1, r+1],[r, 1]] would overflow; keep the shear but check
    // order with a permutation-sensitive pair: rank r contributes [[r+1, 1], [0, 1]].
    int m[4] = {rank + 1, 1, 0, 1}, out[4] = {};
    before = shim_reason_calls("derived_datatype");
    allreduce(m, out, 1, mat, mat_op, comm);
    // With a derived datatype the derived reason is counted first (classification order).
    check_reason("derived_datatype", before);
    // Product M0*M1*...*M(p-1) of [[a_r, 1],[0,1]]: top-left = prod(a_r), top-right = sum over r of prod(a_0..a_(r-1)).
    int a = 1, b = 0;  // running product [[a, b],[0,1]]
    for (int r = 0; r < size; ++r) {
        // [[a,b],[0,1]] * [[r+1,1],[0,1]] = [[a(r+1), a + b],[0,1]]
        int na = a * (r + 1), nb = a + b;
        a = na;
        b = nb;
    }
    ++g_cases;
    if (out[0] != a || out[1] != b || out[2] != 0 || out[3] != 1) {
        ++g_failures;
        std::printf("rank %d: FAIL non-commutative op order: got [[%d,%d],[%d,%d]] want [[%d,%d],[0,1]]\n",
                    g_world_rank, out[0], out[1], out[2], out[3], a, b);
    }
    // The same op on a predefined type: non-commutative reason.
    int m2[4] = {rank + 1, 1, 0, 1}, out2[4] = {};
    before = shim_reason_calls("noncommutative_op");
    allreduce(m2, out2, 4, MPI_INT, mat_op, comm);
    check_reason("noncommutative_op", before);
    MPI_Type_free(&mat);
    MPI_Op_free(&mat_op);

    // Erroneous arguments reach the library, which reports them through the communicator's error handler, whatever
    // path is forced: send and receive buffers aliased without MPI_IN_PLACE (both libraries return an error for
    // this; a path computing it quietly would hide the user's bug).
    // Open MPI 4.1 raises this error on MPI_COMM_WORLD's handler whatever the call's communicator: both return.
    MPI_Comm errcomm;
    MPI_Comm_dup(comm, &errcomm);
    MPI_Comm_set_errhandler(errcomm, MPI_ERRORS_RETURN);
    MPI_Errhandler world_handler;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double aliased[64] = {};
    const int rc = allreduce(aliased, aliased, 64, MPI_DOUBLE, MPI_SUM, errcomm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_handler);
    MPI_Errhandler_free(&world_handler);
    ++g_cases;
    if (rc == MPI_SUCCESS) {
        ++g_failures;
        std::printf("rank %d: FAIL aliased send/receive buffers: MPI_Allreduce returned MPI_SUCCESS, want the "
                    "library's error\n", g_world_rank);
    }
    MPI_Comm_free(&errcomm);
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    int world_size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    g_flavor = std::getenv("CHECK_FLAVOR") ? std::getenv("CHECK_FLAVOR") : "unknown";
    g_no_library_bugs = std::getenv("CHECK_NO_LIBRARY_BUGS") && std::strcmp(std::getenv("CHECK_NO_LIBRARY_BUGS"), "1") == 0;

    int large = (1 << 17) + 3;
    bool quick = false, subcomms = false, fallbacks = false;
    int cycles = 0;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--large" && i + 1 < argc) large = std::atoi(argv[++i]);
        else if (a == "--quick") quick = true;
        else if (a == "--subcomms") subcomms = true;
        else if (a == "--fallbacks") fallbacks = true;
        else if (a == "--cycles" && i + 1 < argc) cycles = std::atoi(argv[++i]);
        else if (a == "--in-place-first") g_in_place_first = true;
    }
    const std::vector<int> counts = quick ? std::vector<int>{0, 1, 13, 257} : std::vector<int>{0, 1, 2, 3, 7, 13, 61, 257, 1021, 4099};

    run_counts(counts, large, MPI_COMM_WORLD, "MPI_COMM_WORLD");
    if (subcomms) {
        MPI_Comm dup, halves, reversed;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_split(MPI_COMM_WORLD, g_world_rank % 2, g_world_rank, &halves);
        MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - g_world_rank, &reversed);
        run_counts({1, 13, 257}, 0, dup, "dup(WORLD)");
        run_counts({1, 61}, quick ? 0 : 4099, halves, "split(even/odd)");
        run_counts({7, 1021}, 0, reversed, "split(reversed)");
        run_counts({1, 13}, 0, MPI_COMM_SELF, "MPI_COMM_SELF");
        if (fallbacks) check_fallbacks(halves);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&halves);
        MPI_Comm_free(&reversed);
    }
    if (fallbacks) check_fallbacks(MPI_COMM_WORLD);
    for (int c = 0; c < cycles; ++c) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        int in[3] = {g_world_rank, 1, c}, out[3] = {};
        allreduce(in, out, 3, MPI_INT, MPI_SUM, comm);
        ++g_cases;
        if (out[0] != world_size * (world_size - 1) / 2 || out[1] != world_size || out[2] != c * world_size) {
            ++g_failures;
            std::printf("rank %d: FAIL create/free cycle %d\n", g_world_rank, c);
        }
        MPI_Comm_free(&comm);
    }

    if (const char* ranks = std::getenv("CHECK_EXPECT_RANKS")) {
        ++g_cases;
        if (std::atoi(ranks) != world_size) {
            ++g_failures;
            std::printf("rank %d: FAIL MPI_COMM_WORLD has %d rank(s), expected %s (the launcher and the MPI library "
                        "the program loaded do not belong together?)\n", g_world_rank, world_size, ranks);
        }
    }

    // Interception: every call this rank made went through the shim (when preloaded), and a forced path ran.
    const char* disabled = std::getenv("ARSHIM_DISABLE");
    if (shim_loaded() && disabled && std::strcmp(disabled, "1") == 0) {
        ++g_cases;  // ARSHIM_DISABLE=1: a pure pass-through that counts nothing
        if (shim_total_calls() != 0) {
            ++g_failures;
            std::printf("rank %d: FAIL ARSHIM_DISABLE=1 but the shim counted %lld calls\n", g_world_rank,
                        shim_total_calls());
        }
    } else if (shim_loaded()) {
        ++g_cases;
        if (shim_total_calls() != g_calls) {
            ++g_failures;
            std::printf("rank %d: FAIL shim counted %lld calls, program made %lld\n", g_world_rank,
                        shim_total_calls(), g_calls);
        }
        if (const char* path = std::getenv("CHECK_EXPECT_PATH")) {
            ++g_cases;
            if (shim_path_calls(path) <= 0) {
                ++g_failures;
                std::printf("rank %d: FAIL no call took path %s\n", g_world_rank, path);
            }
        }
    } else if (std::getenv("CHECK_EXPECT_SHIM")) {
        ++g_failures;
        std::printf("rank %d: FAIL ARShim is not preloaded\n", g_world_rank);
    }

    long long mine[3] = {g_cases, g_failures, g_known_bugs}, total[3] = {};
    MPI_Reduce(mine, total, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_world_rank == 0)
        std::printf("check_allreduce: %d ranks, %lld checks, %lld failures, %lld known library bug cases%s (%s)\n",
                    world_size, total[0], total[1], total[2], shim_loaded() ? "" : " [no shim]", g_flavor);
    // The same as data, for the tests that run it (the MPI harness).
    if (g_world_rank == 0)
        std::printf("{\"check_allreduce\": {\"ranks\": %d, \"checks\": %lld, \"failures\": %lld, "
                    "\"known_library_bugs\": %lld, \"shim\": %s}}\n",
                    world_size, total[0], total[1], total[2], shim_loaded() ? "true" : "false");
    int failed = total[1] > 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed ? 1 : 0;
}
