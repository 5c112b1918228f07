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
        "                             [--csv FILE]\n"
        "  sizes are bytes per buffer, with K/M/G suffixes; they double from --min (default 1K)\n"
        "  to --max (default 256M). --flush-cache evicts both buffers before each timed call (default: warm).\n"
        "  --cpu-time times with the thread's CPU clock instead of the wall clock (for a shared, busy machine).\n",
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

// Median seconds per call of `fn` over `bytes`-byte buffers.
double measure(const Options& o, size_t bytes, const void* in, void* inout, const std::function<void()>& fn) {
    std::vector<double> samples;
    fn();  // first touch, page faults, lazy initialization
    for (int r = 0; r < o.reps; ++r) {
        if (o.flush) {
            flush(in, bytes);
            flush(inout, bytes);
            const double t0 = now(o);
            fn();
            samples.push_back(now(o) - t0);
        } else {
            size_t inner = 1;
            double t = 0;
            for (;;) {  // grow the batch until it lasts >= 1 ms, so the clock's resolution does not matter
                const double t0 = now(o);
                for (size_t k = 0; k < inner; ++k) fn();
                t = now(o) - t0;
                if (t >= 1e-3 || inner >= (size_t{1} << 24)) break;
                inner *= t > 0 ? std::min<size_t>(64, static_cast<size_t>(2e-3 / t) + 1) : 64;
            }
            samples.push_back(t / static_cast<double>(inner));
        }
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
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
            for (Isa isa : levels) {
                const kernels::BinaryFn fn =
                    kernels::table(isa).binary[static_cast<size_t>(c.op)][static_cast<size_t>(c.type)];
                report(kernels::isa_name(isa), measure(o, used, in, inout, [&] { fn(in, inout, n); }), 3.0 * used);
            }
            const double lib = measure(o, used, in, inout, [&] {
                PMPI_Reduce_local(in, inout, static_cast<int>(n), c.datatype, c.mpi_op);
            });
            report(kFlavor, lib, 3.0 * used);
            report("plain", measure(o, used, in, inout, [&] { c.plain(in, inout, n); }), 3.0 * used);
            report("memcpy", measure(o, used, in, inout, [&] { std::memcpy(inout, in, used); }), 2.0 * used);
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
