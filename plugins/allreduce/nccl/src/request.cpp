#include "request.hpp"

#include "cuda_errors.hpp"

namespace strata::allreduce_nccl {

Request::Request() {
  check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
             "allreduce-nccl: cudaEventCreateWithFlags for a request");
}

Request::~Request() {
  magic = 0;
  // Safe before the event completes: CUDA releases it once the recorded work is done.
  cudaEventDestroy(done);
}

}  // namespace strata::allreduce_nccl
