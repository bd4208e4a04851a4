// Parameter groups (ABI 1.1) at every stage: definition checks, views, gradient buffers the plugin
// provides (whole at stages 0-1, lent per micro-batch at stages 2-3), and gather/release rules.
#include "sharded_support.hpp"

#include <algorithm>

namespace strata::zero_test {
namespace {

strata_status define_groups(Zero& zero) {
  for (uint32_t g = 0; g < kGroups.size(); ++g) {
    const strata_status s = zero.define_group(g, ("g" + std::to_string(g)).c_str(), kGroups[g]);
    if (s != STRATA_OK) return s;
  }
  return STRATA_OK;
}

uint64_t total_elements() {
  uint64_t n = 0;
  for (uint64_t c : kOddSizes) n += c;
  return n;
}

TEST(ZeroGroups, DefinitionsAreChecked) {
  RecordingHost host;
  Zero zero(host, "{}");
  TestModel model(kOddSizes);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.define_group(1, "a", {0}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "expected group id 0, got 1")) << zero.message();
  EXPECT_EQ(zero.define_group(0, "", {0}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "non-empty name")) << zero.message();
  EXPECT_EQ(zero.define_group(0, "a", {0, 99}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "99")) << zero.message();
  EXPECT_EQ(zero.define_group(0, "a", {1, 1}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "layer1.weight is already in this group twice"))
      << zero.message();
  ASSERT_EQ(zero.define_group(0, "a", {0, 1}), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.define_group(1, "a", {2}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "'a' is already defined")) << zero.message();
  EXPECT_EQ(zero.define_group(1, "b", {2, 1}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "layer1.weight is already in group 'a'")) << zero.message();
  ASSERT_EQ(zero.define_group(1, "b", {2}), STRATA_OK) << "a failed definition changes nothing";
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.define_group(2, "c", {3}), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "after finalize")) << zero.message();
}

class WholeGradStages : public ::testing::TestWithParam<int> {};

// Stages 0-1 keep whole gradients: a parameter without a host buffer gets a whole one of ours,
// valid from finalize on, and gather/release are local bookkeeping.
TEST_P(WholeGradStages, ParametersWithoutGradGetAWholeBufferOfOurs) {
  RecordingHost host;
  Zero zero(host, stage_config(GetParam()));
  TestModel model(kOddSizes, /*host_grads=*/false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(define_groups(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), total_elements() * sizeof(float));
  const int rank = CommEnvironment::rank(), size = CommEnvironment::size();
  for (uint32_t p = 0; p < model.params(); ++p) {
    strata_param_view view{};
    ASSERT_EQ(zero.param_view(p, &view), STRATA_OK) << zero.message();
    EXPECT_EQ(view.data, model.data(p).data()) << "the host's data is the live parameter";
    EXPECT_EQ(view.count, model.size(p));
    EXPECT_EQ(view.dtype, STRATA_F32);
    if (model.size(p) == 0) continue;
    ASSERT_NE(view.grad, nullptr) << "param " << p;
    TestModel::add_contribution(static_cast<float*>(view.grad), p, model.size(p), 0, rank, size);
  }
  ASSERT_EQ(zero.gather(1, true), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.gather(1), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "group 'g1' (#1) is already gathered")) << zero.message();
  EXPECT_EQ(zero.end_micro_step(true), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "group 'g1' (#1) is still gathered")) << zero.message();
  ASSERT_EQ(zero.release(1), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.release(1), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "is not gathered")) << zero.message();
  EXPECT_EQ(zero.gather(7), STRATA_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(zero.end_micro_step(true), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finish_reduce(), STRATA_OK) << zero.message();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero.owned_shards(&shards, &count), STRATA_OK) << zero.message();
  std::string first;
  EXPECT_EQ(wrong_shard_grads(shards, count, {0}, &first), 0u) << first;
}

INSTANTIATE_TEST_SUITE_P(Stages, WholeGradStages, ::testing::Values(0, 1),
                         [](const auto& info) { return "stage" + std::to_string(info.param); });

class LentGradStages : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  int stage() const { return std::get<0>(GetParam()); }
  std::string config() const {
    return stage_config(stage(), std::string(R"("contiguous_gradients": )") +
                                     (std::get<1>(GetParam()) ? "true" : "false"));
  }
};

TEST_P(LentGradStages, ParametersWithoutGradOrGroupAreRejected) {
  RecordingHost host;
  Zero zero(host, config());
  TestModel model(kOddSizes, false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.define_group(0, "g0", {0, 1, 2, 3, 4, 5, 6, 7}), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.finalize(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "layer8.weight has no gradient buffer and is in no group"))
      << zero.message();
}

// Each micro-batch: gather every group for backward, in reverse, write into the lent buffers,
// release. The lent memory comes and goes; the partition accumulates the exact averages.
TEST_P(LentGradStages, LentBuffersAccumulateIntoThePartition) {
  RecordingHost host;
  Zero zero(host, config());
  TestModel model(kOddSizes, false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(define_groups(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  const int rank = CommEnvironment::rank(), size = CommEnvironment::size();
  const size_t partition_bytes = host.bytes(STRATA_MEM_GRADS);
  EXPECT_GT(partition_bytes, 0u);
  for (int micro = 0; micro < 3; ++micro) {
    for (uint32_t g = 3; g-- > 0;) {
      for (uint32_t p : kGroups[g]) EXPECT_EQ(zero.grad_of(p), nullptr) << "lent before gather";
      ASSERT_EQ(zero.gather(g, true), STRATA_OK) << zero.message();
      EXPECT_GT(host.bytes(STRATA_MEM_GRADS), partition_bytes) << "group " << g;
      for (uint32_t p : kGroups[g]) {
        float* grad = zero.grad_of(p);
        if (model.size(p) == 0) continue;
        ASSERT_NE(grad, nullptr) << "param " << p;
        EXPECT_TRUE(std::all_of(grad, grad + model.size(p), [](float v) { return v == 0.0f; }));
        TestModel::add_contribution(grad, p, model.size(p), micro, rank, size);
      }
      ASSERT_EQ(zero.release(g), STRATA_OK) << zero.message();
      for (uint32_t p : kGroups[g]) EXPECT_EQ(zero.grad_of(p), nullptr) << "lent after release";
    }
    ASSERT_EQ(zero.end_micro_step(micro == 2), STRATA_OK) << zero.message();
    EXPECT_EQ(host.bytes(STRATA_MEM_GRADS), partition_bytes)
        << "lent buffers outlived the micro-batch";
  }
  ASSERT_EQ(zero.finish_reduce(), STRATA_OK) << zero.message();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero.owned_shards(&shards, &count), STRATA_OK) << zero.message();
  std::string first;
  EXPECT_EQ(wrong_shard_grads(shards, count, {0, 1, 2}, &first), 0u) << first;
  EXPECT_EQ(coverage_errors(shards, count, model), 0u);
}

TEST_P(LentGradStages, AGroupIsGatheredForBackwardOncePerMicroBatch) {
  RecordingHost host;
  Zero zero(host, config());
  TestModel model(kOddSizes, false);
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(define_groups(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.gather(2), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.grad_of(7), nullptr) << "a forward gather lends nothing";
  ASSERT_EQ(zero.release(2), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.gather(2, true), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.release(2), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.gather(2, true), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero.message(), "already finished its gradient in this micro-batch"))
      << zero.message();
}

INSTANTIATE_TEST_SUITE_P(Stages, LentGradStages,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Bool()),
                         [](const auto& info) {
                           return "stage" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_contiguous" : "_separate");
                         });

}  // namespace
}  // namespace strata::zero_test
