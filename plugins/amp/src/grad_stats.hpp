// One read-only pass over fp32 gradient shards: any inf/nan, and the fp64 sum of squares.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <span>

namespace strata::amp {

struct GradStats {
  bool nonfinite = false;
  double sum_sq = 0.0;
};

// Sum of squares of n floats, accumulated in fp64.
double sum_of_squares(const float* values, std::size_t n);

// Over every shard's grad. Throws sdk::Error for a malformed shard.
GradStats grad_stats(std::span<const strata_shard> shards);

}  // namespace strata::amp
