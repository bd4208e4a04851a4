// The fused Adam loop: one pass per element, no branches, so that it vectorises (this file is
// built with -fno-math-errno so that sqrt becomes a vector instruction rather than a libm call).
#include "adam_kernel.hpp"

#include <cmath>

namespace strata::offload {

void adam_update(float* __restrict p, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::size_t n, const AdamScalars& s) {
  // Locals, not s.field: stores through the float pointers could otherwise alias `s`.
  const float gs = s.grad_scale, l2 = s.l2_decay, decay = s.param_decay;
  const float b1 = s.beta1, c1 = s.one_minus_beta1, b2 = s.beta2, c2 = s.one_minus_beta2;
  const float step_size = s.step_size, inv_sqrt_bc2 = s.inv_sqrt_bc2, eps = s.eps;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = p[i];
    const float grad = g[i] * gs + l2 * x;
    const float mi = b1 * m[i] + c1 * grad;
    const float vi = b2 * v[i] + c2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    // Decoupled decay as x - (lr*wd)*x rather than x*(1 - lr*wd): 1 - lr*wd rounded to fp32
    // keeps few digits of lr*wd, and that error has the same sign every step (DeepSpeed's CPU
    // Adam writes it this way too).
    p[i] = x - decay * x - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

}  // namespace strata::offload
