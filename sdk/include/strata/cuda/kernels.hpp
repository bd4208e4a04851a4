// strata/cuda/kernels.hpp — the launch API of the SDK's CUDA kernels (library Strata::cuda_kernels,
// built when STRATA_HAVE_CUDA). Plain C++: no CUDA header is needed to include it, so plugin code
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
// The per-element arithmetic lives in strata/cuda/element_math.hpp (host and device alike), and
// reproduces the CPU plugins: the casts are bit for bit those of the amp plugin
// (plugins/amp/src/kernels.hpp scalar::, = strata/half.hpp narrowing; widening quiets a
// signalling nan), the optimizers those of the offload plugin (plugins/offload/src/
// optimizer_kernels.cpp, one fused multiply-add wherever it uses MulAdd).
#pragma once

#include <strata/plugin_api.h>

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
// The scalar structs are those of the offload plugin's kernels, field for field; the make_*
// helpers below compute them from the hyperparameters exactly as the offload plugin does.

// Adam / AdamW per-step scalars (offload's AdamScalars).
struct AdamScalars {
  float grad_scale;   // unscale/clip factor applied to the raw gradient first
  float l2_decay;     // Adam (L2): g += l2_decay * p (0 for AdamW)
  float param_decay;  // AdamW (decoupled): p -= lr * wd * p (0 for Adam)
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float eps;
};

// SGD (torch.optim.SGD) per-step scalars (offload's SgdScalars).
struct SgdScalars {
  float lr;            // the step's lr (times any lr factor)
  float grad_scale;    // unscale/clip factor applied to the raw gradient first
  float weight_decay;  // L2: d = g * grad_scale + wd * p
  // buf = buf_keep * buf + grad_keep * d. On the first step the buffer becomes d itself (torch
  // clones the gradient): buf_keep = 0, grad_keep = 1; after that buf_keep = momentum,
  // grad_keep = 1 - dampening.
  float buf_keep;
  float grad_keep;
  float momentum;  // nesterov look-ahead: update = d + momentum * buf
  bool nesterov;
};

// Lion per-step scalars (offload's LionScalars): c = b1*m + (1-b1)*g;
// p -= lr*sign(c) + lr*wd*p; m = b2*m + (1-b2)*g.
struct LionScalars {
  float grad_scale;
  float lr;
  float param_decay;  // lr * weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
};

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

// ---- the scalars from the hyperparameters (host, as plugins/offload/src/optimizer.cpp) --------

struct AdamHyper {
  double lr;     // the step's lr, lr factor applied
  double beta1;  // the step's beta1 (a schedule may change it; the bias correction uses it)
  double beta2;
  double eps;
  double weight_decay;
  bool decoupled_weight_decay;  // true: AdamW
  bool bias_correction;
};

// `step` is 1-based. Scalars are formed in double and rounded once: 1 - beta2^t keeps too few
// digits in float for beta2 = 0.999.
inline AdamScalars make_adam_scalars(const AdamHyper& h, uint64_t step, double grad_scale) {
  const double t = static_cast<double>(step);
  const double bc1 = h.bias_correction ? 1.0 - std::pow(h.beta1, t) : 1.0;
  const double bc2 = h.bias_correction ? 1.0 - std::pow(h.beta2, t) : 1.0;
  AdamScalars s{};
  s.grad_scale = static_cast<float>(grad_scale);
  s.l2_decay = h.decoupled_weight_decay ? 0.0f : static_cast<float>(h.weight_decay);
  s.param_decay = h.decoupled_weight_decay ? static_cast<float>(h.lr * h.weight_decay) : 0.0f;
  s.beta1 = static_cast<float>(h.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  s.step_size = static_cast<float>(h.lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  s.eps = static_cast<float>(h.eps);
  return s;
}

struct SgdHyper {
  double lr;
  double momentum;  // the step's momentum; 0: pass NULL momentum buffers
  double dampening;
  double weight_decay;
  bool nesterov;
};

// buffer_live: the momentum buffers hold state from an earlier step. False on the first step
// with momentum (the buffer then becomes the gradient, as in torch), true after it.
inline SgdScalars make_sgd_scalars(const SgdHyper& h, double grad_scale, bool buffer_live) {
  SgdScalars s{};
  s.lr = static_cast<float>(h.lr);
  s.grad_scale = static_cast<float>(grad_scale);
  s.weight_decay = static_cast<float>(h.weight_decay);
  s.buf_keep = buffer_live ? static_cast<float>(h.momentum) : 0.0f;
  s.grad_keep = buffer_live ? static_cast<float>(1.0 - h.dampening) : 1.0f;
  s.momentum = static_cast<float>(h.momentum);
  s.nesterov = h.nesterov;
  return s;
}

struct LionHyper {
  double lr;
  double beta1;
  double beta2;
  double weight_decay;
};

inline LionScalars make_lion_scalars(const LionHyper& h, double grad_scale) {
  LionScalars s{};
  s.grad_scale = static_cast<float>(grad_scale);
  s.lr = static_cast<float>(h.lr);
  s.param_decay = static_cast<float>(h.lr * h.weight_decay);
  s.beta1 = static_cast<float>(h.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  return s;
}

}  // namespace strata::cuda
