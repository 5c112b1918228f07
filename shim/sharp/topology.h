// The socket (processor package) this process runs on, for the SHARP path's socket-level leaders (seed 001 §4.6).
#pragma once

namespace arshim::sharp {

// This process's package index on its host, or -1 when unknown. Asked of hwloc (loaded with dlopen when present:
// the package that contains the process's CPU binding, else the package of the CPU it last ran on), with Linux
// sysfs as the fallback. Computed once per process. Only grouping depends on it, never a result: ranks that
// disagree with the hardware just make different (still correct) groups.
int socket_of_process();

}  // namespace arshim::sharp
