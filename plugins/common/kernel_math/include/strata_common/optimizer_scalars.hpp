// strata_common/optimizer_scalars.hpp — the per-step scalars of the fused optimizers (Adam/AdamW,
// SGD, Lion), and how they are formed from the step's hyperparameters: one definition for the
// offload plugin's CPU kernels (plugins/offload/src/optimizer_kernels.hpp) and the CUDA kernels
// (strata_common/cuda/kernels.hpp), so that both round the same doubles to the same floats.
// Library strata_common_kernel_math (plugins/common, header-only, never installed).
#pragma once

#include <cmath>
#include <cstdint>

namespace strata::common::optim {

// Adam / AdamW per-step scalars.
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

// SGD (torch.optim.SGD) per-step scalars.
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

// Lion per-step scalars: c = b1*m + (1-b1)*g; p -= lr*sign(c) + lr*wd*p; m = b2*m + (1-b2)*g.
struct LionScalars {
  float grad_scale;
  float lr;
  float param_decay;  // lr * weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
};

// ---- the scalars from the hyperparameters, in double and rounded once to float ------------------

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

}  // namespace strata::common::optim
