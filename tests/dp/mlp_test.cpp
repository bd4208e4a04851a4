// Unit checks of the Fashion-MNIST example's model and batching, without the runtime.
#include "mlp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "batch_plan.hpp"
#include "dataset.hpp"

namespace strata::fmnist {
namespace {

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
};

Batch synthetic_batch(std::size_t n, std::size_t features, std::size_t classes, uint64_t seed) {
  const Dataset data = make_synthetic(n, features, classes, seed);
  Batch b{std::vector<float>(n * features), std::vector<uint8_t>(n)};
  gather_range(data, 0, n, b.x.data(), b.y.data());
  return b;
}

TEST(Mlp, BackwardMatchesFiniteDifferences) {
  Mlp model({6, 5, 4, 3});
  model.init(7);
  // Nonzero biases so that every ReLU path carries gradient to them.
  for (auto& p : model.params()) {
    if (p.name[0] == 'b')
      for (std::size_t i = 0; i < p.data.size(); ++i) p.data[i] = 0.05f * float(i + 1);
  }
  const Batch b = synthetic_batch(8, 6, 3, 3);
  model.train_batch(b.x.data(), b.y.data(), 8, 1.0f);

  const float eps = 1e-3f;
  int checked = 0;
  for (auto& p : model.params()) {
    for (std::size_t i = 0; i < p.data.size(); ++i) {
      const float saved = p.data[i];
      p.data[i] = saved + eps;
      const double up = model.loss(b.x.data(), b.y.data(), 8);
      p.data[i] = saved - eps;
      const double down = model.loss(b.x.data(), b.y.data(), 8);
      p.data[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(p.grad[i], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << p.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3);
}

TEST(Mlp, GradientsAccumulateAndScale) {
  Mlp whole({6, 5, 3}), halves({6, 5, 3});
  whole.init(11);
  halves.init(11);
  const Batch b = synthetic_batch(8, 6, 3, 5);
  whole.train_batch(b.x.data(), b.y.data(), 8, 2.0f);
  // Two halves, each mean-loss gradient times 1/2, add up to the mean over all eight samples.
  halves.train_batch(b.x.data(), b.y.data(), 4, 1.0f);
  halves.train_batch(b.x.data() + 4 * 6, b.y.data() + 4, 4, 1.0f);
  for (std::size_t p = 0; p < whole.params().size(); ++p) {
    const auto& g1 = whole.params()[p].grad;
    const auto& g2 = halves.params()[p].grad;
    for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g1[i], g2[i], 1e-5f);
  }
}

TEST(Mlp, GradReadyComesOutputLayerFirst) {
  Mlp model({6, 5, 4, 3});
  model.init(1);
  const Batch b = synthetic_batch(4, 6, 3, 1);
  std::vector<std::size_t> order;
  model.train_batch(b.x.data(), b.y.data(), 4, 1.0f, [&](std::size_t p) { order.push_back(p); });
  EXPECT_EQ(order, (std::vector<std::size_t>{4, 5, 2, 3, 0, 1}));
}

TEST(Mlp, InitDependsOnlyOnSeedAndRespectsLimits) {
  Mlp a({784, 256, 10}), b({784, 256, 10}), c({784, 256, 10});
  a.init(42);
  b.init(42);
  c.init(43);
  EXPECT_EQ(a.params()[0].data, b.params()[0].data);
  EXPECT_NE(a.params()[0].data, c.params()[0].data);
  const auto& w1 = a.params()[0].data;
  const float he = std::sqrt(6.0f / 784.0f);
  EXPECT_LE(*std::max_element(w1.begin(), w1.end()), he);
  EXPECT_GE(*std::min_element(w1.begin(), w1.end()), -he);
  EXPECT_GT(*std::max_element(w1.begin(), w1.end()), 0.9f * he);  // fills the range
  const auto& w2 = a.params()[2].data;
  const float glorot = std::sqrt(6.0f / (256.0f + 10.0f));
  EXPECT_LE(*std::max_element(w2.begin(), w2.end()), glorot);
  for (float v : a.params()[1].data) EXPECT_EQ(v, 0.0f);
}

TEST(Mlp, LearnsSyntheticDataWithPlainSgd) {
  Mlp model({64, 32, 10});
  model.init(3);
  const Batch b = synthetic_batch(256, 64, 10, 9);
  const double before = model.loss(b.x.data(), b.y.data(), 256);
  for (int step = 0; step < 50; ++step) {
    for (auto& p : model.params()) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
    model.train_batch(b.x.data(), b.y.data(), 256, 1.0f);
    for (auto& p : model.params()) {
      for (std::size_t i = 0; i < p.data.size(); ++i) p.data[i] -= 0.1f * p.grad[i];
    }
  }
  EXPECT_LT(model.loss(b.x.data(), b.y.data(), 256), 0.5 * before);
  EXPECT_GT(model.count_correct(b.x.data(), b.y.data(), 256), 230u);
}

TEST(SoftmaxCrossEntropy, UniformLogitsGiveLogClasses) {
  const std::vector<float> logits(2 * 4, 3.0f);
  const std::vector<uint8_t> y = {0, 3};
  std::vector<float> d(8);
  EXPECT_NEAR(softmax_cross_entropy(logits.data(), y.data(), 2, 4, 1.0f, d.data()), std::log(4.0),
              1e-9);
  EXPECT_FLOAT_EQ(d[0], -0.75f);
  EXPECT_FLOAT_EQ(d[1], 0.25f);
}

TEST(BatchPlan, RanksAndMicroStepsPartitionEachGlobalBatch) {
  const std::size_t n = 1000;
  for (int world : {1, 2, 3, 4}) {
    for (uint64_t accumulation : {1u, 2u}) {
      const uint64_t micro = 12 / uint64_t(world) / accumulation;
      if (micro * accumulation * uint64_t(world) != 12) continue;
      std::vector<BatchPlan> plans;
      for (int r = 0; r < world; ++r)
        plans.emplace_back(n, BatchShape{12, micro, accumulation, world, r}, 5);
      BatchPlan single(n, BatchShape{12, 12, 1, 1, 0}, 5);
      single.start_epoch(2);
      for (auto& p : plans) p.start_epoch(2);
      ASSERT_EQ(plans[0].steps_per_epoch(), n / 12);
      for (std::size_t step = 0; step < plans[0].steps_per_epoch(); step += 17) {
        std::multiset<uint32_t> got;
        for (auto& p : plans) {
          for (uint64_t m = 0; m < accumulation; ++m) {
            for (uint32_t i : p.micro_batch(step, m)) got.insert(i);
          }
        }
        const auto whole = single.micro_batch(step, 0);
        EXPECT_EQ(got, std::multiset<uint32_t>(whole.begin(), whole.end()))
            << "world " << world << " accumulation " << accumulation << " step " << step;
      }
    }
  }
}

TEST(BatchPlan, ShuffleIsAPermutationThatChangesPerEpoch) {
  BatchPlan plan(100, BatchShape{100, 100, 1, 1, 0}, 1);
  plan.start_epoch(0);
  const auto e0 = plan.micro_batch(0, 0);
  std::vector<uint32_t> first(e0.begin(), e0.end());
  std::vector<uint32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  plan.start_epoch(1);
  const auto e1 = plan.micro_batch(0, 0);
  EXPECT_NE(first, std::vector<uint32_t>(e1.begin(), e1.end()));
  plan.start_epoch(0);
  const auto again = plan.micro_batch(0, 0);
  EXPECT_EQ(first, std::vector<uint32_t>(again.begin(), again.end()));
}

TEST(BatchPlan, RejectsInconsistentShapesAndDropsTheTail) {
  EXPECT_THROW(BatchPlan(100, BatchShape{12, 5, 1, 2, 0}, 1), std::invalid_argument);
  EXPECT_THROW(BatchPlan(10, BatchShape{12, 6, 1, 2, 0}, 1), std::invalid_argument);
  BatchPlan plan(100, BatchShape{12, 6, 1, 2, 1}, 1);
  EXPECT_EQ(plan.steps_per_epoch(), 8u);
  plan.start_epoch(0);
  EXPECT_THROW(plan.micro_batch(8, 0), std::out_of_range);
}

}  // namespace
}  // namespace strata::fmnist
