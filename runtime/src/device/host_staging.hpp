// Host buffers through a comm stratum that moves CUDA device memory only (allreduce-nccl): the
// runtime's own collectives (start-up agreement, step statistics, the host API's metric
// collectives) are small host buffers, copied to a scratch buffer on the current CUDA device (the
// one the comm plugin selected at create), moved there, and copied back, in order with the host's
// stream. Only Collectives uses it.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <functional>

namespace strata::rt {

class HostStaging {
 public:
  // `stream`: the host's cudaStream_t now (strata_set_stream; nullptr: the legacy stream).
  explicit HostStaging(std::function<void*()> stream) : stream_(std::move(stream)) {}
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // A device buffer of at least `bytes` (kept and grown across calls), on the current device.
  strata_buffer area(size_t bytes, uint64_t count, int32_t dtype, const char* what);
  void to_device(void* device_dst, const void* host_src, size_t bytes, const char* what) const;
  void to_host(void* host_dst, const void* device_src, size_t bytes, const char* what) const;

 private:
  std::function<void*()> stream_;
  void* data_ = nullptr;
  size_t capacity_ = 0;
  strata_device device_{STRATA_DEVICE_CUDA, 0};
};

}  // namespace strata::rt
