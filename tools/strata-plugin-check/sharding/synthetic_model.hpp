// The model the sharding checks train: no network, only parameters of awkward sizes and a
// gradient that is a deterministic function of (current value, element, rank, micro-batch).
//
// Sizes: 1 and 7 elements (over 3 or 4 ranks some ranks own nothing of them), 1000 and 4099
// (partitions that do not divide evenly) and 100003, above strata_zero's default stage-3
// persistence threshold (1e5), so that stage 3 with a bare {"stage": 3} really partitions one.
// Values start in [0.25, 0.75] and gradients stay positive and well away from zero, so the
// comparison's scale (the tensor's largest value) is meaningful and Adam never divides a
// near-cancelling sum by a tiny sqrt(v) (which would turn rounding into steps of order lr).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::plugin_check::sharding {

struct ParamSpec {
  std::string name;
  std::size_t count;
};

inline const std::vector<ParamSpec>& model_params() {
  static const std::vector<ParamSpec> params = {
      {"scalar", 1}, {"vec7", 7}, {"vec1000", 1000}, {"vec4099", 4099}, {"vec100003", 100003}};
  return params;
}

// Parameters as values, one vector per parameter (registration order).
using Values = std::vector<std::vector<float>>;

inline Values initial_values() {
  Values values;
  for (std::size_t p = 0; p < model_params().size(); ++p) {
    std::vector<float> v(model_params()[p].count);
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<float>(0.5 + 0.25 * std::sin(0.7 * double(i) + 1.3 * double(p)));
    }
    values.push_back(std::move(v));
  }
  return values;
}

// d loss / d w for element i of parameter p on `rank` at micro-batch `micro`: a positive offset
// that differs per rank and micro-batch (so averaging and accumulation matter) plus a term in
// the current value (so a wrong update changes every later gradient too).
inline float gradient(std::size_t p, std::size_t i, float value, int rank, uint64_t micro) {
  const double wiggle =
      0.1 * std::sin(0.37 * double(i) + 1.1 * double(rank) + 0.53 * double(micro) + double(p));
  return static_cast<float>(0.3 + wiggle + 0.5 * (double(value) - 0.5));
}

}  // namespace strata::plugin_check::sharding
