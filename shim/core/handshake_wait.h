// The start-up check's clock and waits (shim/core/handshake.cpp), one file per build: on a real MPI
// (handshake_wait.cpp) the host clock and polls that yield the CPU (ranks may outnumber cores); in the SMPI build
// (handshake_wait_smpi.cpp) plain MPI waits, since every rank of a simulation has ARShim linked in, a host-clock
// deadline is not the simulated one and a rank that sleeps on the host stops the whole simulation.
#pragma once

#include <mpi.h>

namespace arshim::handshake_wait {

// Seconds since an arbitrary origin, for deadlines.
double now_s();

// Waits until the `count` requests have completed (true) or `deadline_s` (now_s()'s clock) has passed (false; the
// requests then stay as they are, for the caller to test and cancel).
bool all_complete(int count, MPI_Request* requests, double deadline_s);

}  // namespace arshim::handshake_wait
