// cuda_device.hpp for a libstrata built without CUDA: host memory only. Registering a device
// parameter fails earlier, at strata_register_param, with without_cuda_reason(); these throw if a
// device pointer reaches them anyway.
#include "device/cuda_device.hpp"

#include "error.hpp"

#include <cstring>

namespace strata::rt::cuda {
namespace {

[[noreturn]] void no_device(const char* what) {
  throw Error(STRATA_ERR_UNSUPPORTED, std::string(what) + ": " + without_cuda_reason());
}

}  // namespace

bool built_with_cuda() { return false; }
const char* without_cuda_reason() {
  return "this libstrata was built without CUDA (STRATA_CUDA=OFF, or no CUDA toolkit at build "
         "time), so it cannot use device memory";
}

void* device_alloc(int, size_t, std::string* why) {
  if (why != nullptr) *why = without_cuda_reason();
  return nullptr;
}

void device_free(void*) {}

void copy(void* dst, const void* src, size_t bytes, const strata_device& device, const char* what) {
  if (device.type != STRATA_DEVICE_HOST) no_device(what);
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

void copy_on(void* dst, const void* src, size_t bytes, const strata_device& device, void*,
             const char* what) {
  copy(dst, src, bytes, device, what);
}

int current_device() { return 0; }

void zero(void* ptr, size_t bytes, const strata_device& device, const char* what) {
  if (device.type != STRATA_DEVICE_HOST) no_device(what);
  if (bytes != 0) std::memset(ptr, 0, bytes);
}

void synchronize(void*, const strata_device& device, const char* what) {
  if (device.type != STRATA_DEVICE_HOST) no_device(what);
}

}  // namespace strata::rt::cuda
