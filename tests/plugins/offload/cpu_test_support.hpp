// Helpers for the CPU kernel tests: shard storage with optimizer state and a half copy, the
// per-step scalars derived from a reference's settings (as the offload plugin derives them from
// its config), and the error measures.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <random>
#include <vector>

#include <strata_common/cpu_isa.hpp>

#include "cpu_reference.hpp"
#include "optimizer_kernels.hpp"

namespace strata::test {

inline const char* half_name(offload::HalfType type) {
  switch (type) {
    case offload::HalfType::none:
      return "none";
    case offload::HalfType::f16:
      return "f16";
    case offload::HalfType::bf16:
      return "bf16";
  }
  return "?";
}

// fp32 shards with `state_per_element` zeroed state floats per element and, unless `half` is
// none, a 2-byte copy-out array each.
class ShardArrays {
 public:
  ShardArrays(const std::vector<std::size_t>& sizes, std::size_t state_per_element,
              offload::HalfType half)
      : half_(half) {
    for (std::size_t n : sizes) {
      shards_.push_back({std::vector<float>(n), std::vector<float>(n),
                         std::vector<float>(n * state_per_element),
                         std::vector<uint16_t>(half == offload::HalfType::none ? 0 : n)});
    }
  }

  // Fills the parameters with N(0, 1) and returns them in double, in shard order.
  std::vector<double> randomise_params(std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<double> out;
    for (Shard& s : shards_) {
      for (float& x : s.param) out.push_back(x = normal(rng));
    }
    return out;
  }

  // f(k, grad) for every gradient element, k counting across shards.
  template <class F>
  void for_each_grad(F&& f) {
    std::size_t k = 0;
    for (Shard& s : shards_) {
      for (float& g : s.grad) f(k++, g);
    }
  }

  std::vector<offload::AdamArrays> adam_arrays() {
    std::vector<offload::AdamArrays> out;
    for (Shard& s : shards_) {
      const std::size_t n = s.param.size();
      out.push_back(
          {s.param.data(), s.grad.data(), s.state.data(), s.state.data() + n, n, copy(s)});
    }
    return out;
  }
  std::vector<offload::SgdArrays> sgd_arrays(bool momentum) {
    std::vector<offload::SgdArrays> out;
    for (Shard& s : shards_) {
      out.push_back({s.param.data(), s.grad.data(), momentum ? s.state.data() : nullptr,
                     s.param.size(), copy(s)});
    }
    return out;
  }
  std::vector<offload::LionArrays> lion_arrays() {
    std::vector<offload::LionArrays> out;
    for (Shard& s : shards_) {
      out.push_back({s.param.data(), s.grad.data(), s.state.data(), s.param.size(), copy(s)});
    }
    return out;
  }

  std::vector<float> params() const {
    std::vector<float> out;
    for (const Shard& s : shards_) out.insert(out.end(), s.param.begin(), s.param.end());
    return out;
  }
  std::vector<uint16_t> half_copy() const {
    std::vector<uint16_t> out;
    for (const Shard& s : shards_) out.insert(out.end(), s.half.begin(), s.half.end());
    return out;
  }

 private:
  struct Shard {
    std::vector<float> param, grad, state;
    std::vector<uint16_t> half;
  };
  offload::HalfCopy copy(Shard& s) const {
    return {half_ == offload::HalfType::none ? nullptr : s.half.data(), half_};
  }

  offload::HalfType half_;
  std::vector<Shard> shards_;
};

// The per-step scalars as strata_offload's Optimizer derives them from its config.
inline offload::AdamScalars adam_scalars(const AdamSettings& r, unsigned long step,
                                         double grad_scale, double lr_factor) {
  const double lr = r.lr * lr_factor, t = static_cast<double>(step);
  const double bc1 = r.bias_correction ? 1.0 - std::pow(r.beta1, t) : 1.0;
  const double bc2 = r.bias_correction ? 1.0 - std::pow(r.beta2, t) : 1.0;
  offload::AdamScalars s{};
  s.grad_scale = static_cast<float>(grad_scale);
  s.l2_decay = r.decoupled ? 0.0f : static_cast<float>(r.weight_decay);
  s.param_decay = r.decoupled ? static_cast<float>(lr * r.weight_decay) : 0.0f;
  s.beta1 = static_cast<float>(r.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - r.beta1);
  s.beta2 = static_cast<float>(r.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - r.beta2);
  s.step_size = static_cast<float>(lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  s.eps = static_cast<float>(r.eps);
  return s;
}

inline offload::SgdScalars sgd_scalars(const SgdSettings& r, bool first_step, double grad_scale,
                                       double lr_factor) {
  offload::SgdScalars s{};
  s.lr = static_cast<float>(r.lr * lr_factor);
  s.grad_scale = static_cast<float>(grad_scale);
  s.weight_decay = static_cast<float>(r.weight_decay);
  s.buf_keep = first_step ? 0.0f : static_cast<float>(r.momentum);
  s.grad_keep = first_step ? 1.0f : static_cast<float>(1.0 - r.dampening);
  s.momentum = static_cast<float>(r.momentum);
  s.nesterov = r.nesterov;
  return s;
}

inline offload::LionScalars lion_scalars(const LionSettings& r, double grad_scale,
                                         double lr_factor) {
  const double lr = r.lr * lr_factor;
  offload::LionScalars s{};
  s.grad_scale = static_cast<float>(grad_scale);
  s.lr = static_cast<float>(lr);
  s.param_decay = static_cast<float>(lr * r.weight_decay);
  s.beta1 = static_cast<float>(r.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - r.beta1);
  s.beta2 = static_cast<float>(r.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - r.beta2);
  return s;
}

// ||p - ref|| / ||ref||, and per element |p - ref| / max(|ref|, 1) (a bare per-element relative
// error means nothing for elements passing near zero, where fp32's own rounding dominates).
struct Errors {
  double relative = 0.0;
  double worst_element = 0.0;
};

template <class T>
Errors compare(const std::vector<float>& p, const std::vector<T>& ref) {
  double diff2 = 0.0, ref2 = 0.0, worst = 0.0;
  for (std::size_t k = 0; k < p.size(); ++k) {
    const double r = ref[k];
    const double d = std::isfinite(p[k]) ? std::abs(p[k] - r) : INFINITY;
    worst = std::max(worst, d / std::max(std::abs(r), 1.0));
    diff2 += d * d;
    ref2 += r * r;
  }
  return {std::sqrt(diff2 / ref2), worst};
}

inline uint16_t reference_half_bits(offload::HalfType type, double x) {
  return type == offload::HalfType::f16 ? reference_f16_bits(x) : reference_bf16_bits(x);
}

inline double half_value(offload::HalfType type, uint16_t bits) {
  return type == offload::HalfType::f16 ? f16_value(bits) : bf16_value(bits);
}

// The copy-out against (a) the kernel's own fp32 result rounded, which it must equal bit for bit,
// and (b) the double reference rounded, which it equals unless the fp32 result and the reference
// lie on either side of a rounding boundary. Then, since each rounding moves a value by at most
// half a spacing of the half-precision grid, the two rounded values differ by at most
// |master - reference| + one spacing; `tolerance(ref)` bounds |master - reference|.
struct HalfCheck {
  std::size_t total = 0, equal = 0, straddling = 0, unexplained = 0, not_rounded_master = 0;
};

template <class T, class Tolerance>
HalfCheck check_half_copy(offload::HalfType type, const std::vector<float>& master,
                          const std::vector<uint16_t>& copy, const std::vector<T>& ref,
                          Tolerance tolerance) {
  HalfCheck h;
  h.total = copy.size();
  for (std::size_t k = 0; k < copy.size(); ++k) {
    if (copy[k] != reference_half_bits(type, master[k])) ++h.not_rounded_master;
    const uint16_t rounded_ref = reference_half_bits(type, ref[k]);
    const double r = half_value(type, rounded_ref);
    // The grid spacing around the rounded reference: the larger gap to a neighbour.
    const double spacing = std::max(std::abs(half_value(type, rounded_ref + 1) - r),
                                    std::abs(r - half_value(type, rounded_ref - 1)));
    const double apart = std::abs(half_value(type, copy[k]) - r);
    if (copy[k] == rounded_ref) {
      ++h.equal;
    } else if (apart <= tolerance(static_cast<double>(ref[k])) + spacing) {
      ++h.straddling;
    } else {
      ++h.unexplained;
      std::printf("copy-out element %zu: master %a rounds to 0x%04x; reference %a to 0x%04x\n", k,
                  static_cast<double>(master[k]), copy[k], static_cast<double>(ref[k]),
                  rounded_ref);
    }
  }
  return h;
}

}  // namespace strata::test

namespace strata::common::cpu {
inline void PrintTo(Isa isa, std::ostream* os) { *os << isa_name(isa); }
}  // namespace strata::common::cpu
namespace strata::offload {
inline void PrintTo(HalfType type, std::ostream* os) { *os << test::half_name(type); }
}  // namespace strata::offload
