// One optimizer step over a list of shards, spread over a thread pool: every shard is cut into
// tiles of a fixed element count and the pool's threads take tiles until none are left, so large
// and small shards balance alike.
#pragma once

#include <cstddef>
#include <span>

#include "optimizer_kernels.hpp"
#include "thread_pool.hpp"

namespace strata::offload {

// 32 K elements: 128 KiB per array, so an Adam tile's four arrays fit in a core's L2 while the
// tile is in flight, and a 2^24-element shard still makes 512 tasks to balance.
inline constexpr std::size_t kTileElements = std::size_t{32} << 10;

// Each runs `k`'s kernel (the instance's instruction set) over every tile.
void adam_step(ThreadPool& pool, const OptimizerKernels& k, const AdamScalars& s,
               std::span<const AdamArrays> shards, std::size_t tile = kTileElements);
void sgd_step(ThreadPool& pool, const OptimizerKernels& k, const SgdScalars& s,
              std::span<const SgdArrays> shards, std::size_t tile = kTileElements);
void lion_step(ThreadPool& pool, const OptimizerKernels& k, const LionScalars& s,
               std::span<const LionArrays> shards, std::size_t tile = kTileElements);

}  // namespace strata::offload
