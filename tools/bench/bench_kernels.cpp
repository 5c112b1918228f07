// arshim-bench-kernels-<flavor>: local reduction bandwidth of ARShim's kernels at every ISA level this CPU has,
// next to the MPI library's own MPI_Reduce_local, memcpy and a plain `a[i] = b[i] op a[i]` loop.
//
// GB/s counts the bytes a reduction must move: 3n (read in, read inout, write inout), 2n for memcpy. Each number
// is the median of --reps repetitions; a repetition with a warm cache runs the operation back to back enough
// times to last >= 1 ms, one with --flush-cache first evicts both buffers (clflush) and times a single call.
// One process, MPI initialized as a singleton: this measures computation, not communication (seeds/002 §4).
#include <emmintrin.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace {

using arshim::kernels::Isa;
using arshim::kernels::Op;
using arshim::kernels::Type;
namespace kernels = arshim::kernels;

#if defined(ARSHIM_FLAVOR_MPICH)
const char* const kFlavor = "mpich";
#else
const char* const kFlavor = "openmpi";
#endif

struct Options {
    size_t min_bytes = 1024;
    size_t max_bytes = size_t{256} << 20;
    int reps = 7;
    bool flush = false;
    bool cpu_time = false;  // time by this thread's CPU clock: immune to being descheduled on a busy machine
    size_t pairs_bytes = 0;  // --all-pairs SIZE: every (op, datatype) pair at one size instead of the cases
    std::string csv;
};

struct DoubleInt {
    double v;
    int k;
};

// The cases of the issue: the common float/int sums, an 8-bit sum (where Open MPI's op/avx is fast but wrong,
// ompi#8045), a comparison, a bitwise op, and a pair type that only has a scalar kernel.
struct Case {
    const char* name;
    Op op;
    Type type;
    MPI_Op mpi_op;
    MPI_Datatype datatype;
    void (*plain)(const void* in, void* inout, size_t n);  // the straightforward loop a user would write
};

template <class T> void plain_sum(const void* in, void* inout, size_t n) {
    const T* a = static_cast<const T*>(in);
    T* b = static_cast<T*>(inout);
    for (size_t i = 0; i < n; ++i) b[i] += a[i];
}
void plain_max_float(const void* in, void* inout, size_t n) {
    const float* a = static_cast<const float*>(in);
    float* b = static_cast<float*>(inout);
    for (size_t i = 0; i < n; ++i) b[i] = b[i] > a[i] ? b[i] : a[i];
}
void plain_bxor_u64(const void* in, void* inout, size_t n) {
    const uint64_t* a = static_cast<const uint64_t*>(in);
    uint64_t* b = static_cast<uint64_t*>(inout);
    for (size_t i = 0; i < n; ++i) b[i] ^= a[i];
}
void plain_maxloc(const void* in, void* inout, size_t n) {
    const DoubleInt* a = static_cast<const DoubleInt*>(in);
    DoubleInt* b = static_cast<DoubleInt*>(inout);
    for (size_t i = 0; i < n; ++i) {
        if (a[i].v > b[i].v) b[i] = a[i];
        else if (a[i].v == b[i].v && a[i].k < b[i].k) b[i].k = a[i].k;
    }
}

std::vector<Case> cases() {
    return {
        {"float_sum", Op::sum, Type::f32, MPI_SUM, MPI_FLOAT, plain_sum<float>},
        {"double_sum", Op::sum, Type::f64, MPI_SUM, MPI_DOUBLE, plain_sum<double>},
        {"int32_sum", Op::sum, Type::i32, MPI_SUM, MPI_INT32_T, plain_sum<int32_t>},
        {"int8_sum", Op::sum, Type::i8, MPI_SUM, MPI_INT8_T, plain_sum<int8_t>},
        {"float_max", Op::max, Type::f32, MPI_MAX, MPI_FLOAT, plain_max_float},
        {"uint64_bxor", Op::bxor, Type::u64, MPI_BXOR, MPI_UINT64_T, plain_bxor_u64},
        {"double_int_maxloc", Op::maxloc, Type::double_int, MPI_MAXLOC, MPI_DOUBLE_INT, plain_maxloc},
    };
}

size_t parse_size(const char* text) {
    char* end = nullptr;
    double value = std::strtod(text, &end);
    switch (end && *end ? *end : ' ') {
    case 'k': case 'K': value *= 1024; break;
    case 'm': case 'M': value *= 1024.0 * 1024; break;
    case 'g': case 'G': value *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return static_cast<size_t>(value);
}

void usage() {
    std::printf(
        "usage: arshim-bench-kernels-%s [--min SIZE] [--max SIZE] [--reps N] [--flush-cache] [--cpu-time]\n"
        "                             [--all-pairs SIZE] [--csv FILE]\n"
        "  sizes are bytes per buffer, with K/M/G suffixes; they double from --min (default 1K)\n"
        "  to --max (default 256M). --flush-cache evicts both buffers before each timed call (default: warm).\n"
        "  --cpu-time times with the thread's CPU clock instead of the wall clock (for a shared, busy machine).\n"
        "  --all-pairs SIZE: instead of the cases, every (op, predefined datatype) pair MPI defines, at SIZE bytes\n"
        "  (warm), ARShim's best level against MPI_Reduce_local: the check that no pair is slower than the library.\n",
        kFlavor);
}

bool parse(int argc, char** argv, Options* o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "--min" && (v = value())) o->min_bytes = parse_size(v);
        else if (a == "--max" && (v = value())) o->max_bytes = parse_size(v);
        else if (a == "--reps" && (v = value())) o->reps = std::max(1, std::atoi(v));
        else if (a == "--csv" && (v = value())) o->csv = v;
        else if (a == "--flush-cache") o->flush = true;
        else if (a == "--cpu-time") o->cpu_time = true;
        else if (a == "--all-pairs" && (v = value())) o->pairs_bytes = parse_size(v);
        else return false;
    }
    return o->min_bytes > 0 && o->min_bytes <= o->max_bytes;
}

void flush(const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
    _mm_mfence();
}

// Seconds, by the wall clock or by this thread's CPU clock (--cpu-time).
double now(const Options& o) {
    if (o.cpu_time) {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One sample of `fn` in seconds per call: a batch lasting >= 1 ms with a warm cache, or one call after evicting
// both buffers (--flush-cache).
double sample(const Options& o, size_t bytes, const void* in, void* inout, const std::function<void()>& fn) {
    if (o.flush) {
        flush(in, bytes);
        flush(inout, bytes);
        const double t0 = now(o);
        fn();
        return now(o) - t0;
    }
    size_t inner = 1;
    double t = 0;
    for (;;) {  // grow the batch until it lasts >= 1 ms, so the clock's resolution does not matter
        const double t0 = now(o);
        for (size_t k = 0; k < inner; ++k) fn();
        t = now(o) - t0;
        if (t >= 1e-3 || inner >= (size_t{1} << 24)) break;
        inner *= t > 0 ? std::min<size_t>(64, static_cast<size_t>(2e-3 / t) + 1) : 64;
    }
    return t / static_cast<double>(inner);
}

// Median seconds per call of each of `fns` over `bytes`-byte buffers. The implementations take turns within every
// repetition (the first one rotating): measured one after the other, the later ones would run on a machine that
// had time to settle (transparent huge pages collapsed, clocks ramped) and look up to 30% faster at large sizes.
std::vector<double> measure_all(const Options& o, size_t bytes, const void* in, void* inout,
                                const std::vector<std::function<void()>>& fns) {
    std::vector<std::vector<double>> samples(fns.size());
    for (const auto& fn : fns) fn();  // first touch, page faults, lazy initialization
    for (int r = 0; r < o.reps; ++r)
        for (size_t k = 0; k < fns.size(); ++k) {
            const size_t i = (k + static_cast<size_t>(r)) % fns.size();
            samples[i].push_back(sample(o, bytes, in, inout, fns[i]));
        }
    std::vector<double> medians;
    for (auto& v : samples) {
        std::sort(v.begin(), v.end());
        medians.push_back(v[v.size() / 2]);
    }
    return medians;
}

// xorshift64: filling 2 x 256 MiB per case with rand() would take longer than the measurements.
struct Rng {
    uint64_t x;
    uint64_t next() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    }
};

void fill(const Case& c, void* p, size_t bytes, unsigned seed) {
    Rng rng{0x9E3779B97F4A7C15ull * (seed + 1)};
    const size_t size = kernels::type_size(c.type);
    char* b = static_cast<char*>(p);
    if (c.type == Type::f32 || c.type == Type::f64 || c.type == Type::double_int) {
        // Moderate values: repeated in-place sums must stay clear of denormals and overflow, whose slow paths
        // would measure the FPU, not the kernel.
        for (size_t i = 0; i < bytes / size; ++i) {
            const uint64_t r = rng.next();
            const double v = static_cast<double>(static_cast<int>(r % 2001) - 1000) / 8.0;
            char* e = b + i * size;
            if (c.type == Type::f32) {
                const float f = static_cast<float>(v);
                std::memcpy(e, &f, sizeof f);
            } else if (c.type == Type::f64) {
                std::memcpy(e, &v, sizeof v);
            } else {
                const DoubleInt d{v, static_cast<int>((r >> 32) % 1000)};
                std::memcpy(e, &d, sizeof d);
            }
        }
    } else {
        for (size_t i = 0; i + 8 <= bytes; i += 8) {
            const uint64_t r = rng.next();
            std::memcpy(b + i, &r, 8);
        }
    }
}

// --all-pairs: the predefined datatypes with their kernel type and the ops MPI defines on them (MPI 4.0 §6.9.2).
constexpr unsigned kMinMax = 1u << static_cast<unsigned>(Op::min) | 1u << static_cast<unsigned>(Op::max);
constexpr unsigned kSumProd = 1u << static_cast<unsigned>(Op::sum) | 1u << static_cast<unsigned>(Op::prod);
constexpr unsigned kLogical =
    1u << static_cast<unsigned>(Op::land) | 1u << static_cast<unsigned>(Op::lor) | 1u << static_cast<unsigned>(Op::lxor);
constexpr unsigned kBitwise =
    1u << static_cast<unsigned>(Op::band) | 1u << static_cast<unsigned>(Op::bor) | 1u << static_cast<unsigned>(Op::bxor);
constexpr unsigned kLoc = 1u << static_cast<unsigned>(Op::minloc) | 1u << static_cast<unsigned>(Op::maxloc);
constexpr unsigned kCInteger = kMinMax | kSumProd | kLogical | kBitwise;

struct PairType {
    const char* name;
    MPI_Datatype datatype;
    Type type;
    unsigned ops;
};

std::vector<PairType> pair_types() {
    return {
        {"int8", MPI_INT8_T, Type::i8, kCInteger},        {"uint8", MPI_UINT8_T, Type::u8, kCInteger},
        {"int16", MPI_INT16_T, Type::i16, kCInteger},     {"uint16", MPI_UINT16_T, Type::u16, kCInteger},
        {"int32", MPI_INT32_T, Type::i32, kCInteger},     {"uint32", MPI_UINT32_T, Type::u32, kCInteger},
        {"int64", MPI_INT64_T, Type::i64, kCInteger},     {"uint64", MPI_UINT64_T, Type::u64, kCInteger},
        {"float", MPI_FLOAT, Type::f32, kMinMax | kSumProd},
        {"double", MPI_DOUBLE, Type::f64, kMinMax | kSumProd},
        {"long_double", MPI_LONG_DOUBLE, Type::f80, kMinMax | kSumProd},
        {"c_float_complex", MPI_C_FLOAT_COMPLEX, Type::c32, kSumProd},
        {"c_double_complex", MPI_C_DOUBLE_COMPLEX, Type::c64, kSumProd},
        {"c_long_double_complex", MPI_C_LONG_DOUBLE_COMPLEX, Type::c80, kSumProd},
        {"c_bool", MPI_C_BOOL, Type::boolean, kLogical},  {"byte", MPI_BYTE, Type::u8, kBitwise},
        {"float_int", MPI_FLOAT_INT, Type::float_int, kLoc},
        {"double_int", MPI_DOUBLE_INT, Type::double_int, kLoc},
        {"long_int", MPI_LONG_INT, Type::long_int, kLoc}, {"2int", MPI_2INT, Type::int_int, kLoc},
        {"short_int", MPI_SHORT_INT, Type::short_int, kLoc},
        {"long_double_int", MPI_LONG_DOUBLE_INT, Type::long_double_int, kLoc},
    };
}

// Values that keep every op on its ordinary path: small integers (exact products stay finite for floating types,
// no denormals), logical 0/1, pair indices in range.
void fill_pair(Type type, char* p, size_t n, unsigned seed) {
    Rng rng{0x9E3779B97F4A7C15ull * (seed + 1)};
    const size_t size = kernels::type_size(type);
    auto put = [](char* at, auto v) { std::memcpy(at, &v, sizeof v); };
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = rng.next();
        char* e = p + i * size;
        const int small = static_cast<int>(r % 3) + 1;  // 1..3: products neither overflow floats nor vanish soon
        switch (type) {
        case Type::f32: put(e, static_cast<float>(small)); break;
        case Type::f64: put(e, static_cast<double>(small)); break;
        case Type::f80: put(e, static_cast<long double>(small)); break;
        case Type::c32: put(e, static_cast<float>(small)), put(e + 4, 0.0f); break;
        case Type::c64: put(e, static_cast<double>(small)), put(e + 8, 0.0); break;
        case Type::c80: put(e, static_cast<long double>(small)), put(e + sizeof(long double), 0.0L); break;
        case Type::boolean: put(e, static_cast<uint8_t>(r & 1)); break;
        case Type::float_int: put(e, static_cast<float>(r % 1000)), put(e + 4, static_cast<int>(r >> 40)); break;
        case Type::double_int: put(e, static_cast<double>(r % 1000)), put(e + 8, static_cast<int>(r >> 40)); break;
        case Type::long_int: put(e, static_cast<long>(r % 1000)), put(e + 8, static_cast<int>(r >> 40)); break;
        case Type::int_int: put(e, static_cast<int>(r % 1000)), put(e + 4, static_cast<int>(r >> 40)); break;
        case Type::short_int: put(e, static_cast<short>(r % 1000)), put(e + 4, static_cast<int>(r >> 40)); break;
        case Type::long_double_int:
            put(e, static_cast<long double>(r % 1000)), put(e + sizeof(long double), static_cast<int>(r >> 40));
            break;
        default: std::memcpy(e, &r, size); break;  // integers: full-width random bits
        }
    }
}

// Every (op, datatype) pair at one size: ARShim's best level vs the library. Returns the pairs slower than it.
int run_all_pairs(const Options& o, FILE* csv) {
    const Isa best = kernels::best_isa();
    std::printf("# all (op, datatype) pairs at %zu bytes, warm cache, fresh inout per call, median of %d: ARShim "
                "%s vs %s MPI_Reduce_local\n", o.pairs_bytes, 2 * o.reps + 5, kernels::isa_name(best), kFlavor);
    std::printf("%-8s %-22s %12s %12s %8s\n", "op", "datatype", "arshim_GB/s", "library_GB/s", "ratio");
    const size_t cap = o.pairs_bytes + 64;
    char* in = static_cast<char*>(std::aligned_alloc(64, (cap + 63) / 64 * 64));
    char* inout = static_cast<char*>(std::aligned_alloc(64, (cap + 63) / 64 * 64));
    char* pristine = static_cast<char*>(std::aligned_alloc(64, (2 * cap + 63) / 64 * 64));
    int slower = 0;
    for (const PairType& t : pair_types()) {
        const size_t size = kernels::type_size(t.type);
        const size_t n = o.pairs_bytes / size, used = n * size;
        if (n == 0) continue;
        for (size_t op = 0; op < kernels::kOpCount; ++op) {
            if (!(t.ops >> op & 1u)) continue;
            const kernels::BinaryFn fn = kernels::table(best).binary[op][static_cast<size_t>(t.type)];
            if (fn == nullptr) continue;
            static const MPI_Op kMpiOps[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX,  MPI_LAND,   MPI_LOR,
                                             MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
            // Every timed call reduces into a fresh copy of the same inout (restored, untimed, cache warm): a batch
            // of in-place calls would converge (MIN of MIN of ...), after which a branchy loop predicts every
            // comparison and a branch-free one gains nothing; real reductions see fresh data each call.
            // The copy comes from a different offset of a twice-as-long random buffer each time: with identical
            // data every call, a modern branch predictor learns the outcome sequence and flatters branchy loops.
            fill_pair(t.type, in, n, 1);
            fill_pair(t.type, pristine, 2 * n, 2);
            // ARShim's kernel and the library's alternate call by call, so that drifts of the machine (clock,
            // neighbours) hit both alike.
            std::vector<double> t_ours, t_lib;
            for (int r = 0; r < 2 * o.reps + 5; ++r) {
                for (int which = 0; which < 2; ++which) {
                    const bool mine = (which == 0) == (r % 2 == 0);
                    std::memcpy(inout, pristine + (static_cast<size_t>(r) * 7919 % n) * size, used);
                    const double t0 = now(o);
                    if (mine)
                        fn(in, inout, n);
                    else
                        PMPI_Reduce_local(in, inout, static_cast<int>(n), t.datatype, kMpiOps[op]);
                    (mine ? t_ours : t_lib).push_back(now(o) - t0);
                }
            }
            auto median_of = [](std::vector<double>& v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            const double ours = median_of(t_ours), lib = median_of(t_lib);
            // Same-speed loops differ by a few percent from run to run here (both at the cache's bandwidth): only
            // a loss beyond 5% is flagged.
            const double ratio = lib / ours;
            if (ratio < 0.95) ++slower;
            const char* op_name = kernels::op_name(static_cast<Op>(op));
            std::printf("%-8s %-22s %12.2f %12.2f %7.2fx%s\n", op_name, t.name, 3.0 * used / ours / 1e9,
                        3.0 * used / lib / 1e9, ratio, ratio < 0.95 ? "  <- slower" : "");
            if (csv)
                std::fprintf(csv, "%s,%s_%s,%zu,%s,warm,%.9g,%.4f\n%s,%s_%s,%zu,%s,warm,%.9g,%.4f\n", kFlavor,
                             t.name, op_name, used, kernels::isa_name(best), ours, 3.0 * used / ours / 1e9, kFlavor,
                             t.name, op_name, used, kFlavor, lib, 3.0 * used / lib / 1e9);
        }
    }
    std::printf("# %d pair(s) more than 5%% slower than %s's MPI_Reduce_local\n", slower, kFlavor);
    std::free(in);
    std::free(inout);
    std::free(pristine);
    return slower;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    MPI_Init(&argc, &argv);
    FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
    if (!o.csv.empty() && !csv) {
        std::fprintf(stderr, "arshim-bench-kernels: cannot write %s\n", o.csv.c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char* header = "flavor,case,bytes,impl,cache,seconds,gbps\n";
    if (csv) std::fputs(header, csv);
    if (o.pairs_bytes > 0) {
        run_all_pairs(o, csv);
        if (csv) std::fclose(csv);
        MPI_Finalize();
        return 0;
    }
    std::printf("# arshim-bench-kernels (%s), best level %s, %s cache, median of %d, %s clock\n", kFlavor,
                kernels::isa_name(kernels::best_isa()), o.flush ? "flushed" : "warm", o.reps,
                o.cpu_time ? "thread CPU" : "wall");
    std::printf("%-18s %10s %-9s %9s\n", "case", "bytes", "impl", "GB/s");

    std::vector<Isa> levels;
    for (size_t i = 0; i < kernels::kIsaCount; ++i)
        if (kernels::isa_compiled(static_cast<Isa>(i)) && kernels::isa_supported_by_cpu(static_cast<Isa>(i)))
            levels.push_back(static_cast<Isa>(i));

    // One pair of buffers for the largest size, 64-byte aligned, reused by every case.
    const size_t cap = o.max_bytes + 64;
    char* in = static_cast<char*>(std::aligned_alloc(64, (cap + 63) / 64 * 64));
    char* inout = static_cast<char*>(std::aligned_alloc(64, (cap + 63) / 64 * 64));

    for (const Case& c : cases()) {
        const size_t size = kernels::type_size(c.type);
        fill(c, in, o.max_bytes, 1);
        fill(c, inout, o.max_bytes, 2);
        for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
            const size_t n = bytes / size;
            const size_t used = n * size;
            auto report = [&](const std::string& impl, double seconds, double moved) {
                const double gbps = moved / seconds / 1e9;
                std::printf("%-18s %10zu %-9s %9.2f\n", c.name, used, impl.c_str(), gbps);
                if (csv)
                    std::fprintf(csv, "%s,%s,%zu,%s,%s,%.9g,%.4f\n", kFlavor, c.name, used, impl.c_str(),
                                 o.flush ? "flushed" : "warm", seconds, gbps);
            };
            std::vector<std::string> names;
            std::vector<double> moved;
            std::vector<std::function<void()>> fns;
            for (Isa isa : levels) {
                const kernels::BinaryFn fn =
                    kernels::table(isa).binary[static_cast<size_t>(c.op)][static_cast<size_t>(c.type)];
                names.emplace_back(kernels::isa_name(isa));
                moved.push_back(3.0 * used);
                fns.emplace_back([fn, &in, &inout, n] { fn(in, inout, n); });
            }
            names.emplace_back(kFlavor);
            moved.push_back(3.0 * used);
            fns.emplace_back([&, n] { PMPI_Reduce_local(in, inout, static_cast<int>(n), c.datatype, c.mpi_op); });
            names.emplace_back("plain");
            moved.push_back(3.0 * used);
            fns.emplace_back([&, n] { c.plain(in, inout, n); });
            names.emplace_back("memcpy");
            moved.push_back(2.0 * used);
            fns.emplace_back([&, used] { std::memcpy(inout, in, used); });
            const std::vector<double> seconds = measure_all(o, used, in, inout, fns);
            for (size_t i = 0; i < fns.size(); ++i) report(names[i], seconds[i], moved[i]);
            // memcpy replaced inout's values: restore moderate ones for the next size.
            fill(c, inout, std::min(2 * used + size, o.max_bytes), 2);
        }
    }
    if (csv) std::fclose(csv);
    std::free(in);
    std::free(inout);
    MPI_Finalize();
    return 0;
}
