// strata_zero stage 0 gradient averaging: buckets, ordering across ranks, accumulation, memory.
#include "test_model.hpp"

#include <algorithm>
#include <random>
#include <sstream>

namespace strata::zero_test {
namespace {

// Odd sizes with reduce_bucket_size 256. Walking them in reverse: [5, 250] (255 elements),
// [129, 33] (162; the empty param joins nothing), [1000] (oversized), [1], [300] (oversized),
// [7]. Six buckets; the four of a single parameter are reduced in place, so the fusion buffers
// hold 255 + 162 = 417 elements.
const std::vector<uint64_t> kReduceSizes = {7, 300, 1, 1000, 0, 33, 129, 250, 5};
constexpr const char* kReduceConfig = R"({"stage": 0, "reduce_bucket_size": 256})";
constexpr size_t kFusedElements = 417;

// Counts gradient elements that differ from the expected average; describes the first.
size_t count_wrong(TestModel& model, const std::vector<int>& steps, std::string* first) {
  size_t wrong = 0;
  for (size_t p = 0; p < model.params(); ++p) {
    for (size_t i = 0; i < model.grad(p).size(); ++i) {
      float expected = 0.0f;
      for (int step : steps) expected += TestModel::average(p, i, step);
      if (model.grad(p)[i] != expected && wrong++ == 0) {
        std::ostringstream out;
        out << "param " << p << " element " << i << ": got " << model.grad(p)[i] << ", expected "
            << expected;
        *first = out.str();
      }
    }
  }
  return wrong;
}

class ZeroStage0Reduce : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(zero_.created(), STRATA_OK) << zero_.message();
    ASSERT_EQ(model_.register_all(zero_), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finalize(), STRATA_OK) << zero_.message();
  }
  const int rank_ = CommEnvironment::rank();
  const int size_ = CommEnvironment::size();
  RecordingHost host_;
  Zero zero_{host_, kReduceConfig};
  TestModel model_{kReduceSizes};
};

TEST_F(ZeroStage0Reduce, AveragesExactlyWhateverOrderAndSubsetEachRankReports) {
  for (int step = 0; step < 3; ++step) {
    model_.add_micro_batch(step, rank_, size_);
    // Each rank reports a different subset of the parameters, in its own shuffled order: the
    // plugin must still issue the same collectives in the same order everywhere.
    std::vector<uint32_t> order;
    for (uint32_t p = 0; p < model_.params(); ++p) {
      if ((p + static_cast<uint32_t>(rank_ + step)) % 3 != 0) order.push_back(p);
    }
    std::shuffle(order.begin(), order.end(),
                 std::mt19937(static_cast<unsigned>(rank_ * 31 + step)));
    for (uint32_t p : order) EXPECT_EQ(zero_.grad_ready(p, true), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();

    std::string first;
    EXPECT_EQ(count_wrong(model_, {step}, &first), 0u) << "step " << step << ": " << first;
    EXPECT_TRUE(identical_on_all_ranks(model_.all_grads())) << "step " << step;
    ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
    for (size_t p = 0; p < model_.params(); ++p) {
      EXPECT_TRUE(std::all_of(model_.grad(p).begin(), model_.grad(p).end(),
                              [](float g) { return g == 0.0f; }))
          << "param " << p << " not zeroed";
    }
  }
}

TEST_F(ZeroStage0Reduce, NonBoundaryMicroStepsOnlyAccumulate) {
  TestModel local(kReduceSizes);  // what this rank alone has accumulated
  for (int micro = 0; micro < 2; ++micro) {
    model_.add_micro_batch(micro, rank_, size_);
    local.add_micro_batch(micro, rank_, size_);
    for (uint32_t p = static_cast<uint32_t>(model_.params()); p-- > 0;) {
      EXPECT_EQ(zero_.grad_ready(p, false), STRATA_OK) << zero_.message();
    }
    EXPECT_EQ(model_.all_grads(), local.all_grads()) << "micro-step " << micro << " was reduced";
  }
  model_.add_micro_batch(2, rank_, size_);
  for (uint32_t p = static_cast<uint32_t>(model_.params()); p-- > 0;) {
    EXPECT_EQ(zero_.grad_ready(p, true), STRATA_OK) << zero_.message();
  }
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  std::string first;
  EXPECT_EQ(count_wrong(model_, {0, 1, 2}, &first), 0u) << first;
}

TEST_F(ZeroStage0Reduce, FinishReduceAloneReducesEveryParameter) {
  model_.add_micro_batch(4, rank_, size_);
  ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
  std::string first;
  EXPECT_EQ(count_wrong(model_, {4}, &first), 0u) << first;
}

TEST(ZeroStage0Buffers, FusionBuffersAreAccountedAsCommBuffers) {
  RecordingHost host;
  {
    Zero zero(host, kReduceConfig);
    TestModel model(kReduceSizes);
    ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
    ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
    EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS), 0u);
    ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
    EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS), kFusedElements * sizeof(float));
    const auto info = host.lines(STRATA_LOG_INFO);
    ASSERT_EQ(info.size(), 1u);
    EXPECT_NE(info[0].text.find("6 buckets ("), std::string::npos) << info[0].text;
    EXPECT_NE(info[0].text.find("4 reduced in place"), std::string::npos) << info[0].text;
  }
  EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS), 0u) << "fusion buffers leaked";
}

TEST(ZeroStage0Buffers, DefaultBucketHoldsASmallModelWhole) {
  RecordingHost host;
  Zero zero(host, "{}");
  TestModel model(kReduceSizes);
  ASSERT_EQ(zero.created(), STRATA_OK) << zero.message();
  ASSERT_EQ(model.register_all(zero), STRATA_OK) << zero.message();
  ASSERT_EQ(zero.finalize(), STRATA_OK) << zero.message();
  uint64_t total = 0;
  for (uint64_t n : kReduceSizes) total += n;
  EXPECT_EQ(host.bytes(STRATA_MEM_COMM_BUFFERS), total * sizeof(float));
  const auto info = host.lines(STRATA_LOG_INFO);
  ASSERT_EQ(info.size(), 1u);
  EXPECT_NE(info[0].text.find("1 bucket ("), std::string::npos) << info[0].text;
  EXPECT_NE(info[0].text.find("1048576"), std::string::npos) << info[0].text;
}

}  // namespace
}  // namespace strata::zero_test
