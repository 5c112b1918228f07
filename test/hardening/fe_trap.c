// TEST CODE ONLY: preloaded after ARShim, traps FE_INVALID, FE_DIVBYZERO and FE_OVERFLOW from the start of the process
// on, as a program built with `gfortran -ffpe-trap=invalid,zero,overflow` or calling feenableexcept() does: any such
// operation ARShim makes (a path, a kernel over finite data, the finalize summary) then kills the rank with SIGFPE
// (test_fp_traps.py).
#define _GNU_SOURCE
#include <fenv.h>

__attribute__((constructor)) static void trap_floating_point_exceptions(void) {
    feenableexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW);
}
