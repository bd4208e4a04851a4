// Adam / AdamW element loop, fp32, one call per shard.
#pragma once

#include <cstddef>

namespace strata::offload {

// Per-step scalars. The bias corrections are computed in double by the caller and folded in here.
struct AdamScalars {
  float grad_scale;   // unscale/clip factor applied to the raw gradient first
  float l2_decay;     // adam_w_mode false: g += l2_decay * p (0 otherwise)
  float param_decay;  // adam_w_mode true: p -= lr * wd * p before the update (0 otherwise)
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float eps;
};

// exp_avg = b1*exp_avg + (1-b1)*g; exp_avg_sq = b2*exp_avg_sq + (1-b2)*g*g;
// p -= step_size * exp_avg / (sqrt(exp_avg_sq) * inv_sqrt_bc2 + eps)
void adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, std::size_t n,
                 const AdamScalars& s);

}  // namespace strata::offload
