// The double-precision reference optimizers the offload checks compare with, one element at a
// time, written from PyTorch's definitions (torch.optim.Adam, AdamW, SGD; Lion as in Chen et al.
// 2023 and lucidrains/lion-pytorch), which DeepSpeed's optimizer blocks follow:
//   Adam   g += wd*p (L2, DeepSpeed adam_w_mode false)       m = b1*m + (1-b1)*g
//   AdamW  p *= 1 - lr*wd (decoupled)                         v = b2*v + (1-b2)*g^2
//          p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)   (eps outside the sqrt)
//   SGD    d = g + wd*p; with momentum: buf = d on the first step, else mom*buf + d
//          (dampening 0); d = nesterov ? d + mom*buf : buf;   p -= lr*d
//   Lion   c = b1*m + (1-b1)*g; p -= lr*(sign(c) + wd*p); m = b2*m + (1-b2)*g
// `lr` is the step's learning rate times lr_factor; b1 (SGD: mom) and b2 are the step's (ABI 1.6
// step args, or the configured ones), and Adam's bias correction uses the step's b1 and b2.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::plugin_check {

enum class OptimizerKind { adam, sgd, lion };

struct Hyper {
  OptimizerKind kind = OptimizerKind::adam;
  double lr = 1e-3;
  double beta1 = 0.9;  // Adam's and Lion's beta1; SGD's momentum (0: none)
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // AdamW
  bool nesterov = false;
};

// This step's values (the configured ones unless the step args replace them).
struct StepHyper {
  uint64_t t;
  double lr;  // times lr_factor
  double beta1;
  double beta2;
};

class ReferenceOptimizer {
 public:
  ReferenceOptimizer(const Hyper& h, std::vector<double> params) : h_(h), p_(std::move(params)) {
    for (size_t s = 0; s < slot_names().size(); ++s) slots_.emplace_back(p_.size(), 0.0);
  }

  // PyTorch's state names, in the in-tree plugin's order (a plugin may list them in any order).
  std::vector<std::string> slot_names() const {
    switch (h_.kind) {
      case OptimizerKind::adam:
        return {"exp_avg", "exp_avg_sq"};
      case OptimizerKind::sgd:
        return h_.beta1 > 0 ? std::vector<std::string>{"momentum_buffer"}
                            : std::vector<std::string>{};
      case OptimizerKind::lion:
        return {"exp_avg"};
    }
    return {};
  }

  std::vector<double>& params() { return p_; }
  std::vector<double>& slot(size_t s) { return slots_[s]; }
  // A state written from elsewhere (a checkpoint): SGD's buffer is then live.
  void state_loaded() { first_ = false; }

  // `g` is the true gradient (the plugin's raw gradient times grad_scale).
  void step(const std::vector<double>& g, const StepHyper& k) {
    switch (h_.kind) {
      case OptimizerKind::adam:
        adam(g, k);
        break;
      case OptimizerKind::sgd:
        sgd(g, k);
        break;
      case OptimizerKind::lion:
        lion(g, k);
        break;
    }
    first_ = false;
  }

 private:
  void adam(const std::vector<double>& grad, const StepHyper& k) {
    const double t = static_cast<double>(k.t);
    const double bc1 = 1.0 - std::pow(k.beta1, t), bc2 = 1.0 - std::pow(k.beta2, t);
    std::vector<double>& m = slots_[0];
    std::vector<double>& v = slots_[1];
    for (size_t i = 0; i < p_.size(); ++i) {
      double g = grad[i];
      if (h_.decoupled) {
        p_[i] *= 1.0 - k.lr * h_.weight_decay;
      } else {
        g += h_.weight_decay * p_[i];
      }
      m[i] = k.beta1 * m[i] + (1.0 - k.beta1) * g;
      v[i] = k.beta2 * v[i] + (1.0 - k.beta2) * g * g;
      p_[i] -= k.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + h_.eps);
    }
  }

  void sgd(const std::vector<double>& grad, const StepHyper& k) {
    for (size_t i = 0; i < p_.size(); ++i) {
      double d = grad[i] + h_.weight_decay * p_[i];
      if (!slots_.empty()) {
        double& buf = slots_[0][i];
        buf = first_ ? d : k.beta1 * buf + d;
        d = h_.nesterov ? d + k.beta1 * buf : buf;
      }
      p_[i] -= k.lr * d;
    }
  }

  void lion(const std::vector<double>& grad, const StepHyper& k) {
    std::vector<double>& m = slots_[0];
    for (size_t i = 0; i < p_.size(); ++i) {
      const double c = k.beta1 * m[i] + (1.0 - k.beta1) * grad[i];
      const double sign = c > 0 ? 1.0 : (c < 0 ? -1.0 : 0.0);
      p_[i] -= k.lr * (sign + h_.weight_decay * p_[i]);
      m[i] = k.beta2 * m[i] + (1.0 - k.beta2) * grad[i];
    }
  }

  Hyper h_;
  std::vector<double> p_;
  std::vector<std::vector<double>> slots_;
  bool first_ = true;
};

}  // namespace strata::plugin_check
