// The CPU kernels the shared CUDA kernels must reproduce, with the scalars both take
// (strata_common/optimizer_scalars.hpp): the amp
// plugin's casts and grad_stats, the offload plugin's optimizer kernels; element_math.hpp's
// update over a host tensor (what the device runs per element); and the inputs both the CPU test
// (element_math_test.cpp) and the GPU test (kernels_gpu_test.cpp) feed them.
#pragma once

#include <strata/plugin_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <strata_common/element_math.hpp>
#include <strata_common/cpu_isa.hpp>
#include <strata_common/optimizer_scalars.hpp>
#include <vector>

#include "grad_stats.hpp"         // plugins/amp/src
#include "isa.hpp"                // plugins/amp/src
#include "kernels.hpp"            // plugins/amp/src
#include "optimizer_kernels.hpp"  // plugins/offload/src

namespace strata::test::kernels {

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// f32 inputs for the narrowing casts: every special case we know of (zeros, infinities, quiet and
// signalling nans with payloads and both signs, the f16 and bf16 overflow, subnormal and
// rounding-tie boundaries and their neighbours), then `random` uniformly random bit patterns and
// as many N(0, 1) values.
inline std::vector<float> f32_samples(std::size_t random, uint32_t seed) {
  std::vector<uint32_t> patterns = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,  // zeros, infinities
      0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,  // quiet and signalling nans
      0x7fa00000u, 0x7fbfffffu, 0x7fffffffu, 0xffffffffu, 0x7f802000u, 0x7f801fffu,
      0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu,  // denormals, FLT_MAX
      0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x47800000u,   // around f16 65504/inf
      0x38800000u, 0x387fffffu, 0x33800000u, 0x33000000u, 0x33000001u,   // f16 subnormal edges
      0x32ffffffu, 0x33c00000u, 0x3f801000u, 0x3f803000u, 0x3f801001u,   // f16 ties
      0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7f8000u, 0x7f7f7fffu,   // bf16 ties, overflow
  };
  std::vector<float> out;
  for (uint32_t p : patterns) {
    out.push_back(from_bits(p));
    out.push_back(from_bits(p ^ 0x80000000u));
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < random; ++i) out.push_back(from_bits(any(rng)));
  for (std::size_t i = 0; i < random; ++i) out.push_back(normal(rng));
  return out;
}

// Every 16-bit pattern, in order.
inline std::vector<uint16_t> all_half_patterns() {
  std::vector<uint16_t> out(65536);
  for (uint32_t i = 0; i < 65536; ++i) out[i] = static_cast<uint16_t>(i);
  return out;
}

// The amp kernel sets this CPU runs (portable, and AVX2 / AVX-512 where present).
inline std::vector<amp::Isa> amp_isas() {
  std::vector<amp::Isa> out;
  for (amp::Isa isa : {amp::Isa::scalar, amp::Isa::avx2, amp::Isa::avx512}) {
    if (amp::isa_available(isa)) out.push_back(isa);
  }
  return out;
}

// amp's narrowing (f16 or bf16) with kernel set `k`.
inline std::vector<uint16_t> amp_narrow(const amp::Kernels& k, strata_dtype to,
                                        std::span<const float> src) {
  std::vector<uint16_t> out(src.size());
  (to == STRATA_F16 ? k.f32_to_f16 : k.f32_to_bf16)(src.data(), out.data(), src.size());
  return out;
}
inline std::vector<float> amp_widen(const amp::Kernels& k, strata_dtype from,
                                    std::span<const uint16_t> src) {
  std::vector<float> out(src.size());
  (from == STRATA_F16 ? k.f16_to_f32 : k.bf16_to_f32)(src.data(), out.data(), src.size());
  return out;
}

// amp's grad_stats over f32 tensors, each one shard, on the portable kernel set, one thread.
inline amp::GradStats amp_grad_stats(const std::vector<std::vector<float>>& tensors) {
  std::vector<strata_shard> shards;
  for (const auto& t : tensors) {
    strata_shard s{};
    s.struct_size = sizeof(strata_shard);
    s.count = t.size();
    s.grad = const_cast<float*>(t.data());
    shards.push_back(s);
  }
  return amp::grad_stats(shards, amp::Exec{});
}

// ---- the offload plugin's optimizer kernels ----------------------------------------------------

inline offload::HalfType half_type(strata_dtype model_dtype) {
  if (model_dtype == STRATA_F16) return offload::HalfType::f16;
  if (model_dtype == STRATA_BF16) return offload::HalfType::bf16;
  return offload::HalfType::none;
}

enum class Kind { adam, sgd, lion };

// One optimizer configuration and the scalars of its step t (1-based), from the hyperparameters
// through the CUDA API's make_* helpers. The steps vary grad_scale and lr as a scaler and a
// schedule would; SGD's buffer is live from the second step on.
struct OptimizerCase {
  std::string name;
  Kind kind;
  common::optim::AdamHyper adam{};
  common::optim::SgdHyper sgd{};
  common::optim::LionHyper lion{};

  double grad_scale(int t) const { return 1.0 / (1.0 + 0.25 * t); }
  double lr_factor(int t) const { return 1.0 - 0.05 * t; }

  common::optim::AdamScalars adam_scalars(int t) const {
    common::optim::AdamHyper h = adam;
    h.lr *= lr_factor(t);
    return common::optim::make_adam_scalars(h, static_cast<uint64_t>(t), grad_scale(t));
  }
  common::optim::SgdScalars sgd_scalars(int t) const {
    common::optim::SgdHyper h = sgd;
    h.lr *= lr_factor(t);
    return common::optim::make_sgd_scalars(h, grad_scale(t), t > 1);
  }
  common::optim::LionScalars lion_scalars(int t) const {
    common::optim::LionHyper h = lion;
    h.lr *= lr_factor(t);
    return common::optim::make_lion_scalars(h, grad_scale(t));
  }
  // Per-element state arrays: Adam 2, SGD with momentum 1, plain SGD 0, Lion 1.
  int states() const {
    if (kind == Kind::adam) return 2;
    if (kind == Kind::lion) return 1;
    return sgd.momentum > 0 ? 1 : 0;
  }
};

inline std::vector<OptimizerCase> optimizer_cases() {
  std::vector<OptimizerCase> out;
  const auto adam = [&](std::string name, double wd, bool decoupled, bool bias_correction) {
    OptimizerCase c{std::move(name), Kind::adam};
    c.adam = {2e-3, 0.9, 0.999, 1e-8, wd, decoupled, bias_correction};
    out.push_back(c);
  };
  const auto sgd = [&](std::string name, double momentum, double dampening, double wd,
                       bool nesterov) {
    OptimizerCase c{std::move(name), Kind::sgd};
    c.sgd = {0.05, momentum, dampening, wd, nesterov};
    out.push_back(c);
  };
  const auto lion = [&](std::string name, double wd) {
    OptimizerCase c{std::move(name), Kind::lion};
    c.lion = {1e-3, 0.9, 0.99, wd};
    out.push_back(c);
  };
  adam("Adam", 0.1, false, true);
  adam("AdamW", 0.1, true, true);
  adam("AdamNoBiasCorrection", 0.0, true, false);
  sgd("SgdPlain", 0.0, 0.0, 0.05, false);
  sgd("SgdMomentum", 0.8, 0.3, 0.02, false);
  sgd("SgdNesterov", 0.9, 0.0, 0.05, true);
  lion("Lion", 0.0);
  lion("LionWeightDecay", 0.1);
  return out;
}

// One tensor's host arrays for an optimizer step.
struct HostTensor {
  std::vector<float> param;
  std::vector<float> state0, state1;  // Adam m, v; SGD buffer; Lion m (sized by the case)
  std::vector<uint16_t> copy;         // empty: no copy-out
};

inline HostTensor make_tensor(const OptimizerCase& c, std::size_t n, bool copy,
                              std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor t;
  t.param.resize(n);
  for (float& x : t.param) x = normal(rng);
  if (c.states() > 0) t.state0.assign(n, 0.0f);
  if (c.states() > 1) t.state1.assign(n, 0.0f);
  if (copy) t.copy.assign(n, 0);
  return t;
}

// One step of the offload plugin's kernel for `c` over tensor t with f32 gradients g (the
// gradients as the kernel reads them: halves already widened), on instruction set `isa`.
inline void offload_step(const OptimizerCase& c, int step, HostTensor& t, const float* g,
                         strata_dtype model_dtype,
                         common::cpu::Isa isa = common::cpu::widest_isa()) {
  const offload::OptimizerKernels& k = offload::kernels_for(isa);
  const std::size_t n = t.param.size();
  const offload::HalfCopy copy{t.copy.empty() ? nullptr : t.copy.data(),
                               t.copy.empty() ? offload::HalfType::none : half_type(model_dtype)};
  switch (c.kind) {
    case Kind::adam:
      k.adam(c.adam_scalars(step), {t.param.data(), g, t.state0.data(), t.state1.data(), n, copy},
             0, n);
      break;
    case Kind::sgd:
      k.sgd(c.sgd_scalars(step),
            {t.param.data(), g, t.state0.empty() ? nullptr : t.state0.data(), n, copy}, 0, n);
      break;
    case Kind::lion:
      k.lion(c.lion_scalars(step), {t.param.data(), g, t.state0.data(), n, copy}, 0, n);
      break;
  }
}

// One step of element_math over the tensor, as the device kernel runs it per element.
inline void element_step(const OptimizerCase& c, int step, HostTensor& t, const float* g,
                         strata_dtype model_dtype) {
  for (std::size_t i = 0; i < t.param.size(); ++i) {
    float& x = t.param[i];
    switch (c.kind) {
      case Kind::adam:
        cuda::math::adam_update(c.adam_scalars(step), x, g[i], t.state0[i], t.state1[i]);
        break;
      case Kind::sgd:
        if (t.state0.empty()) {
          cuda::math::sgd_update_plain(c.sgd_scalars(step), x, g[i]);
        } else {
          cuda::math::sgd_update_momentum(c.sgd_scalars(step), x, g[i], t.state0[i]);
        }
        break;
      case Kind::lion:
        cuda::math::lion_update(c.lion_scalars(step), x, g[i], t.state0[i]);
        break;
    }
    if (!t.copy.empty()) {
      t.copy[i] =
          model_dtype == STRATA_F16 ? cuda::math::f32_to_f16(x) : cuda::math::f32_to_bf16(x);
    }
  }
}

// How far `got` is from `want`, as tests/plugins/offload measures the CPU kernels: the norm-relative
// error ||got - want|| / ||want||, and the worst element |got - want| / max(|want|, 1) (a bare
// per-element relative error means nothing for elements passing near zero, where fp32's own
// rounding of a difference dominates). A non-finite `got` counts as infinitely far.
// acceptable(): the bound, 1e-6 relative, on the norm (as tests/plugins/offload holds the CPU
// kernels to it), and 1e-5 on the worst element: trajectories kept apart for a few steps on a
// path whose multiply-adds round twice drift a little past 1e-6 on single elements.
struct Errors {
  double relative = 0.0;
  double worst_element = 0.0;
  bool acceptable() const { return relative <= 1e-6 && worst_element <= 1e-5; }
};

inline Errors compare(std::span<const float> got, std::span<const float> want) {
  double diff2 = 0.0, want2 = 0.0, worst = 0.0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double w = want[k];
    const double d = std::isfinite(got[k]) ? std::fabs(got[k] - w) : INFINITY;
    worst = std::max(worst, d / std::max(std::fabs(w), 1.0));
    diff2 += d * d;
    want2 += w * w;
  }
  return {want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2), worst};
}

inline std::ostream& operator<<(std::ostream& os, const Errors& e) {
  return os << "relative error " << e.relative << ", worst element " << e.worst_element;
}

}  // namespace strata::test::kernels
