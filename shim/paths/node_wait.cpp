// The node protocol's waits (declared in shim/paths/node_shm.h): polling, yielding, sleeping on a futex, and the
// reproducible chain's wait that drives MPI's progress engine. Compiled into every MPI flavor but the SMPI one, which
// compiles node_wait_smpi.cpp instead (there every rank is an actor of one simulation, and a wait must enter the
// simulator: docs/architecture.md "The SMPI build: where it differs").
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "shim/paths/node_shm.h"

// Tests only (never installed): the safety-net timeout of a sleeping wait, made long so that a missed wake shows as a
// stall. Null in the product.
extern "C" long arshim_test_sleep_timeout_ms() __attribute__((weak, visibility("hidden")));

namespace arshim {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}
}  // namespace

namespace {

// Polls as WaitPolicy says, then yields between polls: for good when `yield_for` is zero, else until that long has
// passed. True when the counter reached the target.
bool poll_then_yield(const std::atomic<uint64_t>& counter, uint64_t target, std::chrono::microseconds yield_for,
                     const WaitPolicy& wait) {
    if (wait.pause) {
        // A clock read costs about as much as a pause (docs/paths.md "One node, small calls"): once per block of
        // polls, and none before the first block is over (most waits end there).
        constexpr int kPollsPerClockRead = 16;
        auto poll_block = [&] {
            for (int i = 0; i < kPollsPerClockRead; ++i) {
                if (counter.load(std::memory_order_acquire) >= target) return true;
                cpu_relax();
            }
            return false;
        };
        if (poll_block()) return true;
        if (wait.budget.count() > 0) {
            const auto deadline = std::chrono::steady_clock::now() + wait.budget;
            do {
                if (poll_block()) return true;
            } while (std::chrono::steady_clock::now() < deadline);
        }
    } else {
        for (int i = 0; i < 64; ++i)
            if (counter.load(std::memory_order_acquire) >= target) return true;
    }
    if (yield_for.count() == 0) {
        while (counter.load(std::memory_order_acquire) < target) sched_yield();
        return true;
    }
    const auto deadline = std::chrono::steady_clock::now() + yield_for;  // a clock read costs less than a yield
    while (counter.load(std::memory_order_acquire) < target) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        sched_yield();
    }
    return true;
}

// The 32-bit word of a counter the kernel compares and sleeps on: its low half, which changes with every store
// (values only grow, by far less than 2^32 between two looks).
uint32_t* futex_word(ShmCounter& counter) {
    static_assert(sizeof(counter.value) == 8, "a 64-bit counter");
    auto* words = reinterpret_cast<uint32_t*>(&counter.value);
    return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? words : words + 1;
}

}  // namespace

void wait_polling(const std::atomic<uint64_t>& counter, uint64_t target, const WaitPolicy& wait) {
    poll_then_yield(counter, target, std::chrono::microseconds{0}, wait);
}

void wait_sleeping(ShmCounter& counter, uint64_t target, const WaitPolicy& wait) {
    if (counter.value.load(std::memory_order_acquire) >= target) return;
    if (wait.sleep_after.count() == 0 || poll_then_yield(counter.value, target, wait.sleep_after, wait)) {
        wait_at_least(counter.value, target, wait);  // never sleeps (ARSHIM_SLEEP_AFTER_US=0); returns at once if reached
        return;
    }
    if (wait.phase_times) ++g_phase_times.sleeps;
    // The timeout is a safety net only: every publisher of the counter wakes its sleepers (publish_waking).
    const long timeout_ms = arshim_test_sleep_timeout_ms != nullptr ? arshim_test_sleep_timeout_ms() : 2;
    // A shared (not process-private) futex: the window is mapped into every rank of the node, at other addresses.
    for (;;) {
        counter.sleepers.fetch_add(1, std::memory_order_seq_cst);
        const uint64_t seen = counter.value.load(std::memory_order_seq_cst);
        if (seen < target) {
            struct timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000};
            syscall(SYS_futex, futex_word(counter), FUTEX_WAIT, static_cast<uint32_t>(seen), &timeout, nullptr, 0);
        }
        counter.sleepers.fetch_sub(1, std::memory_order_seq_cst);
        if (counter.value.load(std::memory_order_acquire) >= target) return;
    }
}

void wake_sleepers(ShmCounter& counter) {
    syscall(SYS_futex, futex_word(counter), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits like wait_at_least (node_shm.h), driving MPI's progress engine meanwhile: a leader's sends and receives up
// and down the chain move only while its process is inside MPI (Open MPI's TCP transport in particular: without
// this the chain ran at a fraction of the default path's speed; docs/reproducible.md "Across nodes"). MPI_Iprobe
// progresses without completing any request.
void wait_progressing(const std::atomic<uint64_t>& counter, uint64_t target, MPI_Comm comm) {
    for (int spin = 0; counter.load(std::memory_order_acquire) < target; ++spin) {
        if (spin % 16 == 15) {
            int flag = 0;
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
        } else if (spin > 64) {
            sched_yield();
        }
    }
}
}  // namespace arshim
