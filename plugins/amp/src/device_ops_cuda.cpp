#include <cuda_runtime_api.h>

#include <cmath>
#include <string>
#include <strata_common/cuda/kernels.hpp>
#include <vector>

#include "device_ops.hpp"

namespace strata::amp {
namespace {

void check(int code, const std::string& what) {
  if (code == 0) return;
  sdk::fail(code == cudaErrorInvalidValue ? STRATA_ERR_INVALID_ARGUMENT : STRATA_ERR_INTERNAL,
            what + ": " + cuda::error_string(code));
}

}  // namespace

DeviceScratch::~DeviceScratch() {
  if (data_ != nullptr) host_.free(data_);
}

void* DeviceScratch::at_least(std::size_t bytes) {
  if (bytes <= bytes_ && data_ != nullptr) return data_;
  if (data_ != nullptr) host_.free(data_);
  data_ = nullptr;
  bytes_ = 0;
  data_ = host_.try_alloc_device(bytes, STRATA_MEM_OTHER);
  if (data_ == nullptr) {
    sdk::fail(STRATA_ERR_OUT_OF_MEMORY, "amp grad_stats: could not allocate " +
                                            std::to_string(bytes) +
                                            " bytes of device workspace through the runtime");
  }
  bytes_ = bytes;
  return data_;
}

void device_cast(const strata_buffer& src, const strata_buffer& dst, void* stream) {
  if (src.device.type != STRATA_DEVICE_CUDA || dst.device.type != STRATA_DEVICE_CUDA ||
      src.device.index != dst.device.index) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              "dst.device: strata_amp casts device buffers on one CUDA device only (src on "
              "device type " + std::to_string(src.device.type) + " index " +
                  std::to_string(src.device.index) + ", dst on device type " +
                  std::to_string(dst.device.type) + " index " + std::to_string(dst.device.index) +
                  ")");
  }
  const auto device_dtype = [](int32_t d) {
    return d == STRATA_F32 || d == STRATA_F16 || d == STRATA_BF16;
  };
  if (!device_dtype(src.dtype) || !device_dtype(dst.dtype) ||
      (src.dtype != STRATA_F32 && dst.dtype != STRATA_F32 && src.dtype != dst.dtype)) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string("dst.dtype: cannot cast ") +
                                          sdk::dtype_name(src.dtype) + " to " +
                                          sdk::dtype_name(dst.dtype) +
                                          " on a CUDA device; strata_amp casts between f32 and "
                                          "f16, bf16 there");
  }
  check(cuda::cast(src.data, static_cast<strata_dtype>(src.dtype), dst.data,
                   static_cast<strata_dtype>(dst.dtype), src.count, stream),
        "amp cast on CUDA device " + std::to_string(src.device.index));
}

GradStats device_grad_stats(std::span<const strata_shard> shards, DeviceScratch& scratch,
                            void* stream) {
  std::vector<cuda::DeviceTensor> tensors;
  tensors.reserve(shards.size());
  for (const strata_shard& s : shards) {
    if (s.count > 0) tensors.push_back({s.grad, s.count});
  }
  GradStats stats;
  if (tensors.empty()) return stats;
  const std::size_t work = cuda::grad_stats_workspace_bytes(tensors.data(), tensors.size());
  // The result first (16 bytes, aligned for the double), the partials after it.
  constexpr std::size_t kResult = 256;
  auto* base = static_cast<unsigned char*>(scratch.at_least(kResult + work));
  auto* out = reinterpret_cast<cuda::DeviceGradStats*>(base);
  check(cuda::grad_stats(tensors.data(), tensors.size(), STRATA_F32, base + kResult, out, stream),
        "amp grad_stats on the device");
  cuda::DeviceGradStats result{};
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(&result, out, sizeof result, cudaMemcpyDeviceToHost, s),
        "amp grad_stats: copying the result to the host");
  check(cudaStreamSynchronize(s), "amp grad_stats: waiting for the result");
  stats.sum_sq = result.sum_sq;
  // As the CPU pass: non-finite exactly when some element was (the kernel's flag says so too).
  stats.nonfinite = result.nonfinite != 0 || !std::isfinite(result.sum_sq);
  return stats;
}

}  // namespace strata::amp
