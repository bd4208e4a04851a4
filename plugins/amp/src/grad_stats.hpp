// One read-only pass over fp32 gradient shards: any inf/nan, and the fp64 sum of squares. (The
// unscale multiply is not here: the optimizer applies 1/(scale * clip) inside its own pass.)
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <span>

#include "kernels.hpp"

namespace strata::amp {

struct GradStats {
  bool nonfinite = false;
  double sum_sq = 0.0;
};

// Elements per summation block. Blocks are summed independently (and in parallel) and their sums
// added in block order, so the result depends only on the data, never on the thread count.
inline constexpr std::size_t kSumBlock = std::size_t{1} << 16;

// Sum of squares of n floats in fp64: canonical lanes per block, blocks added in order.
double sum_of_squares(const float* values, std::size_t n, const Exec& exec);

// Over every shard's grad, shards added in order. Throws sdk::Error for a malformed shard.
GradStats grad_stats(std::span<const strata_shard> shards, const Exec& exec);

// What grad_stats checks of shards[i] before reading it (host or device alike): its struct holds
// `grad`, and `grad` is set unless the shard is empty. Throws sdk::Error naming the shard.
void check_grad_shard(const strata_shard& s, std::size_t i);

}  // namespace strata::amp
