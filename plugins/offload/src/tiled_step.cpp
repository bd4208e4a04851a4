#include "tiled_step.hpp"

#include <algorithm>
#include <vector>

namespace strata::offload {
namespace {

// Calls range(shard, begin, end) once per tile of every shard, on the pool.
template <class Arrays, class Range>
void for_each_tile(ThreadPool& pool, std::span<const Arrays> shards, std::size_t tile,
                   Range range) {
  tile = std::max<std::size_t>(tile, 1);
  std::vector<std::size_t> first(shards.size() + 1, 0);  // first tile index of each shard
  for (std::size_t i = 0; i < shards.size(); ++i) {
    first[i + 1] = first[i] + (shards[i].count + tile - 1) / tile;
  }
  pool.run(first.back(), [&](std::size_t t) {
    const auto shard = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), t) -
                                                first.begin() - 1);
    const std::size_t begin = (t - first[shard]) * tile;
    range(shards[shard], begin, std::min(shards[shard].count, begin + tile));
  });
}

}  // namespace

void adam_step(ThreadPool& pool, const OptimizerKernels& k, const AdamScalars& s,
               std::span<const AdamArrays> shards, std::size_t tile) {
  for_each_tile(pool, shards, tile, [&](const AdamArrays& a, std::size_t begin, std::size_t end) {
    k.adam(s, a, begin, end);
  });
}

void sgd_step(ThreadPool& pool, const OptimizerKernels& k, const SgdScalars& s,
              std::span<const SgdArrays> shards, std::size_t tile) {
  for_each_tile(pool, shards, tile, [&](const SgdArrays& a, std::size_t begin, std::size_t end) {
    k.sgd(s, a, begin, end);
  });
}

void lion_step(ThreadPool& pool, const OptimizerKernels& k, const LionScalars& s,
               std::span<const LionArrays> shards, std::size_t tile) {
  for_each_tile(pool, shards, tile, [&](const LionArrays& a, std::size_t begin, std::size_t end) {
    k.lion(s, a, begin, end);
  });
}

}  // namespace strata::offload
