// strata_zero call order, argument checks, owned shards, publish and zero_grad.
#include "test_model.hpp"

#include <algorithm>
#include <cstring>

namespace strata::zero_test {
namespace {

const std::vector<uint64_t> kLifecycleSizes = {3, 17, 64};
constexpr const char* kLifecycleConfig = R"({"reduce_bucket_size": 32})";

class ZeroLifecycle : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message(); }
  void finalize_model() {
    ASSERT_EQ(model_.register_all(zero_), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  RecordingHost host_;
  Zero zero_{host_, kLifecycleConfig};
  TestModel model_{kLifecycleSizes};
};

TEST_F(ZeroLifecycle, IndicesMustBeDenseFromZero) {
  std::vector<float> d(4), g(4);
  EXPECT_EQ(zero_.register_param(1, "skipped", d.data(), g.data(), 4), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero_.message(), "expected index 0, got 1")) << zero_.message();
}

TEST_F(ZeroLifecycle, ParametersOfOtherDtypesThanF32F16Bf16AreUnsupportedAndNamed) {
  std::vector<double> d(4), g(4);
  EXPECT_EQ(zero_.register_param(0, "embed.weight", d.data(), g.data(), 4, STRATA_F64),
            STRATA_ERR_UNSUPPORTED);
  EXPECT_TRUE(contains(zero_.message(), "embed.weight")) << zero_.message();
  EXPECT_TRUE(contains(zero_.message(), "f64")) << zero_.message();
}

TEST_F(ZeroLifecycle, CallsBeforeFinalizeAreRejected) {
  EXPECT_EQ(zero_.grad_ready(0, true), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero_.message(), "before finalize")) << zero_.message();
  EXPECT_EQ(zero_.finish_reduce(), STRATA_ERR_INVALID_ARGUMENT);
}

TEST_F(ZeroLifecycle, RegisterAfterFinalizeIsRejected) {
  finalize_model();
  std::vector<float> d(4), g(4);
  EXPECT_EQ(zero_.register_param(3, "late", d.data(), g.data(), 4), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero_.message(), "after finalize")) << zero_.message();
}

TEST_F(ZeroLifecycle, OutOfRangeIndexIsNamed) {
  finalize_model();
  EXPECT_EQ(zero_.grad_ready(99, true), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero_.message(), "99")) << zero_.message();
}

TEST_F(ZeroLifecycle, ReadyTwiceInOneStepNamesTheParameter) {
  finalize_model();
  EXPECT_EQ(zero_.grad_ready(1, false), STRATA_OK);
  EXPECT_EQ(zero_.grad_ready(1, false), STRATA_OK) << "non-boundary calls only accumulate";
  EXPECT_EQ(zero_.grad_ready(1, true), STRATA_OK) << zero_.message();
  EXPECT_EQ(zero_.grad_ready(1, true), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(zero_.message(), "layer1.weight")) << zero_.message();
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  // A new step begins after finish_reduce: the same parameter may be reported again.
  EXPECT_EQ(zero_.grad_ready(1, true), STRATA_OK) << zero_.message();
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
}

TEST_F(ZeroLifecycle, OwnedShardsAreTheHostsWholeParameters) {
  finalize_model();
  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(zero_.owned_shards(&shards, &count), STRATA_OK) << zero_.message();
  ASSERT_EQ(count, kLifecycleSizes.size());
  for (size_t p = 0; p < count; ++p) {
    EXPECT_EQ(shards[p].param_index, p);
    EXPECT_EQ(shards[p].offset, 0u);
    EXPECT_EQ(shards[p].count, kLifecycleSizes[p]);
    EXPECT_EQ(shards[p].master, model_.data(p).data());
    EXPECT_EQ(shards[p].grad, model_.grad(p).data());
  }
}

TEST_F(ZeroLifecycle, PublishLeavesParametersAsTheOptimizerWroteThem) {
  finalize_model();
  const std::vector<float> before = model_.data(2);
  ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
  EXPECT_EQ(model_.data(2), before);
}

TEST_F(ZeroLifecycle, ZeroGradClearsGradientsAndReadyMarks) {
  finalize_model();
  model_.add_micro_batch(0, CommEnvironment::rank(), CommEnvironment::size());
  EXPECT_EQ(zero_.grad_ready(0, true), STRATA_OK) << zero_.message();
  // No finish_reduce: whatever started is completed, then everything is zeroed.
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  for (size_t p = 0; p < model_.params(); ++p) {
    EXPECT_TRUE(std::all_of(model_.grad(p).begin(), model_.grad(p).end(),
                            [](float g) { return g == 0.0f; })) << "param " << p;
  }
  EXPECT_EQ(zero_.grad_ready(0, true), STRATA_OK) << "ready marks survived zero_grad";
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
}

TEST_F(ZeroLifecycle, ZeroGradWithBucketsInFlightCompletesThemFirst) {
  finalize_model();
  for (uint32_t p = 0; p < model_.params(); ++p) EXPECT_EQ(zero_.grad_ready(p, true), STRATA_OK);
  ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  model_.add_micro_batch(1, CommEnvironment::rank(), CommEnvironment::size());
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  EXPECT_EQ(model_.grad(2)[5], TestModel::average(2, 5, 1));
}

TEST(ZeroAgreement, RanksWithDifferentParametersFailAtFinalize) {
  if (CommEnvironment::size() < 2) GTEST_SKIP() << "needs two ranks";
  RecordingHost host;
  Zero zero(host, "{}");
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  TestModel model(CommEnvironment::rank() == 0 ? std::vector<uint64_t>{4, 5, 6}
                                               : std::vector<uint64_t>{4, 5});
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  EXPECT_EQ(zero.finalize(), STRATA_ERR_MISMATCH);
  EXPECT_TRUE(contains(zero.message(), "parameter count")) << zero.message();
}

}  // namespace
}  // namespace strata::zero_test
