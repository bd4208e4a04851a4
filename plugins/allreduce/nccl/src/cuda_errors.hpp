// CUDA and NCCL results turned into sdk::Error with a sentence that says what failed.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace strata::allreduce_nccl {

// Throws sdk::Error(STRATA_ERR_COMM, "<what>: <CUDA's error name>: <its text>") unless success.
void check_cuda(cudaError_t result, const std::string& what);

// "<NCCL's error string>" plus, when the communicator has one, NCCL's last error text.
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);

}  // namespace strata::allreduce_nccl
