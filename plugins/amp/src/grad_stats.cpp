#include "grad_stats.hpp"

#include <algorithm>
#include <cmath>
#include <strata/plugin.hpp>
#include <string>
#include <vector>

#include "parallel.hpp"

namespace strata::amp {
namespace {

double block_sum(const Kernels& kernels, const float* values, std::size_t n) {
  double lanes[kSumLanes] = {};
  kernels.accumulate_squares(values, n, lanes);
  return reduce_lanes(lanes);
}

// Calls put(k, sum of block k) for the blocks of [values, values + n), in order. Whole blocks go
// two at a time through accumulate_squares_pair: the same sums, with twice the independent adds.
template <class Put>
void block_sums(const Kernels& kernels, const float* values, std::size_t n, Put&& put) {
  std::size_t b = 0, k = 0;
  for (; b + 2 * kSumBlock <= n; b += 2 * kSumBlock, k += 2) {
    double first[kSumLanes] = {}, second[kSumLanes] = {};
    kernels.accumulate_squares_pair(values + b, values + b + kSumBlock, kSumBlock, first, second);
    put(k, reduce_lanes(first));
    put(k + 1, reduce_lanes(second));
  }
  for (; b < n; b += kSumBlock, ++k) {
    put(k, block_sum(kernels, values + b, std::min(kSumBlock, n - b)));
  }
}

}  // namespace

double sum_of_squares(const float* values, std::size_t n, const Exec& exec) {
  const Kernels& kernels = *exec.kernels;
  double total = 0.0;
  if (n < kParallelMin || exec.threads <= 1) {  // the same sums in the same order, no allocation
    block_sums(kernels, values, n, [&](std::size_t, double sum) { total += sum; });
    return total;
  }
  const std::size_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> sums(blocks, 0.0);
  // Pieces are whole blocks, so every block is summed by exactly one thread.
  parallel_for(n, exec.threads, kSumBlock, [&](std::size_t begin, std::size_t end) {
    double* out = sums.data() + begin / kSumBlock;
    block_sums(kernels, values + begin, end - begin,
               [&](std::size_t k, double sum) { out[k] = sum; });
  });
  for (double s : sums) total += s;
  return total;
}

void check_grad_shard(const strata_shard& s, std::size_t i) {
  if (s.struct_size < offsetof(strata_shard, grad) + sizeof(s.grad)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "shards[" + std::to_string(i) +
                                               "].struct_size: too small, got " +
                                               std::to_string(s.struct_size));
  }
  if (s.count > 0 && s.grad == nullptr) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "shards[" + std::to_string(i) + "].grad: NULL for a non-empty shard");
  }
}

GradStats grad_stats(std::span<const strata_shard> shards, const Exec& exec) {
  GradStats stats;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const strata_shard& s = shards[i];
    check_grad_shard(s, i);
    stats.sum_sq += sum_of_squares(s.grad, s.count, exec);
  }
  // Squares of finite floats cannot overflow fp64 (FLT_MAX^2 is about 1e77), so the sum is
  // non-finite exactly when some element was inf or nan: the overflow check needs no pass of its
  // own.
  stats.nonfinite = !std::isfinite(stats.sum_sq);
  return stats;
}

}  // namespace strata::amp
