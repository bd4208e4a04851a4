// Double-precision references for the CPU kernel tests, written from the update rules
// (torch.optim.Adam / AdamW / SGD, Lion as in Chen et al. 2023 and DeepSpeed) rather than from the
// kernels, and rounding to f16 / bf16 from the value rather than from its bits.
//
// Every step's arithmetic is double. `T` is where parameters and state live between steps:
// double gives the exact trajectory; float gives the trajectory any fp32 optimizer must follow
// (its storage rounds every step), which is what the kernels' own arithmetic error is measured
// against. The two drift apart by fp32 storage alone: about 1e-6 relative after 1,000 Adam steps,
// several 1e-6 for Lion, whose equal-sized steps round the same way again and again.
#pragma once

#include "f16_reference.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace strata::test {

struct AdamSettings {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled = true;  // AdamW (true) or L2 in the gradient (false)
  bool bias_correction = true;
};

struct SgdSettings {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};

struct LionSettings {
  double lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0.0;
};

// In every step(), `grad` is already multiplied by the step's grad_scale.
template <class T>
class AdamReference {
 public:
  explicit AdamReference(const AdamSettings& s) : s_(s) {}
  void step(std::vector<T>& p, const std::vector<double>& grad, double lr_factor,
            unsigned long step) {
    if (m_.empty()) m_.assign(p.size(), T(0)), v_.assign(p.size(), T(0));
    const double rate = s_.lr * lr_factor, t = static_cast<double>(step);
    const double bc1 = s_.bias_correction ? 1.0 - std::pow(s_.beta1, t) : 1.0;
    const double bc2 = s_.bias_correction ? 1.0 - std::pow(s_.beta2, t) : 1.0;
    for (size_t i = 0; i < p.size(); ++i) {
      double x = p[i], g = grad[i];
      if (s_.decoupled) {
        x *= 1.0 - rate * s_.weight_decay;
      } else {
        g += s_.weight_decay * x;
      }
      const double m = s_.beta1 * m_[i] + (1.0 - s_.beta1) * g;
      const double v = s_.beta2 * v_[i] + (1.0 - s_.beta2) * g * g;
      p[i] = static_cast<T>(x - rate / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + s_.eps));
      m_[i] = static_cast<T>(m), v_[i] = static_cast<T>(v);
    }
  }

 private:
  AdamSettings s_;
  std::vector<T> m_, v_;
};

template <class T>
class SgdReference {
 public:
  explicit SgdReference(const SgdSettings& s) : s_(s) {}
  void step(std::vector<T>& p, const std::vector<double>& grad, double lr_factor) {
    if (buf_.empty()) buf_.assign(p.size(), T(0));
    for (size_t i = 0; i < p.size(); ++i) {
      double d = grad[i] + s_.weight_decay * p[i];
      if (s_.momentum != 0.0) {
        // torch: the buffer starts as the first d itself.
        const double b = first_ ? d : s_.momentum * buf_[i] + (1.0 - s_.dampening) * d;
        buf_[i] = static_cast<T>(b);
        d = s_.nesterov ? d + s_.momentum * b : b;
      }
      p[i] = static_cast<T>(p[i] - s_.lr * lr_factor * d);
    }
    first_ = false;
  }

 private:
  SgdSettings s_;
  std::vector<T> buf_;
  bool first_ = true;
};

template <class T>
class LionReference {
 public:
  explicit LionReference(const LionSettings& s) : s_(s) {}
  // c, whose sign is the update's direction: tests keep their data away from c == 0, where fp32
  // and double may disagree on the sign.
  double direction(size_t i, double grad) const {
    return s_.beta1 * (m_.empty() ? 0.0 : static_cast<double>(m_[i])) + (1.0 - s_.beta1) * grad;
  }
  void step(std::vector<T>& p, const std::vector<double>& grad, double lr_factor) {
    if (m_.empty()) m_.assign(p.size(), T(0));
    const double rate = s_.lr * lr_factor;
    for (size_t i = 0; i < p.size(); ++i) {
      const double c = direction(i, grad[i]);
      const double sign = c > 0 ? 1.0 : (c < 0 ? -1.0 : 0.0);
      p[i] = static_cast<T>(p[i] - rate * (sign + s_.weight_decay * p[i]));
      m_[i] = static_cast<T>(s_.beta2 * m_[i] + (1.0 - s_.beta2) * grad[i]);
    }
  }

 private:
  LionSettings s_;
  std::vector<T> m_;
};

// The f16 nearest to x (ties to even), as bits, rounded once from double (f16_reference.hpp).
inline uint16_t reference_f16_bits(double x) { return f16_nearest(x); }

inline double f16_value(uint16_t bits) { return static_cast<double>(f16_to_float(bits)); }

inline double bf16_value(uint16_t bits) {
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits) << 16));
}

// The bfloat16 nearest to x (ties to even), as bits, by comparing the distances to the bf16
// values around x: no bit tricks shared with the kernel.
inline uint16_t reference_bf16_bits(double x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xFFC0 : 0x7FC0;
  const auto truncated =
      static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(x)) >> 16);
  uint16_t best = truncated;
  for (int delta : {-1, 1}) {
    const auto other = static_cast<uint16_t>(truncated + delta);
    if ((other & 0x7F80) == 0x7F80 && (other & 0x7F) != 0) continue;  // a NaN pattern
    const double d_other = std::abs(bf16_value(other) - x), d_best = std::abs(bf16_value(best) - x);
    if (d_other < d_best || (d_other == d_best && (other & 1) == 0)) best = other;
  }
  // Half an ulp past the largest finite bf16 (0x1.fep127) or more: infinity.
  if (std::abs(x) >= 0x1.ffp127) best = std::signbit(x) ? 0xFF80 : 0x7F80;
  return best;
}

}  // namespace strata::test
