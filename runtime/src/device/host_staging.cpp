#include "device/host_staging.hpp"

#include "device/cuda_device.hpp"
#include "error.hpp"

#include <strata/plugin.hpp>

#include <string>

namespace strata::rt {

HostStaging::~HostStaging() { cuda::device_free(data_); }

strata_buffer HostStaging::area(size_t bytes, uint64_t count, int32_t dtype, const char* what) {
  if (bytes > capacity_ || data_ == nullptr) {
    cuda::device_free(data_);
    data_ = nullptr;
    capacity_ = 0;
    std::string why;
    device_ = strata_device{STRATA_DEVICE_CUDA, cuda::current_device()};
    const size_t size = bytes < 4096 ? 4096 : bytes;
    data_ = cuda::device_alloc(device_.index, size, &why);
    if (data_ == nullptr) {
      throw Error(STRATA_ERR_OUT_OF_MEMORY,
                  std::string(what) + ": the comm stratum moves device memory only, and a device "
                                      "buffer for host values could not be had: " + why);
    }
    capacity_ = size;
  }
  strata_buffer b = sdk::host_buffer(data_, count, dtype);
  b.device = device_;
  return b;
}

void HostStaging::to_device(void* device_dst, const void* host_src, size_t bytes,
                            const char* what) const {
  cuda::copy_on(device_dst, host_src, bytes, device_, stream_(), what);
}

void HostStaging::to_host(void* host_dst, const void* device_src, size_t bytes,
                          const char* what) const {
  cuda::copy_on(host_dst, device_src, bytes, device_, stream_(), what);
}

}  // namespace strata::rt
