// cuda_memory.hpp over the CUDA runtime API (compiled only with STRATA_HAVE_CUDA).
#include "cuda_memory.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace strata::plugin_check::cuda {
namespace {

void check(cudaError_t code, const std::string& what) {
  if (code == cudaSuccess) return;
  cudaGetLastError();  // clear a failure that is not sticky, so the next call does not report it
  throw std::runtime_error(what + ": " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

}  // namespace

std::string missing_device() {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device on this machine (cudaGetDeviceCount: ") +
           cudaGetErrorName(counted) + ": " + cudaGetErrorString(counted) + ")";
  }
  if (count == 0) return "no CUDA device on this machine (cudaGetDeviceCount: 0 devices)";
  return {};
}

int current_device() {
  int ordinal = 0;
  return cudaGetDevice(&ordinal) == cudaSuccess ? ordinal : 0;
}

Stream::Stream() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  handle_ = stream;
}

Stream::~Stream() { cudaStreamDestroy(static_cast<cudaStream_t>(handle_)); }

DeviceBytes::DeviceBytes(size_t bytes) {
  check(cudaMalloc(&data_, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" +
                                       std::to_string(current_device()));
}

DeviceBytes::~DeviceBytes() { cudaFree(data_); }

void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync of the inputs to the device");
}

void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync of the results to the host");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize after copying the results back");
}

}  // namespace strata::plugin_check::cuda
