// SMPI build only (SimGrid 3.32), force-included (-include) before every source of libarshim-smpi.a: smpi.h declares
// smpi_MPI_MPI_CXX_*_COMPLEX (misspelled) while its MPI_CXX_*_COMPLEX macros use smpi_MPI_CXX_*_COMPLEX, the names
// libsimgrid.so exports; declare those.
#pragma once
#include <mpi.h>
#ifdef __cplusplus
extern "C" {
#endif
extern SMPI_Datatype smpi_MPI_CXX_FLOAT_COMPLEX;
extern SMPI_Datatype smpi_MPI_CXX_DOUBLE_COMPLEX;
extern SMPI_Datatype smpi_MPI_CXX_LONG_DOUBLE_COMPLEX;
#ifdef __cplusplus
}
#endif
