// Stage 3: partitioned parameters, gather/release and views, persistence, prefetch, the
// max-live limit, retention (max reuse distance), and the gather/release sequence check (also
// at stage 2).
#include "sharded_support.hpp"

#include <algorithm>
#include <cstdlib>

namespace strata::zero_test {
namespace {

// With param_persistence_threshold 100, parameters 1 (300), 3 (1000), 6 (129) and 7 (250) are
// partitioned. Buckets never mix groups nor whole with partitioned parameters; in reverse order:
// [8] 5, [7] 250, [6] 129, [5] 33, [3] 1000, [2] 1, [1] 300, [0] 7 (param 4 is empty).
const std::vector<uint64_t> kBuckets = {5, 250, 129, 33, 1000, 1, 300, 7};
const std::vector<uint64_t> kPartitioned = {250, 129, 1000, 300};
const std::vector<uint32_t> kPartitionedParams = {1, 3, 6, 7};

std::string config(const std::string& extra = "") {
  return stage_config(3, R"("stage3_param_persistence_threshold": 100)" +
                             (extra.empty() ? "" : ", " + extra));
}

// Elements a gather of each group holds (N*S per partitioned bucket).
uint64_t gathered_elements(uint32_t group, int n) {
  const auto ranks = static_cast<uint64_t>(n);
  switch (group) {
    case 0: return ranks * expected_slice(300, n);
    case 1: return ranks * expected_slice(1000, n);
    default: return ranks * (expected_slice(250, n) + expected_slice(129, n));
  }
}

class Stage3 : public ::testing::Test {
 protected:
  // Spare buffers off unless `spares_` (set by the test that checks them): the other tests check
  // the exact bytes of the buffers in use.
  void make(const std::string& cfg, bool host_grads = false) {
    zero_.reset();
    setenv("STRATA_ZERO_SPARE_BUFFERS", spares_ ? "1" : "0", 1);
    zero_ = std::make_unique<Zero>(host_, cfg);
    model_ = std::make_unique<TestModel>(kOddSizes, host_grads);
    ASSERT_EQ(zero_->created(), STRATA_OK) << zero_->message();
    ASSERT_EQ(model_->register_all(*zero_), STRATA_OK) << zero_->message();
    for (uint32_t g = 0; g < kGroups.size(); ++g) {
      ASSERT_EQ(zero_->define_group(g, ("g" + std::to_string(g)).c_str(), kGroups[g]), STRATA_OK);
    }
    ASSERT_EQ(zero_->finalize(), STRATA_OK) << zero_->message();
    base_params_ = host_.bytes(STRATA_MEM_PARAMS);
  }
  // Forward (gather, read, release) then backward (gather for backward, write, release).
  void micro_batch(int micro, bool boundary) {
    for (uint32_t g = 0; g < 3; ++g) {
      ASSERT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
      ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
    }
    for (uint32_t g = 3; g-- > 0;) {
      ASSERT_EQ(zero_->gather(g, true), STRATA_OK) << zero_->message();
      for (uint32_t p : kGroups[g]) {
        if (model_->size(p) == 0) continue;
        float* grad = zero_->grad_of(p);
        ASSERT_NE(grad, nullptr);
        TestModel::add_contribution(grad, p, model_->size(p), micro, rank_, size_);
      }
      ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
    }
    ASSERT_EQ(zero_->end_micro_step(boundary), STRATA_OK) << zero_->message();
  }
  void step() {
    ASSERT_EQ(zero_->finish_reduce(), STRATA_OK) << zero_->message();
    ASSERT_EQ(zero_->publish(), STRATA_OK) << zero_->message();
    ASSERT_EQ(zero_->zero_grad(), STRATA_OK) << zero_->message();
  }
  size_t live_params() { return host_.bytes(STRATA_MEM_PARAMS) - base_params_; }

  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  RecordingHost host_;
  std::unique_ptr<Zero> zero_;
  std::unique_ptr<TestModel> model_;
  size_t base_params_ = 0;
  bool spares_ = false;
};

// fp32: the parameter partition is the master partition (one buffer), so partitioned parameters
// cost MASTER bytes once and no PARAMS bytes until gathered.
TEST_F(Stage3, MemoryByCategoryIsTheLayoutFormula) {
  make(config());
  EXPECT_EQ(host_.bytes(STRATA_MEM_MASTER), expected_partition(kBuckets, size_) * sizeof(float));
  EXPECT_EQ(host_.bytes(STRATA_MEM_GRADS), expected_partition(kBuckets, size_) * sizeof(float));
  EXPECT_EQ(host_.bytes(STRATA_MEM_PARAMS), 0u) << "an fp32 parameter partition would duplicate "
                                                   "the masters";
  EXPECT_EQ(host_.bytes(STRATA_MEM_COMM_BUFFERS), expected_fusion_bytes(kBuckets, size_, true));
  const auto info = host_.lines(STRATA_LOG_INFO);
  ASSERT_EQ(info.size(), 1u);
  EXPECT_TRUE(contains(info[0].text, "8 buckets")) << info[0].text;
}

TEST_F(Stage3, TheBareAliasSetsThePersistenceThresholdToo) {
  make(stage_config(3, R"("param_persistence_threshold": 100)"));
  EXPECT_EQ(zero_->data_of(1), nullptr) << "300 elements: partitioned under threshold 100";
  EXPECT_EQ(zero_->data_of(0), model_->data(0).data()) << "7 elements: whole";
}

TEST_F(Stage3, ViewsShowGatheredParametersOnly) {
  make(config());
  for (uint32_t p = 0; p < model_->params(); ++p) {
    const bool partitioned = std::find(kPartitionedParams.begin(), kPartitionedParams.end(), p) !=
                             kPartitionedParams.end();
    EXPECT_EQ(zero_->data_of(p), partitioned ? nullptr : model_->data(p).data()) << "param " << p;
  }
  ASSERT_EQ(zero_->gather(1), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), gathered_elements(1, size_) * sizeof(float));
  const float* w = zero_->data_of(3);
  ASSERT_NE(w, nullptr);
  size_t wrong = 0;
  for (size_t i = 0; i < 1000; ++i) wrong += w[i] != TestModel::initial(3, i) ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "gathered values differ from the registered ones";
  EXPECT_EQ(zero_->data_of(1), nullptr) << "group 0 is not gathered";
  EXPECT_EQ(zero_->grad_of(3), nullptr) << "a forward gather lends no gradient";
  ASSERT_EQ(zero_->release(1), STRATA_OK) << zero_->message();
  EXPECT_EQ(zero_->data_of(3), nullptr);
  EXPECT_EQ(live_params(), 0u);
}

// Released gathered buffers and lent gradient buffers are kept as spares for the next gather of
// the same size (no fresh pages per gather), but never beyond what the buffers in use once held
// together, and none outlives the micro-batch; the values trained are the same.
TEST_F(Stage3, SpareBuffersNeverRaiseThePeakAndEndWithTheMicroBatch) {
  struct Run {
    size_t peak = 0;              // of PARAMS + GRADS bytes during the steps
    size_t allocations = 0;       // made during the steps
    std::vector<float> gathered;  // every partitioned parameter after three steps
  };
  const auto run = [&](bool spares) {
    spares_ = spares;
    // No retention, so every release gives its buffers back; each group is gathered twice in
    // forward (a model that applies its layers twice), so buffers of one size recur.
    make(config(R"("stage3_max_reuse_distance": 0)"));
    Run r;
    const size_t base = host_.bytes(STRATA_MEM_PARAMS) + host_.bytes(STRATA_MEM_GRADS);
    host_.watch_peak((1u << STRATA_MEM_PARAMS) | (1u << STRATA_MEM_GRADS));
    const size_t allocations = host_.allocations();
    for (int s = 0; s < 3; ++s) {
      for (uint32_t g = 0; g < 3; ++g) {
        EXPECT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
        EXPECT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
      }
      micro_batch(0, true);
      EXPECT_EQ(host_.bytes(STRATA_MEM_PARAMS) + host_.bytes(STRATA_MEM_GRADS), base)
          << "spares " << spares << ", step " << s << ": buffers outlive the micro-batch";
      step();
    }
    r.peak = host_.watched_peak() - base;
    r.allocations = host_.allocations() - allocations;
    for (uint32_t g = 0; g < 3; ++g) {
      EXPECT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
      for (uint32_t p : kPartitionedParams) {
        if (std::find(kGroups[g].begin(), kGroups[g].end(), p) == kGroups[g].end()) continue;
        const float* w = zero_->data_of(p);
        if (w != nullptr) r.gathered.insert(r.gathered.end(), w, w + model_->size(p));
      }
      EXPECT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
    }
    return r;
  };
  const Run without = run(false);
  const Run with = run(true);
  EXPECT_GT(without.peak, 0u);
  EXPECT_LE(with.peak, without.peak) << "spares raised the peak of gathered and lent buffers";
  EXPECT_LT(with.allocations, without.allocations) << "no buffer was reused";
  ASSERT_EQ(with.gathered.size(), without.gathered.size());
  EXPECT_EQ(with.gathered, without.gathered) << "spare buffers changed the values trained";
}

TEST_F(Stage3, TrainingStepsReduceAndPublishThroughThePartitions) {
  make(config());
  for (int micro = 0; micro < 2; ++micro) micro_batch(micro, micro == 1);
  ASSERT_EQ(zero_->finish_reduce(), STRATA_OK) << zero_->message();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero_->owned_shards(&shards, &count), STRATA_OK) << zero_->message();
  std::string first;
  EXPECT_EQ(wrong_shard_grads(shards, count, {0, 1}, &first), 0u) << first;
  EXPECT_EQ(coverage_errors(shards, count, *model_), 0u);
  for (size_t k = 0; k < count; ++k) {
    for (uint64_t j = 0; j < shards[k].count; ++j) shards[k].master[j] += 2.0f;
  }
  ASSERT_EQ(zero_->publish(), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->zero_grad(), STRATA_OK) << zero_->message();
  size_t wrong = 0;
  for (uint32_t g = 0; g < 3; ++g) {
    ASSERT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
    for (uint32_t p : kGroups[g]) {
      const float* w = zero_->data_of(p);
      for (size_t i = 0; i < model_->size(p); ++i) {
        wrong += w[i] != TestModel::initial(p, i) + 2.0f ? 1 : 0;
      }
    }
    ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
  }
  EXPECT_EQ(wrong, 0u) << "published parameters (whole and partitioned) differ";
}

TEST_F(Stage3, TheNextGroupsOfTheLastStepArePrefetched) {
  make(config());
  micro_batch(0, true);  // records the trace g0 g1 g2 g2 g1 g0
  step();
  ASSERT_EQ(zero_->gather(0), STRATA_OK) << zero_->message();
  const uint64_t all = gathered_elements(0, size_) + gathered_elements(1, size_) +
                       gathered_elements(2, size_);
  EXPECT_EQ(live_params(), all * sizeof(float)) << "g1 and g2 should be in flight";
  ASSERT_EQ(zero_->release(0), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->gather(1), STRATA_OK) << zero_->message();
  const float* w = zero_->data_of(3);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w[999], TestModel::initial(3, 999)) << "a prefetched group reads right";
  ASSERT_EQ(zero_->release(1), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->end_micro_step(false), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), 0u) << "prefetched g2 is dropped at the end of the micro-batch";
}

TEST_F(Stage3, PrefetchStaysWithinItsBucketSize) {
  make(config("\"stage3_prefetch_bucket_size\": " + std::to_string(gathered_elements(1, size_))));
  micro_batch(0, true);
  step();
  ASSERT_EQ(zero_->gather(0), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(),
            (gathered_elements(0, size_) + gathered_elements(1, size_)) * sizeof(float));
  ASSERT_EQ(zero_->release(0), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->end_micro_step(true), STRATA_OK) << zero_->message();
}

// stage3_max_live_parameters bounds prefetching and retention only: a gather the model asks for
// always happens (DeepSpeed's meaning), even when it alone exceeds the limit.
TEST_F(Stage3, AGatherOverMaxLiveParametersHappensAnyway) {
  const uint64_t limit = gathered_elements(1, size_);  // the largest group
  make(config("\"max_live_parameters\": " + std::to_string(limit)));
  for (int s = 0; s < 2; ++s) {  // the second step follows the trace of the first
    micro_batch(0, true);
    step();
  }
  ASSERT_EQ(zero_->gather(1), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), limit * sizeof(float)) << "nothing is prefetched past the limit";
  ASSERT_EQ(zero_->gather(0), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), (limit + gathered_elements(0, size_)) * sizeof(float));
  size_t wrong = 0;
  for (uint32_t p : {1u, 3u}) {
    const float* w = zero_->data_of(p);
    ASSERT_NE(w, nullptr) << "param " << p;
    for (size_t i = 0; i < model_->size(p); ++i) wrong += w[i] != TestModel::initial(p, i);
  }
  EXPECT_EQ(wrong, 0u) << "values gathered over the limit differ";
  ASSERT_EQ(zero_->release(0), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->release(1), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->end_micro_step(true), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), 0u);
}

TEST_F(Stage3, AGatherOverTheLimitDropsPrefetchesFirst) {
  const uint64_t limit = gathered_elements(0, size_) + gathered_elements(1, size_);
  make(config("\"max_live_parameters\": " + std::to_string(limit) +
              R"(, "stage3_max_reuse_distance": 0)"));
  micro_batch(0, true);
  step();
  ASSERT_EQ(zero_->gather(0), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), limit * sizeof(float)) << "g1 should be prefetched up to the limit";
  // Off the trace: g2 does not fit beside g0 and the prefetched g1, so g1 goes.
  ASSERT_EQ(zero_->gather(2), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(),
            (gathered_elements(0, size_) + gathered_elements(2, size_)) * sizeof(float));
  const float* w = zero_->data_of(7);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w[249], TestModel::initial(7, 249));
  ASSERT_EQ(zero_->release(2), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->release(0), STRATA_OK) << zero_->message();
  ASSERT_EQ(zero_->end_micro_step(true), STRATA_OK) << zero_->message();
}

// Retention: with the default stage3_max_reuse_distance every group of the trace g0 g1 g2 g2 g1 g0
// is gathered again within it, so a release keeps its buffers until the micro-batch ends.
TEST_F(Stage3, GroupsGatheredAgainSoonStayCachedUntilTheMicroBatchEnds) {
  make(config());
  micro_batch(0, true);
  step();
  const uint64_t all = gathered_elements(0, size_) + gathered_elements(1, size_) +
                       gathered_elements(2, size_);
  for (uint32_t g = 0; g < 3; ++g) {
    ASSERT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
    ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
  }
  EXPECT_EQ(live_params(), all * sizeof(float)) << "released groups should stay cached";
  EXPECT_EQ(zero_->data_of(3), nullptr) << "a cached group is released for the host";
  for (uint32_t g = 3; g-- > 0;) {
    ASSERT_EQ(zero_->gather(g, true), STRATA_OK) << zero_->message();
    for (uint32_t p : kGroups[g]) {
      if (model_->size(p) == 0) continue;
      const float* w = zero_->data_of(p);
      ASSERT_NE(w, nullptr) << "param " << p;
      size_t wrong = 0;
      for (size_t i = 0; i < model_->size(p); ++i) wrong += w[i] != TestModel::initial(p, i);
      EXPECT_EQ(wrong, 0u) << "param " << p << " served from the cache differs";
    }
    ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
  }
  EXPECT_EQ(live_params(), 0u) << "the last release of each group frees it";
  ASSERT_EQ(zero_->end_micro_step(true), STRATA_OK) << zero_->message();
}

TEST_F(Stage3, RetentionStaysWithinTheReuseDistance) {
  // Distance 1: only g2, gathered again right after its release, is kept. (No prefetch: it would
  // fetch g0 again ahead of its backward gather.)
  make(config(R"("stage3_max_reuse_distance": 1, "stage3_prefetch_bucket_size": 0)"));
  micro_batch(0, true);
  step();
  for (uint32_t g = 0; g < 3; ++g) {
    ASSERT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
    ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
  }
  EXPECT_EQ(live_params(), gathered_elements(2, size_) * sizeof(float));
  ASSERT_EQ(zero_->end_micro_step(false), STRATA_OK) << zero_->message();
  EXPECT_EQ(live_params(), 0u) << "cached groups are dropped at the end of the micro-batch";
}

TEST_F(Stage3, RetentionStaysWithinMaxLiveParameters) {
  const uint64_t limit = gathered_elements(1, size_) + gathered_elements(2, size_);
  make(config("\"max_live_parameters\": " + std::to_string(limit) +
              R"(, "stage3_prefetch_bucket_size": 0)"));
  micro_batch(0, true);
  step();
  for (uint32_t g = 0; g < 3; ++g) {
    ASSERT_EQ(zero_->gather(g), STRATA_OK) << zero_->message();
    EXPECT_LE(live_params(), std::max(limit, gathered_elements(g, size_)) * sizeof(float))
        << "after gathering g" << g;
    ASSERT_EQ(zero_->release(g), STRATA_OK) << zero_->message();
    EXPECT_LE(live_params(), limit * sizeof(float)) << "after releasing g" << g;
  }
  ASSERT_EQ(zero_->end_micro_step(false), STRATA_OK) << zero_->message();
}

TEST_F(Stage3, EveryGroupMustBeReleasedBeforeTheMicroBatchEnds) {
  make(config());
  ASSERT_EQ(zero_->gather(2, true), STRATA_OK) << zero_->message();
  EXPECT_EQ(zero_->end_micro_step(false), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(zero_->message(), "group 'g2' (#2) is still gathered at the end of the micro-batch"))
      << zero_->message();
}

class SequenceCheck : public ::testing::TestWithParam<int> {};

TEST_P(SequenceCheck, DivergingRanksFailAlikeNamingRanksAndGroups) {
  const int rank = CommEnvironment::rank();
  if (CommEnvironment::size() < 2) GTEST_SKIP() << "needs two ranks";
  RecordingHost host;
  Zero zero(host, GetParam() == 3 ? config() : stage_config(2));
  TestModel model(kOddSizes, false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  for (uint32_t g = 0; g < kGroups.size(); ++g) {
    ASSERT_EQ(zero.define_group(g, ("g" + std::to_string(g)).c_str(), kGroups[g]), STRATA_OK);
  }
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.gather(0), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.release(0), STRATA_OK) << zero.message();
  // Call 3: rank 1 gathers g2 for backward while everyone else gathers g1.
  EXPECT_EQ(zero.gather(rank == 1 ? 2 : 1, rank == 1), STRATA_ERR_MISMATCH);
  EXPECT_EQ(zero.message(),
            "gather/release sequence diverges at call 3 of this step: rank 0 gathers group 'g1' "
            "(#1), rank 1 gathers group 'g2' (#2) for backward (every rank must gather and "
            "release the same groups in the same order)");
}

TEST_P(SequenceCheck, ARankEndingTheMicroBatchEarlyIsNamed) {
  const int rank = CommEnvironment::rank();
  if (CommEnvironment::size() < 2) GTEST_SKIP() << "needs two ranks";
  RecordingHost host;
  Zero zero(host, GetParam() == 3 ? config() : stage_config(2));
  TestModel model(kOddSizes, false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  for (uint32_t g = 0; g < kGroups.size(); ++g) {
    ASSERT_EQ(zero.define_group(g, ("g" + std::to_string(g)).c_str(), kGroups[g]), STRATA_OK);
  }
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  const strata_status s = rank == 0 ? zero.release(0) : zero.end_micro_step(false);
  EXPECT_EQ(s, STRATA_ERR_MISMATCH);
  EXPECT_TRUE(contains(zero.message(), "at call 1 of this step: rank 0 releases group 'g0' (#0), "
                                       "rank 1 ends the micro-batch"))
      << zero.message();
}

INSTANTIATE_TEST_SUITE_P(Stages, SequenceCheck, ::testing::Values(2, 3),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

}  // namespace
}  // namespace strata::zero_test
