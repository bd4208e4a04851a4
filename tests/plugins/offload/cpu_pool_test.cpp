// The CPU step's thread pool and tiling: every task index runs exactly once per run, runs repeat
// on the same threads, and a tiled multithreaded step gives the same bits as one call per shard.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <vector>

#include "cpu_test_support.hpp"
#include "thread_pool.hpp"
#include "tiled_step.hpp"

namespace strata::test {
namespace {

TEST(CpuThreadPool, RunsEveryIndexOnceAcrossRepeatedRuns) {
  offload::ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4u);
  for (std::size_t count : {0u, 1u, 2u, 3u, 1000u, 5u}) {
    std::vector<std::atomic<int>> hits(count);
    pool.run(count, [&](std::size_t i) { hits[i].fetch_add(1); });
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(hits[i].load(), 1) << "index " << i;
  }
}

TEST(CpuThreadPool, SingleThreadPoolRunsOnTheCaller) {
  offload::ThreadPool pool(1);
  EXPECT_EQ(pool.threads(), 1u);
  std::vector<int> order;
  pool.run(4, [&](std::size_t i) { order.push_back(static_cast<int>(i)); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CpuTiledStep, SameBitsAsOneCallPerShard) {
  const std::vector<std::size_t> sizes = {0, 1, 1000, 37, 4096, 333};
  ShardArrays tiled(sizes, 2, offload::HalfType::bf16), whole(sizes, 2, offload::HalfType::bf16);
  std::mt19937 a(3u), b(3u);
  tiled.randomise_params(a);
  whole.randomise_params(b);
  std::mt19937 rng(11u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> grads;
  tiled.for_each_grad([&](std::size_t, float& g) { grads.push_back(g = normal(rng)); });
  whole.for_each_grad([&](std::size_t k, float& g) { g = grads[k]; });

  offload::ThreadPool pool(3);
  const offload::OptimizerKernels& kernels = offload::kernels_for(common::cpu::widest_isa());
  AdamSettings settings;
  settings.weight_decay = 0.01;
  for (unsigned long t = 1; t <= 3; ++t) {
    const offload::AdamScalars s = adam_scalars(settings, t, 0.5, 1.0);
    offload::adam_step(pool, kernels, s, tiled.adam_arrays(), 64);
    for (const offload::AdamArrays& arrays : whole.adam_arrays()) {
      kernels.adam(s, arrays, 0, arrays.count);
    }
  }
  EXPECT_EQ(tiled.params(), whole.params());
  EXPECT_EQ(tiled.half_copy(), whole.half_copy());
}

}  // namespace
}  // namespace strata::test
