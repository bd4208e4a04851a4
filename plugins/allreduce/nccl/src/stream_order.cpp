#include "stream_order.hpp"

#include "cuda_errors.hpp"

#include <string>

namespace strata::allreduce_nccl {

StreamOrder::StreamOrder(const sdk::Host& host, int device) : host_(host) {
  const std::string where = "allreduce-nccl: cuda:" + std::to_string(device);
  check_cuda(cudaSetDevice(device), where + ": cudaSetDevice");
  // Non-blocking: our stream must not synchronise implicitly with the legacy default stream; it
  // is ordered with the host's stream by events only.
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             where + ": cudaStreamCreateWithFlags");
  const cudaError_t made = cudaEventCreateWithFlags(&host_ready_, cudaEventDisableTiming);
  if (made != cudaSuccess) cudaStreamDestroy(stream_);
  check_cuda(made, where + ": cudaEventCreateWithFlags");
}

StreamOrder::~StreamOrder() {
  cudaEventDestroy(host_ready_);
  cudaStreamDestroy(stream_);
}

cudaStream_t StreamOrder::host_stream() const {
  // NULL (also from a runtime older than ABI 1.7): the legacy default stream.
  return static_cast<cudaStream_t>(host_.cuda_stream());
}

void StreamOrder::after(cudaStream_t host, const char* call) const {
  const std::string what = std::string("allreduce-nccl: ") + call;
  check_cuda(cudaEventRecord(host_ready_, host), what + ": cudaEventRecord on the host's stream");
  check_cuda(cudaStreamWaitEvent(stream_, host_ready_, 0), what + ": cudaStreamWaitEvent");
}

void StreamOrder::before(cudaStream_t host, cudaEvent_t done, const char* call) const {
  const std::string what = std::string("allreduce-nccl: ") + call;
  check_cuda(cudaEventRecord(done, stream_), what + ": cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(host, done, 0),
             what + ": cudaStreamWaitEvent on the host's stream");
}

}  // namespace strata::allreduce_nccl
