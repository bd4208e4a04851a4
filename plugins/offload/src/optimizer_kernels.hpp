// The CPU optimizer kernels: one fused pass per element (read the gradient times grad_scale,
// update the state and the fp32 master in place, optionally write the new parameter once more in
// half precision). Each call covers elements [begin, end) of one set of arrays on the calling
// thread; tiled_step.hpp spreads whole shards over a thread pool. The instruction set is the one
// cpu_isa.hpp selected at run time (AVX-512, AVX2 or the portable baseline).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::offload {

enum class HalfType : uint8_t { none, f16, bf16 };

// Where the updated parameters are written again, rounded to nearest even: element i of the
// arrays goes to element i of `data` (2 bytes each). Type none (or data NULL) writes nothing.
struct HalfCopy {
  void* data = nullptr;
  HalfType type = HalfType::none;
};

// Adam / AdamW per-step scalars. The bias corrections are computed in double by the caller.
struct AdamScalars {
  float grad_scale;   // unscale/clip factor applied to the raw gradient first
  float l2_decay;     // adam_w_mode false: g += l2_decay * p (0 otherwise)
  float param_decay;  // adam_w_mode true: p -= lr * wd * p (0 otherwise)
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float eps;
};

// SGD (torch.optim.SGD semantics) per-step scalars.
struct SgdScalars {
  float lr;            // configured lr * lr_factor
  float grad_scale;    // unscale/clip factor applied to the raw gradient first
  float weight_decay;  // L2: d = g * grad_scale + wd * p
  // buf = buf_keep * buf + grad_keep * d. On the first step the buffer must become d itself
  // (torch clones the gradient), so the caller passes buf_keep = 0 and grad_keep = 1; after that
  // buf_keep = momentum and grad_keep = 1 - dampening.
  float buf_keep;
  float grad_keep;
  float momentum;  // nesterov look-ahead: update = d + momentum * buf
  bool nesterov;
};

// Lion per-step scalars: c = b1*m + (1-b1)*g; p -= lr*sign(c) + lr*wd*p; m = b2*m + (1-b2)*g.
struct LionScalars {
  float grad_scale;
  float lr;           // configured lr * lr_factor
  float param_decay;  // lr * weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
};

// The arrays of one shard; `count` elements each.
struct AdamArrays {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  std::size_t count;
  HalfCopy copy;
};
struct SgdArrays {
  float* param;
  const float* grad;
  float* momentum_buffer;  // NULL: plain SGD without momentum
  std::size_t count;
  HalfCopy copy;
};
struct LionArrays {
  float* param;
  const float* grad;
  float* exp_avg;
  std::size_t count;
  HalfCopy copy;
};

// Elements [begin, end) of `a`, on the calling thread.
void adam_range(const AdamScalars& s, const AdamArrays& a, std::size_t begin, std::size_t end);
void sgd_range(const SgdScalars& s, const SgdArrays& a, std::size_t begin, std::size_t end);
void lion_range(const LionScalars& s, const LionArrays& a, std::size_t begin, std::size_t end);

// dst[i] = src[i] rounded to nearest even in `type` (f16 or bf16), for i in [0, n): the same
// conversion as the kernels' copy-out, for parameters that no step has written yet.
void convert_to_half(HalfType type, const float* src, void* dst, std::size_t n);

// The Highway target bit (HWY_AVX3, HWY_AVX2, HWY_EMU128, ...) of the code the kernels above
// dispatch to right now: asked of the dispatched code itself, so it shows the path really taken.
int64_t dispatched_target();

}  // namespace strata::offload
