#include "cuda_aware.hpp"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace strata::allreduce_mpi {

CudaAwareness query_cuda_awareness() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  // Built with CUDA support; whether it is on in this run (a library built with it can still run
  // without, e.g. with the CUDA components excluded) is the run-time query's answer.
  if (MPIX_Query_cuda_support() == 1) return {true, "Open MPI here is CUDA-aware"};
  return {false, "Open MPI here is not CUDA-aware (built with CUDA support, but "
                 "MPIX_Query_cuda_support() says it is off in this run)"};
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  return {false, "Open MPI here is not CUDA-aware (built without CUDA support)"};
#else
  return {false, "this MPI offers no CUDA-awareness query (MPIX_CUDA_AWARE_SUPPORT), so it is "
                 "taken to move host memory only"};
#endif
}

}  // namespace strata::allreduce_mpi
