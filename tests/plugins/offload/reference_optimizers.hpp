// Independent double-precision reference optimizers, written from the PyTorch documentation's
// update rules (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW), one element at a time.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace strata::test {

struct ReferenceSgd {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;

  // `grad` is already multiplied by the step's grad_scale.
  void step(std::vector<double>& p, const std::vector<double>& grad, double lr_factor) {
    if (buf_.empty()) buf_.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = grad[i] + weight_decay * p[i];
      if (momentum != 0.0) {
        buf_[i] = first_ ? d : momentum * buf_[i] + (1.0 - dampening) * d;
        d = nesterov ? d + momentum * buf_[i] : buf_[i];
      }
      p[i] -= lr * lr_factor * d;
    }
    first_ = false;
  }

 private:
  std::vector<double> buf_;
  bool first_ = true;
};

struct ReferenceAdam {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled = true;  // AdamW (true) or L2 in the gradient (false)
  bool bias_correction = true;

  void step(std::vector<double>& p, const std::vector<double>& grad, double lr_factor,
            unsigned long step) {
    if (m_.empty()) {
      m_.assign(p.size(), 0.0);
      v_.assign(p.size(), 0.0);
    }
    const double rate = lr * lr_factor;
    const double t = static_cast<double>(step);
    const double bc1 = bias_correction ? 1.0 - std::pow(beta1, t) : 1.0;
    const double bc2 = bias_correction ? 1.0 - std::pow(beta2, t) : 1.0;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) {
        p[i] *= 1.0 - rate * weight_decay;
      } else {
        g += weight_decay * p[i];
      }
      m_[i] = beta1 * m_[i] + (1.0 - beta1) * g;
      v_[i] = beta2 * v_[i] + (1.0 - beta2) * g * g;
      const double denom = std::sqrt(v_[i]) / std::sqrt(bc2) + eps;
      p[i] -= rate / bc1 * m_[i] / denom;
    }
  }

 private:
  std::vector<double> m_, v_;
};

}  // namespace strata::test
