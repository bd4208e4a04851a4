// Whether this process's MPI moves CUDA device buffers itself (a CUDA-aware Open MPI): then the
// plugin declares STRATA_DEVICE_CUDA in caps.device_mask and hands device buffers straight to MPI.
#pragma once

#include <string>

namespace strata::allreduce_mpi {

struct CudaAwareness {
  bool aware;
  std::string note;  // why, for the log: "Open MPI here is not CUDA-aware (...)"
};

// Open MPI's MPIX_Query_cuda_support() (<mpi-ext.h>) at run time, where MPIX_CUDA_AWARE_SUPPORT
// says at compile time that the library was built with it; false for any other MPI. After MPI_Init.
CudaAwareness query_cuda_awareness();

}  // namespace strata::allreduce_mpi
