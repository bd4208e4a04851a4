#include "synthetic_model.hpp"

#include <cmath>
#include <stdexcept>
#include <strata/half.hpp>

namespace strata::mixedtest {
namespace {

// Odd sizes, so no partition, bucket or SIMD width divides them; "w1" is the largest and is
// partitioned at stage 3 (the test manifest's persistence threshold is 10).
struct LayerSpec {
  std::vector<std::pair<const char*, std::size_t>> tensors;
};
const std::vector<LayerSpec> kLayers = {
    {{{"embed", 1531}}},
    {{{"w1", 3001}, {"b1", 17}}},
    {{{"w2", 1023}, {"b2", 5}, {"gain", 1}}},
};

// The gradient of 0.5·c·(w − t)² is c·(w − t); c keeps |gradient × loss scale| far below f16's
// 65504 at the scales the tests use (2^10 and below: at most 2 × 0.01 × 1024 ≈ 20).
constexpr float kCurvature = 0.01f;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform value in [-1, 1) from a key; a pure function, so every run draws the same values.
float uniform(uint64_t key) {
  return static_cast<float>(double(splitmix64(key) >> 11) * 0x1.0p-52 - 1.0);
}

uint64_t key(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {
  return splitmix64(splitmix64(splitmix64(splitmix64(a) ^ b) ^ c) ^ d) ^ e;
}

float to_float(uint16_t h, strata_dtype dtype) {
  return dtype == STRATA_BF16 ? bf16_to_float(h) : f16_to_float(h);
}

uint16_t to_half(float f, strata_dtype dtype) {
  return dtype == STRATA_BF16 ? float_to_bf16(f) : float_to_f16(f);
}

strata_dtype half_dtype(const Runtime& runtime) {
  const int32_t dtype = runtime.training().model_dtype;
  if (dtype != STRATA_F16 && dtype != STRATA_BF16) {
    throw std::runtime_error(std::string("the manifest's precision stratum wants parameters in ") +
                             strata_dtype_name(dtype) + "; this host tests f16 and bf16 only");
  }
  return static_cast<strata_dtype>(dtype);
}

}  // namespace

SyntheticModel::SyntheticModel(Runtime& runtime, uint64_t seed)
    : runtime_(runtime), dtype_(half_dtype(runtime)), rank_(runtime.world().rank), seed_(seed) {
  for (const LayerSpec& layer : kLayers) {
    std::vector<uint32_t> indices;
    std::vector<std::size_t>& positions = layers_.emplace_back();
    for (const auto& [name, count] : layer.tensors) {
      positions.push_back(tensors_.size());
      Tensor& t = tensors_.emplace_back();
      t.name = name;
      t.init.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        t.init[i] = to_half(uniform(key(seed, 0, tensors_.size(), i, 0x1717)), dtype_);
      }
      t.index = runtime.register_param(t.name, dtype_, t.init.data(), nullptr, count);
      indices.push_back(t.index);
    }
    groups_.push_back(runtime.define_group("layer" + std::to_string(groups_.size() + 1), indices));
  }
  runtime.finalize();
}

std::size_t SyntheticModel::parameters() const {
  std::size_t n = 0;
  for (const Tensor& t : tensors_) n += t.init.size();
  return n;
}

template <class Fn>
void SyntheticModel::for_each_gathered(uint32_t flags, bool reverse, Fn&& fn) {
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    const std::size_t l = reverse ? layers_.size() - 1 - k : k;
    GatheredGroup gathered(runtime_, groups_[l], flags);
    for (std::size_t pos : layers_[l]) {
      Tensor& t = tensors_[pos];
      const ParamView view = runtime_.view(t.index);
      if (view.data == nullptr || view.count != t.init.size() || view.dtype != dtype_) {
        throw std::runtime_error("view of '" + t.name + "' inside its gathered group: no data, " +
                                 "or not " + std::to_string(t.init.size()) + " elements of " +
                                 strata_dtype_name(dtype_));
      }
      fn(t, view);
    }
    gathered.release();  // throws, unlike the guard's destructor
  }
}

void SyntheticModel::backward(uint64_t step, uint64_t micro, double multiplier,
                              const std::optional<Poison>& poison, bool expect_zero_grads) {
  const auto factor = static_cast<float>(multiplier) * kCurvature;
  for_each_gathered(STRATA_GATHER_FOR_BACKWARD, true, [&](Tensor& t, const ParamView& view) {
    if (view.grad == nullptr) throw std::runtime_error("no gradient lent for '" + t.name + "'");
    const auto* w = static_cast<const uint16_t*>(view.data);
    auto* g = static_cast<uint16_t*>(view.grad);
    const auto pos = static_cast<uint64_t>(&t - tensors_.data());
    for (std::size_t i = 0; i < t.init.size(); ++i) {
      const float before = to_float(g[i], dtype_);
      if (expect_zero_grads && before != 0.0f) {
        throw std::runtime_error("step " + std::to_string(step) + ": gradient of '" + t.name +
                                 "' element " + std::to_string(i) + " reads " +
                                 std::to_string(before) +
                                 " before the first micro-batch (the runtime zeroes gradients "
                                 "after every boundary, skipped ones included)");
      }
      const float target = uniform(key(seed_, uint64_t(rank_) + 1, step, micro, pos << 32 | i));
      g[i] = to_half(before + factor * (to_float(w[i], dtype_) - target), dtype_);
    }
    if (poison && poison->param == t.name) g[t.init.size() / 2] = to_half(poison->value, dtype_);
    runtime_.grad_ready(t.index);
  });
}

uint64_t SyntheticModel::hash() {
  uint64_t h = 0xcbf29ce484222325ull;
  for_each_gathered(0, false, [&](Tensor&, const ParamView& view) {
    const auto* bytes = static_cast<const unsigned char*>(view.data);
    for (std::size_t i = 0; i < view.count * sizeof(uint16_t); ++i) {
      h = (h ^ bytes[i]) * 0x100000001b3ull;
    }
  });
  return h;
}

bool SyntheticModel::finite() {
  bool all = true;
  for_each_gathered(0, false, [&](Tensor&, const ParamView& view) {
    const auto* w = static_cast<const uint16_t*>(view.data);
    for (std::size_t i = 0; i < view.count; ++i) all = all && std::isfinite(to_float(w[i], dtype_));
  });
  return all;
}

}  // namespace strata::mixedtest
