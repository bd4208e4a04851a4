// SGD loops. Scalars are copied into locals and pointers are __restrict so that the compiler can
// keep everything in registers and vectorise the branch-free loop bodies.
#include "sgd_kernel.hpp"

namespace strata::offload {
namespace {

template <bool kNesterov>
void momentum_loop(float* __restrict p, const float* __restrict g, float* __restrict buf,
                   std::size_t n, const SgdScalars& s) {
  const float lr = s.lr, gs = s.grad_scale, wd = s.weight_decay;
  const float buf_keep = s.buf_keep, grad_keep = s.grad_keep, momentum = s.momentum;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * gs + wd * p[i];
    const float b = buf_keep * buf[i] + grad_keep * d;
    buf[i] = b;
    const float update = kNesterov ? d + momentum * b : b;
    p[i] -= lr * update;
  }
}

}  // namespace

void sgd_plain(float* __restrict p, const float* __restrict g, std::size_t n, const SgdScalars& s) {
  const float lr = s.lr, gs = s.grad_scale, wd = s.weight_decay;
  for (std::size_t i = 0; i < n; ++i) {
    p[i] -= lr * (g[i] * gs + wd * p[i]);
  }
}

void sgd_momentum(float* param, const float* grad, float* buf, std::size_t n, const SgdScalars& s,
                  bool nesterov) {
  if (nesterov) {
    momentum_loop<true>(param, grad, buf, n, s);
  } else {
    momentum_loop<false>(param, grad, buf, n, s);
  }
}

}  // namespace strata::offload
