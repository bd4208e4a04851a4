#include "device_memory.hpp"

#include <string>

namespace strata::zero {

Memory::Memory(const sdk::Host& host) : host_(host), device_(host.device()) {}

void* Memory::stream() const { return host_.cuda_stream(); }

void* Memory::alloc(size_t bytes, strata_mem_category category, bool zeroed) const {
  if (!on_device()) {
    void* p = host_.alloc(bytes, category);
    if (p != nullptr && zeroed) std::memset(p, 0, bytes);
    return p;
  }
  if (bytes == 0) return nullptr;
  void* p = host_.try_alloc_device(bytes, category);
  if (p == nullptr) {
    sdk::fail(STRATA_ERR_OUT_OF_MEMORY,
              "zero: could not allocate " + std::to_string(bytes) + " bytes on CUDA device " +
                  std::to_string(device_.index) +
                  " (the runtime is older than ABI 1.7, was built without CUDA, or the device is "
                  "full)");
  }
  if (zeroed) zero(p, bytes);
  return p;
}

void Memory::free(void* p) const {
  if (p == nullptr) return;
  // Work still queued on the stream may use the buffer; the runtime's free may not wait for it.
  if (on_device()) device_ops::synchronize(stream(), "zero: freeing a device buffer");
  host_.free(p);
}

void Memory::poison(void* dst, size_t bytes) const {
  if (!on_device()) {
    std::memset(dst, 0xff, bytes);
    return;
  }
  device_ops::fill_bytes(dst, 0xff, bytes, stream(), "zero: poisoning a stale buffer");
}

void Memory::to_host(void* host_dst, const void* src, size_t bytes) const {
  if (!on_device()) {
    std::memcpy(host_dst, src, bytes);
    return;
  }
  device_ops::copy(host_dst, src, bytes, stream(), "zero: copy to the host");
  device_ops::synchronize(stream(), "zero: copy to the host");
}

void Memory::from_host(void* dst, const void* host_src, size_t bytes) const {
  if (!on_device()) {
    std::memcpy(dst, host_src, bytes);
    return;
  }
  device_ops::copy(dst, host_src, bytes, stream(), "zero: copy from the host");
  // The host array may be gone when the call returns: wait until the copy has read it.
  device_ops::synchronize(stream(), "zero: copy from the host");
}

}  // namespace strata::zero
