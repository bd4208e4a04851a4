#include "cuda_errors.hpp"

#include <strata/plugin.hpp>

namespace strata::allreduce_nccl {

void check_cuda(cudaError_t result, const std::string& what) {
  if (result == cudaSuccess) return;
  sdk::fail(STRATA_ERR_COMM,
            what + ": " + cudaGetErrorName(result) + ": " + cudaGetErrorString(result));
}

std::string nccl_error_text(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

}  // namespace strata::allreduce_nccl
