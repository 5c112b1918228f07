// Process-wide state of the shim: configuration (agreed across ranks), policy, kernel level, MPI flavor, and
// the init / finalize sequence. Everything here is written once during init and read-only afterwards.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "policy/settings.h"
#include "shim/base/device.h"
#include "shim/paths/path_context.h"
#include "shim/stats/startup_check.h"

namespace arshim {

struct Runtime {
    // The process's settings, made once by the settings module (shim/core/settings.h); `settings.agreed` is what the
    // communicators read (a communicator's own when its ranks disagreed: CommContext::agree_on_settings).
    ProcessSettings settings;
    std::shared_ptr<const policy::Policy> policy;
    int world_rank = -1;
    int world_size = 0;
    bool disabled = false;
    bool config_agreed = false;  // config came from world rank 0 (MPI_Init was intercepted)
    double init_time = 0;        // MPI_Wtime at init, for the share of wall time spent in allreduce
    double startup_seconds = 0;  // what ARShim's set-up in MPI_Init took on this rank (arshim_startup_seconds)
    double check_seconds = 0;    // of which the start-up check (shim/core/handshake.h)
    double nodes_seconds = 0;    // of which the world's node map (shim/core/world_nodes.h)
    stats::StartupCheck startup;  // what the start-up check found (checked: false when MPI_Init was not intercepted)
    std::string mpi_version;     // MPI_Get_library_version, first line
    std::string mpi_version_full;  // MPI_Get_library_version, all of it
    std::string policy_name;     // ARSHIM_POLICY as given ("" = built-in)
    std::string policy_text;     // the file's text as read by world rank 0 (what every rank parsed)
    bool have_policy_file = false;
    bool avoid_library_bugs = false;  // ARSHIM_LIBRARY_BUGS=avoid and this library has entries (policy/library_bugs.h)
    std::string library_bugs;         // the ids of the entries routed around, ", "-separated
    bool tune_cache_refused = false;    // ARSHIM_TUNE_CACHE names a file that is not a cache of ours: left alone
    // World rank -> node id (the lowest world rank of its node), learned at MPI_Init (shim/core/layout.h); empty
    // when MPI_Init was not intercepted (then each communicator learns its layout collectively).
    std::vector<int> world_node;
    device::Runtime device_runtime = device::Runtime::none;  // the GPU runtime this process had loaded at MPI_Init
    WaitPolicy wait;  // how the node protocol's ranks wait (from the settings and this node's CPUs; every context's)
};

// The MPI flavor this library was built for: "mpich" or "openmpi".
const char* mpi_flavor();

// Returns the runtime, initializing it first if needed (thread-safe, runs once).
// Normally init runs right after PMPI_Init/PMPI_Init_thread returns (after_mpi_init); when the program initialized
// MPI through a route ARShim does not intercept, the first allreduce initializes locally from this rank's own
// environment (no collective: it may be a sub-communicator call); the per-communicator agreement check then makes
// sure the ranks of each communicator still decide alike.
const Runtime& runtime();
// The runtime if ARShim has been set up, else nullptr (never sets it up: for queries that must not start it).
const Runtime* runtime_if_started();

// Called by the MPI_Init / MPI_Init_thread entry points (C and Fortran) after the PMPI call succeeded.
// Collective over MPI_COMM_WORLD: world rank 0's ARSHIM_* settings and policy file are broadcast.
void after_mpi_init();

// The finalize report and clean-up that the MPI_COMM_SELF delete callback runs inside MPI_Finalize, run now (once:
// the callback then does nothing). The SMPI build calls it from its MPI_Finalize (shim/entry/finalize_smpi.cpp)
// before PMPI_Finalize: SMPI runs that callback only after the rank is marked finalized, when MPI calls fail.
void finalize_now();

// Logs a configuration problem once per job (rank 0 speaks when the settings were agreed), as an error under
// ARSHIM_STRICT=1 and a warning otherwise.
void report_config_problem(const Runtime& rt, const std::string& message);
// ARSHIM_STRICT=1: once every problem is logged, abort the job if any rank had one (collective when MPI is up).
void abort_if_any_problem(bool have_problem, bool collective);

}  // namespace arshim
