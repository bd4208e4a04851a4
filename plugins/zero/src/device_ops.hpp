// The CUDA side of zero's buffer operations (device_memory.hpp calls these when the job's
// parameters are in device memory). Two builds of one interface: device_ops_cuda.cpp (cudart and
// the shared CUDA kernels, when STRATA_HAVE_CUDA) and device_ops_none.cpp, which fails every call with
// "built without CUDA", so that a device job on a CPU-only build stops with a message.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>

namespace strata::zero::device_ops {

// Every operation is enqueued on `stream` (a cudaStream_t; nullptr: the legacy default stream)
// and throws sdk::Error naming `what` when CUDA refuses it.
// Any direction (host or device pointers on either side; unified addressing tells them apart).
void copy(void* dst, const void* src, size_t bytes, void* stream, const char* what);
void fill_bytes(void* dst, unsigned char value, size_t bytes, void* stream, const char* what);
// dst[i] += src[i] in fp32.
void add(float* dst, const float* src, uint64_t count, void* stream, const char* what);
// Waits for everything enqueued on the stream so far.
void synchronize(void* stream, const char* what);

}  // namespace strata::zero::device_ops
