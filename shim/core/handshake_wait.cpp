#include "shim/core/handshake_wait.h"

#include <chrono>
#include <thread>

namespace arshim::handshake_wait {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Polls, yielding the CPU between polls and sleeping 200 us after the first hundred (ranks may outnumber cores).
bool all_complete(int count, MPI_Request* requests, double deadline_s) {
    for (int polls = 0;; ++polls) {
        int all = 0;
        PMPI_Testall(count, requests, &all, MPI_STATUSES_IGNORE);
        if (all) return true;
        if (now_s() >= deadline_s) return false;
        if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(200));
        else std::this_thread::yield();
    }
}

}  // namespace arshim::handshake_wait
