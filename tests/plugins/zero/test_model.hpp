// A toy model for the strata_zero tests: parameters of odd sizes whose gradients hold
// rank-dependent small integers with an exactly representable average over ranks. Gradients live
// in host buffers, or (host_grads = false) are registered as NULL and written into the buffers
// the plugin lends.
#pragma once

#include "zero_test_support.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::zero_test {

class TestModel {
 public:
  explicit TestModel(std::vector<uint64_t> sizes, bool host_grads = true)
      : sizes_(std::move(sizes)), host_grads_(host_grads) {
    for (size_t p = 0; p < sizes_.size(); ++p) {
      names_.push_back("layer" + std::to_string(p) + ".weight");
      data_.emplace_back(sizes_[p]);
      for (size_t i = 0; i < sizes_[p]; ++i) data_[p][i] = initial(p, i);
      grads_.emplace_back(host_grads ? sizes_[p] : 0, 0.0f);
    }
  }

  size_t params() const { return sizes_.size(); }
  uint64_t size(size_t p) const { return sizes_[p]; }
  const std::string& name(size_t p) const { return names_[p]; }
  std::vector<float>& grad(size_t p) { return grads_[p]; }
  std::vector<float>& data(size_t p) { return data_[p]; }
  const std::vector<float>& data(size_t p) const { return data_[p]; }

  // Distinct, exactly representable starting values.
  static float initial(size_t p, size_t i) { return static_cast<float>(p * 4096 + i) * 0.25f; }

  strata_status register_all(Zero& zero) {
    for (size_t p = 0; p < sizes_.size(); ++p) {
      const strata_status s =
          zero.register_param(static_cast<uint32_t>(p), names_[p].c_str(), data_[p].data(),
                              host_grads_ ? grads_[p].data() : nullptr, sizes_[p]);
      if (s != STRATA_OK) return s;
    }
    return STRATA_OK;
  }

  // The average over ranks of what add_micro_batch(step, ...) contributes: a small integer.
  static float average(size_t p, size_t i, int step) {
    return static_cast<float>(static_cast<int>((p * 7 + i * 3 + step * 5) % 11) - 5);
  }
  // Rank r adds average + d * (2r - (size-1)); the d terms cancel in the sum over ranks, so the
  // exact average is representable and every partial sum is a small integer (no rounding).
  static void add_contribution(float* grad, size_t p, uint64_t count, int step, int rank,
                               int size) {
    for (size_t i = 0; i < count; ++i) {
      const int spread = static_cast<int>((p + i) % 3) + 1;
      grad[i] += average(p, i, step) + static_cast<float>(spread * (2 * rank - (size - 1)));
    }
  }
  void add_micro_batch(int step, int rank, int size) {
    for (size_t p = 0; p < sizes_.size(); ++p) {
      add_contribution(grads_[p].data(), p, sizes_[p], step, rank, size);
    }
  }

  // All gradients concatenated, for the cross-rank bitwise comparison.
  std::vector<float> all_grads() const {
    std::vector<float> out;
    for (const auto& g : grads_) out.insert(out.end(), g.begin(), g.end());
    return out;
  }

 private:
  std::vector<uint64_t> sizes_;
  bool host_grads_;
  std::vector<std::string> names_;
  std::vector<std::vector<float>> data_, grads_;
};

}  // namespace strata::zero_test
