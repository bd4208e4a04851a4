#include "grad_stats.hpp"

#include <cmath>
#include <strata/plugin.hpp>
#include <string>

namespace strata::amp {

double sum_of_squares(const float* __restrict values, std::size_t n) {
  // Eight independent fp64 lanes: the compiler may not reorder a single floating-point sum, but it
  // can vectorise these fixed lanes; the result is also the same whatever vector width it picks.
  constexpr std::size_t kLanes = 8;
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t k = 0; k < kLanes; ++k) {
      const double x = values[i + k];
      lane[k] += x * x;
    }
  }
  double sum = 0.0;
  for (; i < n; ++i) {
    const double x = values[i];
    sum += x * x;
  }
  for (std::size_t k = 0; k < kLanes; ++k) sum += lane[k];
  return sum;
}

GradStats grad_stats(std::span<const strata_shard> shards) {
  GradStats stats;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const strata_shard& s = shards[i];
    if (s.struct_size < offsetof(strata_shard, grad) + sizeof(s.grad)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "shards[" + std::to_string(i) +
                                                 "].struct_size: too small, got " +
                                                 std::to_string(s.struct_size));
    }
    if (s.count > 0 && s.grad == nullptr) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
                "shards[" + std::to_string(i) + "].grad: NULL for a non-empty shard");
    }
    stats.sum_sq += sum_of_squares(s.grad, s.count);
  }
  // Squares of finite floats cannot overflow fp64 (FLT_MAX^2 is about 1e77), so the sum is
  // non-finite exactly when some element was inf or nan: no separate check pass is needed.
  stats.nonfinite = !std::isfinite(stats.sum_sq);
  return stats;
}

}  // namespace strata::amp
