// The checker's only contact with CUDA: whether this machine has a device, device memory, a
// stream, and copies between host and device. cuda_memory.cpp implements it over the CUDA runtime
// (builds with STRATA_HAVE_CUDA); cuda_memory_none.cpp is its twin for builds without CUDA, where
// missing_device() says so and nothing else is ever reached. The checks call these and have no
// #if of their own (the runtime's device layer, runtime/src/device/cuda_device.hpp, is built the
// same way; it is the runtime's own, so the checker keeps this small one).
#pragma once

#include <cstddef>
#include <string>

namespace strata::plugin_check::cuda {

// Empty when this process can use a CUDA device, else why not, for a skip line: "no CUDA device
// on this machine (cudaGetDeviceCount: ...)", or that this checker was built without CUDA.
std::string missing_device();

// The calling thread's current CUDA device: the one a comm plugin selected at create
// (cudaSetDevice), 0 where it selected none.
int current_device();

// A stream of the checker's own on the current device, standing for the host's stream (the host
// table's cuda_stream()). Non-blocking, so that nothing orders it with the legacy default stream
// behind the plugin's back: a plugin that ignores the host's stream reads inputs not yet copied.
// Throws std::runtime_error with CUDA's answer.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* handle() const { return handle_; }  // a cudaStream_t

 private:
  void* handle_ = nullptr;
};

// `bytes` of device memory on the current device (cudaMalloc), freed with the object. Throws
// std::runtime_error with CUDA's answer.
class DeviceBytes {
 public:
  explicit DeviceBytes(size_t bytes);
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Enqueues a copy of `bytes` from host `src` to device `dst` on `stream` and returns: work the
// plugin orders after the stream's sees them, as the runtime's host enqueues its backward.
void copy_to_device(void* dst, const void* src, size_t bytes, void* stream);
// Enqueues a copy from device `src` to host `dst` on `stream` and waits for the stream, so the
// copy reads what the plugin ordered before the host's later work. Both throw std::runtime_error.
void copy_to_host(void* dst, const void* src, size_t bytes, void* stream);

}  // namespace strata::plugin_check::cuda
