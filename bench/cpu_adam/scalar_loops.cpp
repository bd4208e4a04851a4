// Built with -fno-tree-vectorize (see CMakeLists.txt): one element per instruction, as the name
// says. -fno-math-errno keeps sqrt an instruction rather than a libm call, as in the kernels.
#include <cmath>

#include "bench_loops.hpp"

namespace strata::bench {

void scalar_adam(const offload::AdamScalars& s, float* __restrict p, const float* __restrict g,
                 float* __restrict m, float* __restrict v, std::size_t n) {
  const offload::AdamScalars c = s;  // a local copy: the stores cannot alias it
  for (std::size_t i = 0; i < n; ++i) {
    const float x = p[i];
    const float grad = g[i] * c.grad_scale + c.l2_decay * x;
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * grad;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = x - (c.param_decay * x + c.step_size * (mi / (std::sqrt(vi) * c.inv_sqrt_bc2 + c.eps)));
  }
}

void scalar_sgd(const offload::SgdScalars& s, float* __restrict p, const float* __restrict g,
                float* __restrict buf, std::size_t n) {
  const offload::SgdScalars c = s;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * c.grad_scale + c.weight_decay * p[i];
    const float b = c.buf_keep * buf[i] + c.grad_keep * d;
    buf[i] = b;
    p[i] -= c.lr * (c.nesterov ? d + c.momentum * b : b);
  }
}

void scalar_lion(const offload::LionScalars& s, float* __restrict p, const float* __restrict g,
                 float* __restrict m, std::size_t n) {
  const offload::LionScalars c = s;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = p[i], grad = g[i] * c.grad_scale;
    const float dir = c.beta1 * m[i] + c.one_minus_beta1 * grad;
    const float sign = dir > 0.0f ? 1.0f : (dir < 0.0f ? -1.0f : 0.0f);
    p[i] = x - (c.param_decay * x + c.lr * sign);
    m[i] = c.beta2 * m[i] + c.one_minus_beta2 * grad;
  }
}

}  // namespace strata::bench
