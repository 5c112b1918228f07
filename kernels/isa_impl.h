// Internal: the per-ISA table fillers. Each lives in its own ISA-named namespace and source file compiled with
// that ISA's flags; only kernels.cpp (baseline flags) calls them, and only to store function pointers.
#pragma once

#include "kernels/kernels.h"

namespace arshim::kernels {

namespace scalar {
void fill(KernelTable& table);  // resets the table, then installs every defined pair
}
// The wider fillers overwrite only the entries they vectorize; the table passed in already holds the narrower
// level's kernels (scalar first, then avx2, then avx512 -- Open MPI op/avx's layering).
namespace avx2 {
void fill(KernelTable& table);
}
namespace avx512 {
void fill(KernelTable& table);
}
namespace neon {
void fill(KernelTable& table);
}
namespace sve {
void fill(KernelTable& table);
}

}  // namespace arshim::kernels
