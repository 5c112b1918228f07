// TEST CODE ONLY, never installed: a wrong reduction on purpose, for verify mode to catch (test/verify/).
//
// Linked into a test variant of the preload library (libarshim-faulty-<flavor>.so, test/verify/meson.build), it
// defines the hidden hook that shim/core/runtime.cpp calls once after choosing the kernels: the active table is
// copied and its SUM kernels for int32, float and double (binary and n-ary) wrapped. ARSHIMTEST_KERNEL_FAULT says how
// (not an ARSHIM_ setting: the test library's own):
//   off-by-one (default)  the middle element of every output is off by one: every ARShim path that reduces with
//                         ARShim's kernels is then wrong (multi-leader and SHARP: n-ary, node level; pipelined with
//                         ARShim's op handed to the library, ARSHIM_KERNEL_FOR_MPI=simd: binary);
//   reverse               the n-ary kernels sum their sources in reverse order: a legitimate reassociation, which
//                         verify mode must accept however much the result changes;
//   none                  the kernels are left right (for the other hooks below);
//   delay                 the kernels are right, but the n-ary ones pause 20 us before reading their sources on
//                         about one call in eight (a pseudo-random draw per process): a rank that has seen the
//                         others' slots then reads them late, which a slot reused too early must show (with
//                         ARSHIMTEST_LATENCY_FAULT=one-buffer; test/mpi/test_latency.py).
// Two more hooks for the online-tuning tests (test/tune/):
//   ARSHIMTEST_TUNE_SKEW_RANK=r   world rank r sees every library allreduce 100x faster than it was (the ranks see
//                                 different timings: they must still decide alike);
//   ARSHIMTEST_TUNE_SLOW_NATIVE=1 every rank sees the library's allreduce 100 ms slower (and SLOW_LEADERS=L,
//                                 SLOW_SEGMENTS=B the multi-leader path with L leaders, the pipelined path with B-byte
//                                 segments): online tuning can be made to decide either way;
//   ARSHIMTEST_FAIL_SHM=1         every node shared-memory window fails to build (paths that need one decline);
//   ARSHIMTEST_FAIL_SHM=rank:R    only world rank R's (its node's other ranks build theirs: the failure must be
//                                 agreed, never a collective some ranks skip; test/mpi/test_latency.py);
//   ARSHIMTEST_SEGMENT_NAME=/n    node segments are created at this name, not a random one (a test plants there);
//   ARSHIMTEST_LATENCY_FAULT=no-wait  the latency path without its waits for the other ranks' slots, and
//                                 =one-buffer with one buffer of slots instead of two (test/mpi/check_sequence must
//                                 fail).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"

namespace {

using arshim::kernels::BinaryFn;
using arshim::kernels::KernelTable;
using arshim::kernels::NaryFn;
using arshim::kernels::Op;
using arshim::kernels::Type;

KernelTable g_faulty;
BinaryFn g_binary[arshim::kernels::kTypeCount];
NaryFn g_nary[arshim::kernels::kTypeCount];

template <typename T>
void off_by_one(void* out, std::size_t count) {
    if (count > 0) static_cast<T*>(out)[count / 2] += 1;
}

template <typename T, Type K>
void faulty_binary(const void* in, void* inout, std::size_t count) {
    g_binary[static_cast<std::size_t>(K)](in, inout, count);
    off_by_one<T>(inout, count);
}

template <typename T, Type K>
void faulty_nary(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count) {
    g_nary[static_cast<std::size_t>(K)](dst, srcs, nsrc, count);
    off_by_one<T>(dst, count);
}

template <typename T, Type K>
void reversed_nary(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count) {
    const void* reversed[1024];
    if (nsrc > 1024) std::abort();
    for (std::size_t i = 0; i < nsrc; ++i) reversed[i] = srcs[nsrc - 1 - i];
    g_nary[static_cast<std::size_t>(K)](dst, reversed, nsrc, count);
}

// A pause of 20 us on about one call in eight, drawn per process (so that the ranks pause at different calls).
void maybe_pause() {
    thread_local uint64_t draw = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(getpid());
    draw = draw * 6364136223846793005ull + 1442695040888963407ull;
    if ((draw >> 61) == 0) {
        const timespec pause{0, 20000};
        nanosleep(&pause, nullptr);
    }
}

template <typename T, Type K>
void delayed_nary(void* dst, const void* const* srcs, std::size_t nsrc, std::size_t count) {
    maybe_pause();
    g_nary[static_cast<std::size_t>(K)](dst, srcs, nsrc, count);
}

enum class Mode { off_by_one, reverse, delay };
Mode g_mode = Mode::off_by_one;

template <typename T, Type K>
void wrap() {
    const auto sum = static_cast<std::size_t>(Op::sum);
    const auto type = static_cast<std::size_t>(K);
    g_binary[type] = g_faulty.binary[sum][type];
    g_nary[type] = g_faulty.nary[sum][type];
    switch (g_mode) {
    case Mode::reverse: g_faulty.nary[sum][type] = &reversed_nary<T, K>; break;
    case Mode::delay: g_faulty.nary[sum][type] = &delayed_nary<T, K>; break;
    case Mode::off_by_one:
        g_faulty.binary[sum][type] = &faulty_binary<T, K>;
        g_faulty.nary[sum][type] = &faulty_nary<T, K>;
        break;
    }
}

}  // namespace

extern "C" __attribute__((visibility("hidden"))) void arshim_test_inject_kernel_fault() {
    const char* mode = std::getenv("ARSHIMTEST_KERNEL_FAULT");
    if (mode != nullptr && std::strcmp(mode, "none") == 0) return;
    if (mode != nullptr && std::strcmp(mode, "reverse") == 0) g_mode = Mode::reverse;
    if (mode != nullptr && std::strcmp(mode, "delay") == 0) g_mode = Mode::delay;
    g_faulty = arshim::kernels::active();
    if (g_mode == Mode::delay) wrap<int64_t, Type::i64>();  // check_sequence's MPI_LONG_LONG
    wrap<int32_t, Type::i32>();
    wrap<float, Type::f32>();
    wrap<double, Type::f64>();
    arshim::kernels::replace_active(&g_faulty);
}

extern "C" __attribute__((visibility("hidden"))) double arshim_test_skew_tune_time(double seconds, int world_rank,
                                                                               int native, int leaders,
                                                                               unsigned long long segment_bytes) {
    // ARSHIMTEST_TUNE_SKEW_RANK=R: rank R sees the library 100x faster than it is (the other ranks do not);
    // ARSHIMTEST_TUNE_SLOW_LEADERS=L: every rank sees the multi-leader path with L leaders take 100 ms longer (added,
    // not multiplied: a factor would multiply the spread of its samples as well, which a loaded machine makes wide);
    // ARSHIMTEST_TUNE_SLOW_SEGMENTS=B: every rank sees the pipelined path with B-byte segments take 100 ms longer;
    // ARSHIMTEST_TUNE_SLOW_NATIVE=1: every rank sees the library's allreduce take 100 ms longer (with SLOW_LEADERS,
    // the same job can be made to decide either way: test/reproducible/test_same_bits.py).
    static const bool slow_native = std::getenv("ARSHIMTEST_TUNE_SLOW_NATIVE") != nullptr;
    static const int skewed = [] {
        const char* rank = std::getenv("ARSHIMTEST_TUNE_SKEW_RANK");
        return rank != nullptr ? std::atoi(rank) : -1;
    }();
    static const int slow_leaders = [] {
        const char* l = std::getenv("ARSHIMTEST_TUNE_SLOW_LEADERS");
        return l != nullptr ? std::atoi(l) : -1;
    }();
    static const unsigned long long slow_segments = [] {
        const char* b = std::getenv("ARSHIMTEST_TUNE_SLOW_SEGMENTS");
        return b != nullptr ? std::strtoull(b, nullptr, 10) : 0ULL;
    }();
    if (leaders > 0 && leaders == slow_leaders) return seconds + 0.1;
    if (native && slow_native) return seconds + 0.1;
    if (segment_bytes > 0 && segment_bytes == slow_segments) return seconds + 0.1;
    return world_rank == skewed && native ? seconds / 100 : seconds;
}

// ARSHIMTEST_SLEEP_TIMEOUT_MS: a sleeping wait's safety-net timeout (product: 2 ms), long in the test of sleeping
// waits so that a missed wake shows as a stall.
extern "C" __attribute__((visibility("hidden"))) long arshim_test_sleep_timeout_ms() {
    static const long ms = [] {
        const char* v = std::getenv("ARSHIMTEST_SLEEP_TIMEOUT_MS");
        return v != nullptr && std::atol(v) > 0 ? std::atol(v) : 2L;
    }();
    return ms;
}

extern "C" __attribute__((visibility("hidden"))) int arshim_test_fail_shm() {
    const char* fail = std::getenv("ARSHIMTEST_FAIL_SHM");
    if (fail == nullptr) return 0;
    if (std::strncmp(fail, "rank:", 5) == 0) {
        int rank = -1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        return rank == std::atoi(fail + 5);
    }
    return std::strcmp(fail, "1") == 0;
}

extern "C" __attribute__((visibility("hidden"))) int arshim_test_latency_fault() {
    const char* fault = std::getenv("ARSHIMTEST_LATENCY_FAULT");
    if (fault == nullptr) return 0;
    return std::strcmp(fault, "no-wait") == 0 ? 1 : std::strcmp(fault, "one-buffer") == 0 ? 2 : 0;
}

// ARSHIMTEST_SEGMENT_NAME=/name: every node segment is created under this name instead of a random one, so that a
// test can plant a link, a directory, a FIFO or a file there first (test/hardening/test_planted_segments.py).
extern "C" __attribute__((visibility("hidden"))) const char* arshim_test_segment_name() {
    return std::getenv("ARSHIMTEST_SEGMENT_NAME");
}
