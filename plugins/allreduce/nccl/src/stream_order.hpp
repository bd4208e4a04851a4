// The plugin's own CUDA stream and its ordering with the host's stream (the host-services table's
// cuda_stream(), ABI 1.7; absent or NULL: the legacy default stream). A collective's work waits
// for what the host already enqueued (an event recorded on the host's stream), and the host's
// later work waits for the collective (the request's event), so neither stream ever blocks the
// CPU and NCCL's kernels never run inside the host's stream.
#pragma once

#include <strata/plugin.hpp>

#include <cuda_runtime_api.h>

namespace strata::allreduce_nccl {

class StreamOrder {
 public:
  StreamOrder(const sdk::Host& host, int device);  // throws sdk::Error (STRATA_ERR_COMM)
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  cudaStream_t stream() const { return stream_; }
  // The host's stream for this call (read per call: the host may change it between steps).
  cudaStream_t host_stream() const;
  // Our stream waits for the work on `host` so far.
  void after(cudaStream_t host, const char* call) const;
  // Records `done` on our stream and makes `host` wait for it.
  void before(cudaStream_t host, cudaEvent_t done, const char* call) const;

 private:
  sdk::Host host_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t host_ready_ = nullptr;  // re-recorded per call: a wait takes the record at that time
};

}  // namespace strata::allreduce_nccl
