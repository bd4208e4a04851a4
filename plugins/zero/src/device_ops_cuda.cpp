#include "device_ops.hpp"

#include <cuda_runtime_api.h>
#include <strata_common/cuda/kernels.hpp>
#include <strata/plugin.hpp>

#include <string>

namespace strata::zero::device_ops {
namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

void check(int code, const char* what, const char* call) {
  if (code == 0) return;
  sdk::fail(STRATA_ERR_INTERNAL, std::string(what) + ": " + call + " failed: " +
                                     cuda::error_string(code));
}

}  // namespace

void copy(void* dst, const void* src, size_t bytes, void* stream, const char* what) {
  if (bytes == 0 || dst == src) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), what,
        "cudaMemcpyAsync");
}

void fill_bytes(void* dst, unsigned char value, size_t bytes, void* stream, const char* what) {
  if (bytes == 0) return;
  check(cudaMemsetAsync(dst, value, bytes, as_stream(stream)), what, "cudaMemsetAsync");
}

void add(float* dst, const float* src, uint64_t count, void* stream, const char* what) {
  if (count == 0) return;
  check(cuda::accumulate(dst, STRATA_F32, src, STRATA_F32, count, stream), what,
        "strata::cuda::accumulate");
}

void synchronize(void* stream, const char* what) {
  check(cudaStreamSynchronize(as_stream(stream)), what, "cudaStreamSynchronize");
}

}  // namespace strata::zero::device_ops
