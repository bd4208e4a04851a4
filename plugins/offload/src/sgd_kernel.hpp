// SGD element loops (torch.optim.SGD semantics), fp32, one call per shard.
#pragma once

#include <cstddef>

namespace strata::offload {

// Per-step scalars, already combined from the config and the step arguments.
struct SgdScalars {
  float lr;            // configured lr * lr_factor
  float grad_scale;    // unscale/clip factor applied to the raw gradient first
  float weight_decay;  // L2: d = g + wd * p
  // buf = buf_keep * buf + grad_keep * d. On the first step the buffer must become d itself
  // (torch clones the gradient), so the caller passes buf_keep = 0 and grad_keep = 1; after that
  // buf_keep = momentum and grad_keep = 1 - dampening.
  float buf_keep;
  float grad_keep;
  float momentum;  // nesterov look-ahead: d = d + momentum * buf
};

// p -= lr * (g * grad_scale + wd * p)
void sgd_plain(float* param, const float* grad, std::size_t n, const SgdScalars& s);

// Momentum SGD with a buffer of n floats; `nesterov` picks the look-ahead update.
void sgd_momentum(float* param, const float* grad, float* buf, std::size_t n, const SgdScalars& s,
                  bool nesterov);

}  // namespace strata::offload
