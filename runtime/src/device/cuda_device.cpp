// cuda_device.hpp over the CUDA runtime API (this file is compiled only with STRATA_HAVE_CUDA).
#include "device/cuda_device.hpp"

#include "error.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

namespace strata::rt::cuda {
namespace {

[[noreturn]] void fail(const char* what, const char* call, cudaError_t code) {
  throw Error(STRATA_ERR_INTERNAL,
              std::string(what) + ": " + call + " failed: " + cudaGetErrorString(code));
}

void select(const strata_device& device, const char* what) {
  const cudaError_t code = cudaSetDevice(device.index);
  if (code != cudaSuccess) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                std::string(what) + ": cannot use cuda:" + std::to_string(device.index) + ": " +
                    cudaGetErrorString(code));
  }
}

}  // namespace

bool built_with_cuda() { return true; }
const char* without_cuda_reason() { return ""; }

void* device_alloc(int ordinal, size_t bytes, std::string* why) {
  cudaError_t code = cudaSetDevice(ordinal);
  void* ptr = nullptr;
  if (code == cudaSuccess) code = cudaMalloc(&ptr, bytes == 0 ? 1 : bytes);
  if (code != cudaSuccess) {
    if (why != nullptr) {
      *why = "cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" +
             std::to_string(ordinal) + ": " + cudaGetErrorString(code);
    }
    cudaGetLastError();  // clear the sticky error of a failed call that is not fatal
    return nullptr;
  }
  return ptr;
}

void device_free(void* ptr) {
  if (ptr != nullptr) cudaFree(ptr);
}

void copy(void* dst, const void* src, size_t bytes, const strata_device& device, const char* what) {
  if (bytes == 0) return;
  if (device.type == STRATA_DEVICE_HOST) {
    std::memcpy(dst, src, bytes);
    return;
  }
  select(device, what);
  // Unified addressing: the CUDA runtime tells host from device pointers itself.
  const cudaError_t code = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (code != cudaSuccess) fail(what, "cudaMemcpy", code);
}

void copy_on(void* dst, const void* src, size_t bytes, const strata_device& device, void* stream,
             const char* what) {
  if (bytes == 0) return;
  select(device, what);
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t code = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
  if (code != cudaSuccess) fail(what, "cudaMemcpyAsync", code);
  code = cudaStreamSynchronize(s);
  if (code != cudaSuccess) fail(what, "cudaStreamSynchronize", code);
}

int current_device() {
  int ordinal = 0;
  return cudaGetDevice(&ordinal) == cudaSuccess ? ordinal : 0;
}

void zero(void* ptr, size_t bytes, const strata_device& device, const char* what) {
  if (bytes == 0) return;
  if (device.type == STRATA_DEVICE_HOST) {
    std::memset(ptr, 0, bytes);
    return;
  }
  select(device, what);
  const cudaError_t code = cudaMemset(ptr, 0, bytes);
  if (code != cudaSuccess) fail(what, "cudaMemset", code);
}

void synchronize(void* stream, const strata_device& device, const char* what) {
  if (device.type == STRATA_DEVICE_HOST) return;
  select(device, what);
  const cudaError_t code = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (code != cudaSuccess) fail(what, "cudaStreamSynchronize", code);
}

}  // namespace strata::rt::cuda
