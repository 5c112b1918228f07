// The engine: classifies one MPI_Allreduce call, resolves it once and routes it to a path. Entry points (C,
// Fortran) only convert their arguments and call allreduce().
#pragma once

#include "shim/paths/call.h"

namespace arshim::engine {

int allreduce(const CallArgs& args);

}  // namespace arshim::engine
