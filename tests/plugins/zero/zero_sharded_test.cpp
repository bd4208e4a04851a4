// What stages 1-3 share, with host-owned gradients and no groups (at stage 3 every parameter then
// persists whole): shard coverage, exact averages, accumulation, publish, memory by category.
#include "sharded_support.hpp"

#include <algorithm>
#include <random>

namespace strata::zero_test {
namespace {

class ShardedStage : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message();
    ASSERT_EQ(model_.register_all(zero_), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  void shards(const strata_shard** out, size_t* count) {
    ASSERT_EQ(zero_.owned_shards(out, count), STRATA_OK) << zero_.message();
  }
  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  RecordingHost host_;
  Zero zero_{host_, stage_config(GetParam())};
  TestModel model_{kOddSizes};
};

TEST_P(ShardedStage, ShardsCoverEveryElementExactlyOnceAcrossRanks) {
  const strata_shard* s = nullptr;
  size_t n = 0;
  shards(&s, &n);
  EXPECT_EQ(coverage_errors(s, n, model_), 0u);
  strata_sharding_caps caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_EQ(zero_.query(&caps), STRATA_OK);
  EXPECT_EQ(caps.stage, GetParam());
  EXPECT_EQ(caps.shards_replicated, 0);
  // Masters start as the parameters' values.
  for (size_t k = 0; k < n; ++k) {
    for (uint64_t j = 0; j < s[k].count; ++j) {
      ASSERT_EQ(s[k].master[j], TestModel::initial(s[k].param_index, s[k].offset + j));
    }
  }
}

TEST_P(ShardedStage, AveragesExactlyWhateverOrderAndSubsetEachRankReports) {
  for (int step = 0; step < 3; ++step) {
    model_.add_micro_batch(step, rank_, size_);
    std::vector<uint32_t> order;
    for (uint32_t p = 0; p < model_.params(); ++p) {
      if ((p + static_cast<uint32_t>(rank_ + step)) % 3 != 0) order.push_back(p);
    }
    std::shuffle(order.begin(), order.end(),
                 std::mt19937(static_cast<unsigned>(rank_ * 31 + step)));
    for (uint32_t p : order) ASSERT_EQ(zero_.grad_ready(p, true), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.end_micro_step(true), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
    const strata_shard* s = nullptr;
    size_t n = 0;
    shards(&s, &n);
    std::string first;
    EXPECT_EQ(wrong_shard_grads(s, n, {step}, &first), 0u) << "step " << step << ": " << first;
    ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
    for (size_t p = 0; p < model_.params(); ++p) {
      EXPECT_TRUE(std::all_of(model_.grad(p).begin(), model_.grad(p).end(),
                              [](float g) { return g == 0.0f; })) << "param " << p;
    }
  }
}

TEST_P(ShardedStage, AccumulatesOverMicroBatches) {
  for (int micro = 0; micro < 3; ++micro) {
    model_.add_micro_batch(micro, rank_, size_);
    const bool boundary = micro == 2;
    for (uint32_t p = static_cast<uint32_t>(model_.params()); p-- > 0;) {
      ASSERT_EQ(zero_.grad_ready(p, boundary), STRATA_OK) << zero_.message();
    }
    ASSERT_EQ(zero_.end_micro_step(boundary), STRATA_OK) << zero_.message();
    if (GetParam() >= 2) {
      // Stages 2-3 reduce every micro-batch and empty the host's buffers as they read them.
      for (size_t p = 0; p < model_.params(); ++p) {
        EXPECT_TRUE(std::all_of(model_.grad(p).begin(), model_.grad(p).end(),
                                [](float g) { return g == 0.0f; })) << "param " << p;
      }
    }
  }
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  const strata_shard* s = nullptr;
  size_t n = 0;
  shards(&s, &n);
  std::string first;
  EXPECT_EQ(wrong_shard_grads(s, n, {0, 1, 2}, &first), 0u) << first;
}

TEST_P(ShardedStage, FinishReduceAloneReducesEveryParameter) {
  model_.add_micro_batch(4, rank_, size_);
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  const strata_shard* s = nullptr;
  size_t n = 0;
  shards(&s, &n);
  std::string first;
  EXPECT_EQ(wrong_shard_grads(s, n, {4}, &first), 0u) << first;
}

TEST_P(ShardedStage, PublishMakesEveryRanksParametersTheMasters) {
  const strata_shard* s = nullptr;
  size_t n = 0;
  shards(&s, &n);
  // Stand in for the optimizer: every rank writes new values into the masters it owns.
  const auto updated = [](size_t p, size_t i) { return -TestModel::initial(p, i) - 1.0f; };
  for (size_t k = 0; k < n; ++k) {
    for (uint64_t j = 0; j < s[k].count; ++j)
      s[k].master[j] = updated(s[k].param_index, s[k].offset + j);
  }
  ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
  size_t wrong = 0;
  for (size_t p = 0; p < model_.params(); ++p) {
    for (size_t i = 0; i < model_.size(p); ++i) wrong += model_.data(p)[i] != updated(p, i) ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(host_.bytes(STRATA_MEM_COMM_BUFFERS), expected_fusion_bytes(kOddBuckets, size_, true))
      << "publish's staging buffers are freed";
}

TEST_P(ShardedStage, PublishInSmallPiecesToo) {
  RecordingHost host;
  Zero zero(host, stage_config(GetParam(), R"("allgather_bucket_size": 20)"));
  TestModel model(kOddSizes);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  const strata_shard* s = nullptr;
  size_t n = 0;
  ASSERT_EQ(zero.owned_shards(&s, &n), STRATA_OK) << zero.message();
  for (size_t k = 0; k < n; ++k) {
    for (uint64_t j = 0; j < s[k].count; ++j) s[k].master[j] += 3.0f;
  }
  ASSERT_EQ(zero.publish(), STRATA_OK) << zero.message();
  size_t wrong = 0;
  for (size_t p = 0; p < model.params(); ++p) {
    for (size_t i = 0; i < model.size(p); ++i) {
      wrong += model.data(p)[i] != TestModel::initial(p, i) + 3.0f ? 1 : 0;
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST_P(ShardedStage, MemoryByCategoryIsTheLayoutFormula) {
  const int stage = GetParam();
  const uint64_t partition = expected_partition(kOddBuckets, size_);
  const auto grads_at_rest = stage >= 2 ? partition * sizeof(float) : 0;  // stage 1: transient
  // fp32 at stages 1-2: the masters are the rank's ranges of the parameters, not a second copy.
  // Stage 3 keeps a partition (partitioned parameters have nowhere else to live).
  EXPECT_EQ(host_.bytes(STRATA_MEM_MASTER), stage == 3 ? partition * sizeof(float) : 0u);
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), grads_at_rest);
  EXPECT_EQ(host_.bytes(STRATA_MEM_PARAMS), 0u) << "no group: every parameter persists";
  EXPECT_EQ(host_.bytes(STRATA_MEM_COMM_BUFFERS), expected_fusion_bytes(kOddBuckets, size_, true));
  EXPECT_EQ(host_.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);
  // The engine's finalize asks for the shards (optimizer state), then zeroes the gradients.
  const strata_shard* s = nullptr;
  size_t n = 0;
  shards(&s, &n);
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), partition * sizeof(float));
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), grads_at_rest);
  // Blocking reductions need one fusion buffer pair instead of two.
  RecordingHost other;
  {
    Zero blocking(other, stage_config(stage, R"("overlap_comm": false)"));
    TestModel model(kOddSizes);
    ASSERT_EQ(model.register_all(blocking), STRATA_OK) << blocking.message();
    ASSERT_EQ(blocking.finalize(), STRATA_OK) << blocking.message();
    EXPECT_EQ(other.bytes(STRATA_MEM_COMM_BUFFERS),
              expected_fusion_bytes(kOddBuckets, size_, false));
  }
  for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
    EXPECT_EQ(other.bytes(static_cast<strata_mem_category>(c)), 0u)
        << "category " << c << " leaked";
  }
}

TEST_P(ShardedStage, ReducesSlicesLargerThanTheBucketCapacityInPieces) {
  // reduce_bucket_size 16: every slice of kOddSizes' oversized buckets (up to 1008 elements at
  // one rank) is reduce-scattered in pieces of 16 elements, and the fusion buffers stay that size.
  const int stage = GetParam();
  for (const bool overlap : {true, false}) {
    RecordingHost host;
    Zero zero(host, R"({"stage": )" + std::to_string(stage) +
                        R"(, "reduce_bucket_size": 16, "overlap_comm": )" +
                        (overlap ? "true" : "false") + "}");
    TestModel model(kOddSizes);
    ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
    ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
    EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS),
              (overlap ? 2u : 1u) * (static_cast<uint64_t>(size_) + 1) * 16 * sizeof(float));
    for (int micro = 0; micro < 2; ++micro) {  // stages 2-3 accumulate the pieces' sums
      model.add_micro_batch(micro, rank_, size_);
      const bool boundary = micro == 1;
      for (uint32_t p = 0; p < model.params(); ++p) {
        ASSERT_EQ(zero.grad_ready(p, boundary), STRATA_OK) << zero.message();
      }
      ASSERT_EQ(zero.end_micro_step(boundary), STRATA_OK) << zero.message();
    }
    ASSERT_EQ(zero.finish_reduce(), STRATA_OK) << zero.message();
    const strata_shard* s = nullptr;
    size_t n = 0;
    ASSERT_EQ(zero.owned_shards(&s, &n), STRATA_OK) << zero.message();
    std::string first;
    EXPECT_EQ(wrong_shard_grads(s, n, {0, 1}, &first), 0u)
        << (overlap ? "overlapped: " : "blocking: ") << first;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, ShardedStage, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace strata::zero_test
