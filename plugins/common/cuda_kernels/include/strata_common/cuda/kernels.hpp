// strata_common/cuda/kernels.hpp — the launch API of the CUDA kernels the tree's plugins share
// (library strata_common_cuda_kernels in plugins/common, built when STRATA_HAVE_CUDA, never
// installed, like this header). Plain C++: no CUDA header is needed to include it, so plugin code
// compiled by g++ can call the kernels.
//
// Conventions, for every function below:
//  - Pointers to data are device pointers (or managed memory); only the tensor tables and the
//    scalar structs are read on the host, during the call.
//  - `stream` is a cudaStream_t passed as void*; nullptr is the legacy default stream. Every
//    function only enqueues work: it returns before the kernels have run, and the caller orders
//    reads of the results after the stream (event, cudaStreamSynchronize, ...).
//  - The return value is a cudaError_t as an int: 0 (cudaSuccess) when the work was enqueued,
//    cudaErrorInvalidValue (1) for bad arguments (an unsupported dtype, a NULL pointer for a
//    non-empty array), else the launch's error. error_string() names it. Errors of the kernels
//    themselves surface, as always in CUDA, at the next synchronising call.
//  - Dtypes are the ABI's strata_dtype: STRATA_F32, STRATA_F16, STRATA_BF16. Arithmetic is in
//    fp32 (sums of squares in fp64) whatever the storage dtype.
//  - Results never depend on the launch configuration or on timing: no float atomics.
//
// The per-element arithmetic lives in strata_common/element_math.hpp (host and device alike), and
// reproduces the CPU plugins: the casts are bit for bit those of the amp plugin
// (plugins/amp/src/kernels.hpp scalar::, = strata/half.hpp narrowing; widening quiets a
// signalling nan), the optimizers those of the offload plugin (plugins/offload/src/
// optimizer_kernels.cpp, one fused multiply-add wherever it uses MulAdd).
#pragma once

#include <strata/plugin_api.h>
#include <strata_common/optimizer_scalars.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace strata::cuda {

// ---- errors ----------------------------------------------------------------------------------

// cudaGetErrorString(code): never NULL.
const char* error_string(int code);

// ---- casts and elementwise helpers -----------------------------------------------------------

// dst[i] = src[i] converted, for i < n. Supported: f32 -> f16/bf16 (round to nearest even,
// overflow to inf, nan kept as a quiet nan with its sign and top payload bits), f16/bf16 -> f32
// (exact; a signalling nan becomes quiet), and any dtype to itself (a device-to-device copy).
// f16 <-> bf16 is refused (cudaErrorInvalidValue). src and dst must not overlap unless they are
// the same pointer with the same dtype.
int cast(const void* src, strata_dtype src_dtype, void* dst, strata_dtype dst_dtype,
         std::size_t n, void* stream);

// dst[i] = dst[i] + src[i] for i < n: both read as f32, added in f32, the sum rounded to
// dst_dtype. Any of f32/f16/bf16 for either side (e.g. f16 gradients into an f32 buffer).
int accumulate(void* dst, strata_dtype dst_dtype, const void* src, strata_dtype src_dtype,
               std::size_t n, void* stream);

// x[i] = x[i] * s for i < n, in f32, rounded to dtype.
int scale(void* x, strata_dtype dtype, float s, std::size_t n, void* stream);

// Zeroes `bytes` bytes at x: cudaMemsetAsync(x, 0, bytes, stream) (0 bits are +0.0 in every
// dtype). Here so that plain C++ callers need no CUDA header for it.
int fill_zero(void* x, std::size_t bytes, void* stream);

// ---- multi-tensor overflow check and squared norm ---------------------------------------------

// One device array of `count` elements.
struct DeviceTensor {
  const void* data;
  std::size_t count;
};

// What grad_stats writes (device memory, 16 bytes): the amp plugin's GradStats.
struct DeviceGradStats {
  double sum_sq;      // sum over every element of every tensor of double(x)^2
  int32_t nonfinite;  // 1 when some element is inf or nan (then sum_sq is not finite), else 0
  int32_t reserved;   // written 0
};

// Elements per partial sum: each run of kStatsChunk elements of one tensor (the last run of a
// tensor may be shorter) gets one fp64 partial in the workspace, as the amp plugin's kSumBlock.
inline constexpr std::size_t kStatsChunk = std::size_t{1} << 16;

// Bytes of device workspace grad_stats needs for these tensors (16 per chunk; 0 for no elements).
std::size_t grad_stats_workspace_bytes(const DeviceTensor* tensors, std::size_t n_tensors);

// Reads every element of every tensor (all of `dtype`) once, in as few launches as the tensor
// table allows (one per 128 tensors or 2048 chunks; apex's multi_tensor_apply), writing one
// partial per chunk into `workspace`, then one small kernel adds the partials in chunk order
// and writes *out. Deterministic: the same data gives the same bits on every run and launch.
// The sum equals the amp plugin's grad_stats to fp64 rounding (the order of the additions
// differs: it is a block reduction here, 16 lanes there); the flag equals it exactly.
// `tensors` is a host array; workspace holds at least grad_stats_workspace_bytes(); out is a
// device pointer. Zero tensors (or elements): *out = {0, 0}.
int grad_stats(const DeviceTensor* tensors, std::size_t n_tensors, strata_dtype dtype,
               void* workspace, DeviceGradStats* out, void* stream);

// ---- fused optimizers over many tensors -------------------------------------------------------
//
// One pass per element: read the gradient (grad_dtype f32/f16/bf16) times grad_scale, update the
// state and the fp32 master in place, and, where a tensor's `model_copy` is not NULL, write the
// new parameter once more rounded to model_dtype (STRATA_F16 or STRATA_BF16; ignored when no
// tensor has a copy). Tables are host arrays of any length (split into launches internally).
// The scalar structs, and the make_* helpers that form them from the hyperparameters, are the
// ones the offload plugin's CPU kernels use (strata_common/optimizer_scalars.hpp).
using common::optim::AdamScalars;
using common::optim::SgdScalars;
using common::optim::LionScalars;
using common::optim::AdamHyper;
using common::optim::SgdHyper;
using common::optim::LionHyper;
using common::optim::make_adam_scalars;
using common::optim::make_sgd_scalars;
using common::optim::make_lion_scalars;

// One tensor's arrays, `count` elements each (device pointers).
struct AdamTensor {
  float* param;  // fp32 master, updated in place
  const void* grad;
  float* exp_avg;
  float* exp_avg_sq;
  void* model_copy;  // NULL: no copy-out for this tensor
  std::size_t count;
};
struct SgdTensor {
  float* param;
  const void* grad;
  float* momentum_buffer;  // NULL: plain SGD for this tensor (no momentum this step)
  void* model_copy;
  std::size_t count;
};
struct LionTensor {
  float* param;
  const void* grad;
  float* exp_avg;
  void* model_copy;
  std::size_t count;
};

int adam_step(const AdamScalars& s, const AdamTensor* tensors, std::size_t n_tensors,
              strata_dtype grad_dtype, strata_dtype model_dtype, void* stream);
int sgd_step(const SgdScalars& s, const SgdTensor* tensors, std::size_t n_tensors,
             strata_dtype grad_dtype, strata_dtype model_dtype, void* stream);
int lion_step(const LionScalars& s, const LionTensor* tensors, std::size_t n_tensors,
              strata_dtype grad_dtype, strata_dtype model_dtype, void* stream);

}  // namespace strata::cuda
