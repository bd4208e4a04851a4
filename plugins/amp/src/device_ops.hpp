// The precision stratum's work on CUDA device buffers (ABI 1.7): casts and grad_stats over
// shards whose `device` is CUDA, on the shared CUDA kernels (strata_common_cuda_kernels) and the host's
// stream. Two builds of one interface: device_ops_cuda.cpp when STRATA_HAVE_CUDA, and
// device_ops_none.cpp, which refuses device buffers with "built without CUDA".
#pragma once

#include <strata/plugin.hpp>

#include <cstddef>
#include <span>

#include "grad_stats.hpp"

namespace strata::amp {

// Device memory the stats pass reuses from call to call (its per-chunk partials and result),
// accounted through the host (STRATA_MEM_DEVICE); grows as needed, freed with the instance.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  explicit DeviceScratch(const sdk::Host& host) : host_(host) {}
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch();
  // At least `bytes` of device memory; the earlier contents are lost.
  void* at_least(std::size_t bytes);

 private:
  sdk::Host host_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// dst = src converted, both on the same CUDA device, enqueued on `stream` (the host's; the call
// returns before the kernel ran). f32 <-> f16/bf16 and same-dtype copies; throws sdk::Error
// naming the buffer otherwise.
void device_cast(const strata_buffer& src, const strata_buffer& dst, void* stream);

// grad_stats over shards whose grads are all in CUDA device memory, in one multi-tensor pass
// (deterministic); waits for the result on `stream`.
GradStats device_grad_stats(std::span<const strata_shard> shards, DeviceScratch& scratch,
                            void* stream);

// The host's CUDA stream for the current call (ABI 1.7), nullptr on older runtimes.
inline void* host_stream(const sdk::Host& host) { return host.cuda_stream(); }

// Whether the job's shards hold CUDA device pointers: exactly when the host's device() is CUDA
// (ABI 1.7; older runtimes have host shards only).
inline bool shards_on_device(const sdk::Host& host) { return host.on_cuda(); }

}  // namespace strata::amp
