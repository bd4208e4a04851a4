// One collective in flight: the CUDA event recorded on the plugin's stream after its NCCL work.
// wait() polls the event and NCCL's async error (NcclComm::wait_for); test() polls once.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>

namespace strata::allreduce_nccl {

struct Request {
  static constexpr uint64_t kMagic = 0x6e63636c2d726571;  // "nccl-req"

  Request();  // creates the event; throws sdk::Error (STRATA_ERR_COMM)
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  uint64_t magic = kMagic;  // a handle that is not one of ours fails the check in wait/test
  const void* owner = nullptr;
  const char* call = "";  // the collective, for messages (a string literal)
  cudaEvent_t done = nullptr;
  std::chrono::steady_clock::time_point started;  // when the collective was issued
};

}  // namespace strata::allreduce_nccl
