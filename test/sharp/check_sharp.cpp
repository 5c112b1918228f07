// MPI test of the SHARP path under the test double (test/sharp/fake_sharp_coll.cpp): an ordinary MPI program that
// makes a fixed sequence of MPI_Allreduce calls (LLT-sized, SAT-sized and unsupported ones, in place and not),
// checks every result against values it computes itself, and checks how each call ran from ARShim's SHARP counters
// (arshim_sharp_calls, found with dlsym): which of llt / sat / host (with its reason) / declined-to-native, on every
// rank alike, as the scenario predicts.
//
//   check_sharp SCENARIO        (run under test/mpi/mpirun.sh with ARShim preloaded and ARSHIM_PATH=sharp)
//
// Scenarios and the FAKE_SHARP_* / ARSHIM_* settings test/sharp/meson.build runs them with:
//   ok             nothing injected: LLT below ARSHIM_SHARP_SAT_THRESHOLD, SAT above, unsupported on the host
//   all_llt        ARSHIM_SHARP_SAT_THRESHOLD=1G: everything LLT (split into the LLT payload)
//   all_sat        ARSHIM_SHARP_SAT_THRESHOLD=0: everything SAT
//   no_double      FAKE_SHARP_NO_DTYPES=5: the capabilities lack double, so double calls take the host path
//   no_sat         FAKE_SHARP_NO_SAT / FAKE_SHARP_DENY_SAT_LOCK / FAKE_SHARP_FAIL_REG: SAT-sized calls on the host
//   no_llt         FAKE_SHARP_NO_LLT: LLT-sized calls on the host
//   sat_lock       FAKE_SHARP_REFUSE_SAT_LOCK: SAT-sized calls retry, then the host (then back off)
//   sat_lock_once  FAKE_SHARP_REFUSE_SAT_LOCK_COUNT=1: the first SAT call retries once and succeeds
//   reg_user       FAKE_SHARP_FAIL_REG_AFTER=1, every rank a member: user buffers cannot be registered, SAT pieces go
//                  through ARShim's registered bounce buffer
//   no_group       FAKE_SHARP_FAIL_INIT / _FAIL_CAPS / _FAIL_COMM_INIT (one rank): every call declines to native
//   missing        ARSHIM_SHARP_LIB names no library (ARSHIM_SHARP=on or auto): every call declines to native
//   off            ARSHIM_SHARP=off: every call declines to native and the library is never loaded
//   fail_allreduce FAKE_SHARP_FAIL_ALLREDUCE_N: one call completes on the host (host_error), SHARP is disabled on
//                  the communicator, every later call declines to native
#include <mpi.h>

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "check_ops.h"  // test/support

namespace {

using check::mix;
using check::mpi_op;
using check::Op;

int g_rank = 0, g_size = 1;
long long g_failures = 0;

void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char* fmt, ...) {
    ++g_failures;
    if (g_failures > 20) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    std::printf("rank %d: FAIL %s\n", g_rank, line);
}

// ---- ARShim's SHARP counters and the double's own (both optional: absent means "not loaded") ----
using Query = long long (*)(const char*);
Query g_sharp_calls = nullptr;  // arshim_sharp_calls
Query g_reason_calls = nullptr; // arshim_reason_calls
Query g_fake_stat = nullptr;    // fake_sharp_stat, when the double is loaded

long long sharp(const char* kind) { return g_sharp_calls ? g_sharp_calls(kind) : -1; }

// How one call ran, from the counters' differences.
const char* const kKinds[] = {"llt", "sat", "host", "unavailable"};
const char* const kHostReasons[] = {"host_unsupported", "host_no_sat", "host_no_llt", "host_sat_lock", "host_error"};

struct Snapshot {
    long long kinds[4];
    long long reasons[5];
};
Snapshot snapshot() {
    Snapshot s{};
    for (int i = 0; i < 4; ++i) s.kinds[i] = sharp(kKinds[i]);
    for (int i = 0; i < 5; ++i) s.reasons[i] = sharp(kHostReasons[i]);
    return s;
}
// "llt", "sat", "host_<reason>", "native", or "?..." when the counters moved wrongly.
std::string classify(const Snapshot& a, const Snapshot& b) {
    int moved = 0, which = -1;
    for (int i = 0; i < 4; ++i)
        if (b.kinds[i] != a.kinds[i]) ++moved, which = i;
    if (moved != 1 || b.kinds[which] != a.kinds[which] + 1) return "?counters";
    if (which == 0) return "llt";
    if (which == 1) return "sat";
    if (which == 3) return "native";
    std::string reason = "?reason";
    int reasons = 0;
    for (int i = 0; i < 5; ++i)
        if (b.reasons[i] == a.reasons[i] + 1) ++reasons, reason = kHostReasons[i];
    return reasons == 1 ? reason : "?reason";
}

// ---- values: deterministic per (rank, index) (check::mix), every rank can compute every contribution ----

template <typename T>
T value(int rank, std::size_t i, int salt, Op op) {
    const uint64_t r = mix(rank, i, salt);
    if constexpr (std::is_same_v<T, bool>) {
        return (r & 3) == 0;
    } else if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(r);
    } else if constexpr (std::is_floating_point_v<T>) {
        // Integer-valued: sums and small products are exact in any order.
        return op == Op::prod ? static_cast<T>(static_cast<int>(r % 5) - 2) : static_cast<T>(static_cast<int>(r % 2001) - 1000);
    } else {  // std::complex
        using R = typename T::value_type;
        return T(static_cast<R>(static_cast<int>(r % 21) - 10), static_cast<R>(static_cast<int>((r >> 8) % 21) - 10));
    }
}

template <typename T>
T combine(Op op, T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
        return a || b;  // only LOR is used on bool
    } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        switch (op) {
        case Op::sum: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        case Op::min: return b < a ? b : a;
        case Op::max: return b > a ? b : a;
        case Op::band: return static_cast<T>(a & b);
        case Op::bxor: return static_cast<T>(a ^ b);
        default: std::abort();
        }
    } else if constexpr (std::is_floating_point_v<T>) {
        switch (op) {
        case Op::sum: return a + b;
        case Op::prod: return a * b;
        case Op::min: return b < a ? b : a;
        case Op::max: return b > a ? b : a;
        default: std::abort();
        }
    } else {
        return a + b;  // complex: SUM only
    }
}

template <typename V>
struct Loc {
    V value;
    int index;
};

// One scalar-typed call: fills, calls, checks. `buffer` (optional) is where the in/out data lives (an mmap'd
// region); otherwise vectors.
template <typename T>
void run_scalar(MPI_Datatype dt, Op op, int count, bool in_place, int salt, T* buffer = nullptr) {
    // Plain arrays: std::vector<bool> has no data().
    const auto n = static_cast<std::size_t>(count);
    std::unique_ptr<T[]> send(new T[n]), send_copy(new T[n]), want(new T[n]), own(buffer ? nullptr : new T[n]);
    T* recv = buffer ? buffer : own.get();
    for (std::size_t i = 0; i < n; ++i) {
        send[i] = value<T>(g_rank, i, salt, op);
        T acc = value<T>(0, i, salt, op);
        for (int r = 1; r < g_size; ++r) acc = combine(op, acc, value<T>(r, i, salt, op));
        want[i] = acc;
        recv[i] = in_place ? send[i] : T{};
        send_copy[i] = send[i];
    }
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send.get(), recv, count, dt, mpi_op(op), MPI_COMM_WORLD);
    for (std::size_t i = 0; i < n; ++i)
        if (!(recv[i] == want[i])) {
            fail("call salt %d count %d%s: wrong result at [%zu]", salt, count, in_place ? " in place" : "", i);
            break;
        }
    if (!in_place && std::memcmp(send.get(), send_copy.get(), n * sizeof(T)) != 0)
        fail("call salt %d: sendbuf modified", salt);
}

template <typename V>
void run_loc(MPI_Datatype dt, Op op, int count, bool in_place, int salt) {
    using P = Loc<V>;
    auto val = [salt](int r, int i) { return P{static_cast<V>(static_cast<int>(mix(r, i, salt) % 3)), (r * 7 + i) % 11}; };
    std::vector<P> send(static_cast<std::size_t>(count)), recv(static_cast<std::size_t>(count)),
        want(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        send[i] = val(g_rank, i);
        P acc = val(0, i);
        for (int r = 1; r < g_size; ++r) {
            const P b = val(r, i);
            const bool better = op == Op::minloc ? b.value < acc.value : b.value > acc.value;
            if (better) acc = b;
            else if (b.value == acc.value && b.index < acc.index) acc.index = b.index;
        }
        want[i] = acc;
        recv[i] = in_place ? send[i] : P{};
    }
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(), count, dt, mpi_op(op), MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i)
        if (!(recv[i].value == want[i].value && recv[i].index == want[i].index)) {
            fail("loc call salt %d count %d%s: wrong result at [%d]", salt, count, in_place ? " in place" : "", i);
            break;
        }
}

// ---- the call sequence ----

enum class Size { llt, sat };  // below / at or above the default ARSHIM_SHARP_SAT_THRESHOLD (8 KiB)

struct Call {
    const char* name;
    Size size;
    bool supported;        // SHARP has the datatype and op (the double's capabilities by default)
    bool is_double;        // SHARP_DTYPE_DOUBLE (FAKE_SHARP_NO_DTYPES=5 removes it)
    std::function<void(bool in_place, int salt)> run;
};

// A SAT-sized buffer that lives in its own mapping, unmapped and mapped again between rounds: the registration
// cache must not reuse a registration of pages that are gone (the double loses results written through one).
struct Mapping {
    static constexpr int kCount = 50000;
    int32_t* data = nullptr;
    void map() {
        void* p = mmap(nullptr, kCount * sizeof(int32_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        data = p == MAP_FAILED ? nullptr : static_cast<int32_t*>(p);
    }
    void unmap() {
        if (data) munmap(data, kCount * sizeof(int32_t));
        data = nullptr;
    }
};
Mapping g_mapping;

std::vector<Call> calls() {
    return {
        {"sum double 100", Size::llt, true, true,
         [](bool ip, int s) { run_scalar<double>(MPI_DOUBLE, Op::sum, 100, ip, s); }},
        {"min int32 37", Size::llt, true, false,
         [](bool ip, int s) { run_scalar<int32_t>(MPI_INT32_T, Op::min, 37, ip, s); }},
        {"bxor uint16 13", Size::llt, true, false,
         [](bool ip, int s) { run_scalar<uint16_t>(MPI_UINT16_T, Op::bxor, 13, ip, s); }},
        {"maxloc float_int 20", Size::llt, true, false,
         [](bool ip, int s) { run_loc<float>(MPI_FLOAT_INT, Op::maxloc, 20, ip, s); }},
        {"lor bool 9", Size::llt, true, false,
         [](bool ip, int s) { run_scalar<bool>(MPI_C_BOOL, Op::lor, 9, ip, s); }},
        {"max int8 50", Size::llt, true, false,
         [](bool ip, int s) { run_scalar<int8_t>(MPI_INT8_T, Op::max, 50, ip, s); }},
        // 7000 B: several LLT operations of the double's 2 KiB payload
        {"sum double 875", Size::llt, true, true,
         [](bool ip, int s) { run_scalar<double>(MPI_DOUBLE, Op::sum, 875, ip, s); }},
        // 1.2 MB: more than one SAT operation (1 MiB pieces / chunks)
        {"sum float 300000", Size::sat, true, false,
         [](bool ip, int s) { run_scalar<float>(MPI_FLOAT, Op::sum, 300000, ip, s); }},
        {"max int64 5000", Size::sat, true, false,
         [](bool ip, int s) { run_scalar<int64_t>(MPI_INT64_T, Op::max, 5000, ip, s); }},
        {"band uint32 20000", Size::sat, true, false,
         [](bool ip, int s) { run_scalar<uint32_t>(MPI_UINT32_T, Op::band, 20000, ip, s); }},
        {"sum int32 50000 (mmap)", Size::sat, true, false,
         [](bool ip, int s) {
             if (g_mapping.data == nullptr) return fail("mmap failed");
             run_scalar<int32_t>(MPI_INT32_T, Op::sum, Mapping::kCount, ip, s, g_mapping.data);
         }},
        // SHARP lacks these: PROD, long double, complex, MINLOC on a padded pair
        {"prod double 100", Size::llt, false, true,
         [](bool ip, int s) { run_scalar<double>(MPI_DOUBLE, Op::prod, 100, ip, s); }},
        {"sum long double 50", Size::llt, false, false,
         [](bool ip, int s) { run_scalar<long double>(MPI_LONG_DOUBLE, Op::sum, 50, ip, s); }},
        {"sum complex double 30", Size::llt, false, false,
         [](bool ip, int s) { run_scalar<std::complex<double>>(MPI_C_DOUBLE_COMPLEX, Op::sum, 30, ip, s); }},
        {"minloc double_int 20", Size::llt, false, false,
         [](bool ip, int s) { run_loc<double>(MPI_DOUBLE_INT, Op::minloc, 20, ip, s); }},
        {"prod double 20000", Size::sat, false, true,
         [](bool ip, int s) { run_scalar<double>(MPI_DOUBLE, Op::prod, 20000, ip, s); }},
    };
}

// ---- expectations ----

struct Expect {
    std::string scenario;
    // The kind a call should have run as (before any injected mid-run failure).
    std::string kind(const Call& c) const {
        if (scenario == "no_group" || scenario == "missing" || scenario == "off") return "native";
        if (!c.supported) return "host_unsupported";
        if (scenario == "no_double" && c.is_double) return "host_unsupported";
        Size size = c.size;
        if (scenario == "all_llt") size = Size::llt;
        if (scenario == "all_sat") size = Size::sat;
        if (size == Size::llt) return scenario == "no_llt" ? "host_no_llt" : "llt";
        if (scenario == "no_sat") return "host_no_sat";
        if (scenario == "sat_lock") return "host_sat_lock";
        return "sat";
    }
};

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const std::string scenario = argc > 1 ? argv[1] : "ok";
    g_sharp_calls = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "arshim_sharp_calls"));
    g_reason_calls = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "arshim_reason_calls"));
    if (g_sharp_calls == nullptr || g_reason_calls == nullptr) fail("ARShim is not preloaded");
    // The double is loaded by ARShim (RTLD_LOCAL): reach it through its file, without loading it ourselves.
    const char* lib = std::getenv("ARSHIM_SHARP_LIB");
    void* fake = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (fake) g_fake_stat = reinterpret_cast<Query>(dlsym(fake, "fake_sharp_stat"));
    const bool want_loaded = scenario != "off" && scenario != "missing";
    if ((fake != nullptr) != want_loaded)
        fail("the SHARP library is %s, expected %s", fake ? "loaded" : "not loaded",
             want_loaded ? "loaded (at MPI_Init)" : "not loaded");

    const Expect expect{scenario};
    const std::vector<Call> sequence = calls();
    const Snapshot start = snapshot();
    const long long unavailable_before = g_reason_calls ? g_reason_calls("sharp_unavailable") : 0;
    std::vector<std::string> kinds;     // per call, this rank
    std::vector<std::string> expected;  // per call
    int failed_call = -1;               // fail_allreduce: the call that completed on the host after the error
    constexpr int kRounds = 2;
    for (int round = 0; round < kRounds; ++round) {
        g_mapping.map();
        for (std::size_t c = 0; c < sequence.size(); ++c)
            for (bool in_place : {false, true}) {
                const Snapshot before = snapshot();
                sequence[c].run(in_place, static_cast<int>(c * 2 + (in_place ? 1 : 0) + round * 100));
                const std::string kind = classify(before, snapshot());
                std::string want = expect.kind(sequence[c]);
                if (scenario == "fail_allreduce") {
                    if (failed_call >= 0) want = "native";
                    else if (kind == "host_error") want = kind, failed_call = static_cast<int>(kinds.size());
                }
                kinds.push_back(kind);
                expected.push_back(want);
                if (kind != want)
                    fail("call %zu (%s%s, round %d) ran as %s, expected %s", kinds.size() - 1, sequence[c].name,
                         in_place ? ", in place" : "", round, kind.c_str(), want.c_str());
            }
        g_mapping.unmap();
    }
    const long long n = static_cast<long long>(kinds.size());

    // Scenario-wide counters (this rank's process).
    const Snapshot end = snapshot();
    long long sat_calls = 0, native_calls = 0;
    for (const std::string& w : expected) sat_calls += w == "sat" || w == "host_sat_lock", native_calls += w == "native";
    const long long declined = (g_reason_calls ? g_reason_calls("sharp_unavailable") : 0) - unavailable_before;
    if (declined != native_calls)
        fail("arshim_reason_calls(sharp_unavailable) counted %lld calls, expected %lld", declined, native_calls);
    if (scenario == "fail_allreduce") {
        if (failed_call < 0) fail("no call saw the injected SHARP error");
        else if (failed_call == 0 || failed_call >= n - 1) fail("the injected error hit call %d, not mid-run", failed_call);
    }
    // Group events are counted once per communicator (by its rank 0): sum them over the ranks.
    long long group_events[3] = {sharp("groups"), sharp("group_failures"), sharp("disabled")}, group_totals[3] = {};
    MPI_Reduce(group_events, group_totals, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        const long long groups = group_totals[0], group_failures = group_totals[1], disabled = group_totals[2];
        const long long want_groups = scenario == "no_group" || scenario == "missing" || scenario == "off" ? 0 : 1;
        const long long want_failures = scenario == "no_group" ? 1 : 0;
        if (groups != want_groups || group_failures != want_failures)
            fail("groups created %lld, failed %lld: expected %lld, %lld", groups, group_failures, want_groups,
                 want_failures);
        if (disabled != (scenario == "fail_allreduce" ? 1 : 0)) fail("disabled = %lld", disabled);
    }
    // Leader-side events (retries, bounce buffer): only SHARP members see them; the busiest member's count.
    long long leader_events[2] = {sharp("sat_lock_retries"), sharp("reg_bounced")}, most[2] = {};
    MPI_Reduce(leader_events, most, 2, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        // Every SAT-sized call until the back-off retries 3 times; two such calls start a back-off of 32 calls.
        const long long retries = scenario == "sat_lock" ? 3 * std::min<long long>(2, sat_calls)
                                  : scenario == "sat_lock_once" ? 1 : 0;
        if (most[0] != retries) fail("sat_lock_retries = %lld, expected %lld", most[0], retries);
        if (scenario == "reg_user" && most[1] <= 0) fail("no SAT piece went through the bounce buffer");
    }
    // Registrations kept across calls (unmap events available) must have been dropped when the mapped buffer and
    // the large temporaries went away.
    if (scenario == "ok" && sharp("reg_hits") > 0 && sharp("reg_invalidations") <= 0)
        fail("%lld registration cache hits but no invalidation after munmap", sharp("reg_hits"));
    if (g_fake_stat != nullptr) {
        if (g_fake_stat("misuse") != 0) fail("the double counted %lld misuses of the API", g_fake_stat("misuse"));
        if (g_fake_stat("stale_uses") != 0) fail("a stale registration was used %lld times", g_fake_stat("stale_uses"));
    }
    if (scenario == "ok") {  // only SHARP members (leaders) run operations: count over all ranks
        long long ops[2] = {g_fake_stat ? g_fake_stat("llt_ops") : 0, g_fake_stat ? g_fake_stat("sat_ops") : 0};
        long long all_ops[2] = {};
        MPI_Reduce(ops, all_ops, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (g_rank == 0 && (all_ops[0] <= 0 || all_ops[1] <= 0))
            fail("the double ran %lld LLT and %lld SAT operations", all_ops[0], all_ops[1]);
    }

    // Every rank ran every call the same way (MPI_Gather: ARShim intercepts only MPI_Allreduce).
    std::string mine;
    for (const std::string& k : kinds) mine += k.substr(0, 15) + std::string(16 - std::min<std::size_t>(15, k.size()), ' ');
    std::vector<char> all(g_rank == 0 ? mine.size() * static_cast<std::size_t>(g_size) : 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(), static_cast<int>(mine.size()),
               MPI_CHAR, 0, MPI_COMM_WORLD);
    if (g_rank == 0)
        for (int r = 1; r < g_size; ++r)
            if (std::memcmp(all.data(), all.data() + mine.size() * static_cast<std::size_t>(r), mine.size()) != 0)
                fail("rank %d ran some calls differently from rank 0", r);

    long long failures = 0;
    MPI_Reduce(&g_failures, &failures, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) {
        long long count[4] = {};
        for (int i = 0; i < 4; ++i) count[i] = end.kinds[i] - start.kinds[i];
        std::printf("check_sharp %s: %d ranks, %lld calls (llt %lld, sat %lld, host %lld, native %lld), %lld failures\n",
                    scenario.c_str(), g_size, n, count[0], count[1], count[2], count[3], failures);
        // The same as data, for the test (test_sharp.py).
        std::printf("{\"check_sharp\": {\"scenario\": \"%s\", \"ranks\": %d, \"calls\": %lld, \"llt\": %lld, \"sat\": %lld, "
                    "\"host\": %lld, \"native\": %lld, \"failures\": %lld}}\n",
                    scenario.c_str(), g_size, n, count[0], count[1], count[2], count[3], failures);
    }
    int failed = failures > 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
