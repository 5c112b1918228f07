// Names, sizes, the tables (filled once) and the run-time choice of ISA. Built with baseline flags: nothing here
// executes vector code, it only stores pointers to it.
#include "kernels/kernels.h"

#include <atomic>
#include <initializer_list>

#include "kernels/isa_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#define ARSHIM_X86 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#endif

namespace arshim::kernels {

namespace {

struct Tables {
    KernelTable level[kIsaCount];
    Tables() {
        scalar::fill(level[0]);
        // Each wider level starts as a copy of the level below and overwrites what it vectorizes. A filler runs only
        // on a CPU that has its ISA: it is compiled with that ISA's flags, and the compiler vectorizes even its
        // pointer stores (an AVX-512 fill() executes ZMM instructions and dies with SIGILL on an AVX2-only CPU).
        // A level the CPU lacks stays a copy of the level below and is never selected (table(), select_isa()).
        for (size_t i = 1; i < kIsaCount; ++i) level[i] = level[0];
#ifdef ARSHIM_KERNELS_AVX2
        if (isa_supported_by_cpu(Isa::avx2)) avx2::fill(level[static_cast<size_t>(Isa::avx2)]);
#endif
#ifdef ARSHIM_KERNELS_AVX512
        level[static_cast<size_t>(Isa::avx512)] = level[static_cast<size_t>(Isa::avx2)];
        if (isa_supported_by_cpu(Isa::avx512)) avx512::fill(level[static_cast<size_t>(Isa::avx512)]);
#endif
#ifdef ARSHIM_KERNELS_NEON
        if (isa_supported_by_cpu(Isa::neon)) neon::fill(level[static_cast<size_t>(Isa::neon)]);
#endif
#ifdef ARSHIM_KERNELS_SVE
        level[static_cast<size_t>(Isa::sve)] = level[static_cast<size_t>(Isa::neon)];
        if (isa_supported_by_cpu(Isa::sve)) sve::fill(level[static_cast<size_t>(Isa::sve)]);
#endif
        for (size_t i = 0; i < kIsaCount; ++i) level[i].isa = static_cast<Isa>(i);
    }
};

const Tables& tables() {
    static const Tables instance;  // thread-safe one-time initialization
    return instance;
}

// The active table: read on every reduction, so a plain pointer load (relaxed atomic: set once at init).
std::atomic<const KernelTable*> g_active{nullptr};

constexpr const char* kIsaNames[kIsaCount] = {"scalar", "avx2", "avx512", "neon", "sve"};

template <class V, class I> struct Pair { V v; I k; };
constexpr std::size_t kTypeSizes[kTypeCount] = {
    1, 1, 2, 2, 4, 4, 8, 8, sizeof(float), sizeof(double), sizeof(long double),
    2 * sizeof(float), 2 * sizeof(double), 2 * sizeof(long double), 1,
    sizeof(Pair<float, int>), sizeof(Pair<double, int>), sizeof(Pair<long, int>), sizeof(Pair<int, int>),
    sizeof(Pair<short, int>), sizeof(Pair<long double, int>), sizeof(Pair<float, float>),
    sizeof(Pair<double, double>)};

}  // namespace

const char* isa_name(Isa isa) { return isa < Isa::count ? kIsaNames[static_cast<size_t>(isa)] : "?"; }
std::size_t type_size(Type type) { return type < Type::count ? kTypeSizes[static_cast<size_t>(type)] : 0; }

bool defined(Op op, Type type) {
    if (op >= Op::count || type >= Type::count) return false;
    return tables().level[0].binary[static_cast<size_t>(op)][static_cast<size_t>(type)] != nullptr;
}

bool isa_compiled(Isa isa) {
    switch (isa) {
    case Isa::scalar: return true;
#ifdef ARSHIM_KERNELS_AVX2
    case Isa::avx2: return true;
#endif
#ifdef ARSHIM_KERNELS_AVX512
    case Isa::avx512: return true;
#endif
#ifdef ARSHIM_KERNELS_NEON
    case Isa::neon: return true;
#endif
#ifdef ARSHIM_KERNELS_SVE
    case Isa::sve: return true;
#endif
    default: return false;
    }
}

bool isa_supported_by_cpu(Isa isa) {
    switch (isa) {
    case Isa::scalar: return true;
#if defined(ARSHIM_X86)
    // __builtin_cpu_supports also checks that the OS saves the YMM/ZMM state (XGETBV).
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__aarch64__)
    case Isa::neon: return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
    case Isa::sve: return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0;
#endif
    default: return false;
    }
}

namespace {
bool usable(Isa isa) { return isa_compiled(isa) && isa_supported_by_cpu(isa); }
}  // namespace

Isa best_isa() {
    static const Isa best = [] {
        for (Isa isa : {Isa::avx512, Isa::sve, Isa::avx2, Isa::neon})
            if (usable(isa)) return isa;
        return Isa::scalar;
    }();
    return best;
}

const KernelTable& table(Isa isa) {
    if (isa >= Isa::count || !usable(isa)) isa = best_isa();
    return tables().level[static_cast<size_t>(isa)];
}

Isa select_isa(const std::string& requested, std::string* warning) {
    Isa chosen = best_isa();
    std::string problem;
    if (requested.empty() || requested == "auto") {
        // the default
    } else {
        Isa wanted = Isa::count;
        for (size_t i = 0; i < kIsaCount; ++i)
            if (requested == kIsaNames[i]) wanted = static_cast<Isa>(i);
        if (wanted == Isa::count)
            problem = "unknown kernel level '" + requested + "' (allowed: auto, scalar, avx2, avx512, neon, sve)";
        else if (!isa_compiled(wanted))
            problem = std::string(isa_name(wanted)) + " kernels are not in this build";
        else if (!isa_supported_by_cpu(wanted))
            problem = std::string("this CPU does not support ") + isa_name(wanted);
        else
            chosen = wanted;
        if (!problem.empty()) problem += "; using " + std::string(isa_name(chosen));
    }
    if (warning) *warning = problem;
    g_active.store(&tables().level[static_cast<size_t>(chosen)], std::memory_order_release);
    return chosen;
}

void replace_active(const KernelTable* table) { g_active.store(table, std::memory_order_release); }

const KernelTable& active() {
    const KernelTable* current = g_active.load(std::memory_order_acquire);
    if (current) return *current;
    // Nobody selected yet (unit tests, tools): the best level. Racing first callers store the same pointer.
    const KernelTable* best = &table(best_isa());
    g_active.store(best, std::memory_order_release);
    return *best;
}

}  // namespace arshim::kernels
