// The runtime's only contact with CUDA: device memory, copies and memsets that work whichever side
// a pointer is on, and stream synchronisation. cuda_device.cpp implements it over the CUDA runtime
// (builds with STRATA_HAVE_CUDA); cuda_device_none.cpp is its twin for builds without CUDA, where
// available() is false and every call that would touch a device throws. The rest of the runtime
// calls these and has no #if of its own.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <string>

namespace strata::rt::cuda {

// Whether this libstrata was built with CUDA (not whether a device is present).
bool built_with_cuda();
// Why device memory cannot be used in this build: for messages ("this libstrata was built without
// CUDA ..."). Empty when built_with_cuda().
const char* without_cuda_reason();

// cudaMalloc of `bytes` on device `ordinal` (cudaSetDevice first). nullptr on failure, with
// *why saying what CUDA answered (or why this build has no CUDA).
void* device_alloc(int ordinal, size_t bytes, std::string* why);
// cudaFree; nullptr is fine.
void device_free(void* ptr);

// Copies `bytes` between any two of host memory and `device`'s memory (`device` says where the
// device-side pointer lives; HOST: both are host pointers, a memcpy). Synchronous. Throws
// strata::rt::Error naming `what` on a CUDA failure.
void copy(void* dst, const void* src, size_t bytes, const strata_device& device, const char* what);
// As copy(), in order on `stream` (a cudaStream_t; nullptr: the legacy default stream): after the
// work already there, and finished (the stream synchronised) when it returns.
void copy_on(void* dst, const void* src, size_t bytes, const strata_device& device, void* stream,
             const char* what);
// The calling thread's current CUDA device (cudaGetDevice); 0 where it cannot say.
int current_device();
// Zeroes `bytes` at `ptr` in `device`'s memory (HOST: memset). Synchronous; throws like copy().
void zero(void* ptr, size_t bytes, const strata_device& device, const char* what);
// Waits for the work enqueued on `stream` (a cudaStream_t; nullptr: the legacy default stream) on
// `device`. Throws like copy().
void synchronize(void* stream, const strata_device& device, const char* what);

}  // namespace strata::rt::cuda
