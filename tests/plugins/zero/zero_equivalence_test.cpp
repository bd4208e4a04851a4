// Stages 1-3 train like stage 0: a plugin-level training loop (gradients that depend on the
// parameters, gradient accumulation, global-norm clipping, SGD on the owned shards) run side by
// side at stage 0 and at stage s ends with the same parameters within 1e-6 relative.
#include "sharded_support.hpp"

#include <cmath>
#include <cstring>

namespace strata::zero_test {
namespace {

constexpr int kSteps = 12;
constexpr int kAccumulation = 2;
constexpr double kClipping = 2.0;
constexpr float kLearningRate = 0.05f;

// One rank's replica of a run: the plugin, the model and the host's side of the training loop.
class TrainingRun {
 public:
  TrainingRun(int stage, bool host_grads, const std::string& extra)
      : zero_(host_, stage_config(stage, R"("stage3_param_persistence_threshold": 100)" +
                                             (extra.empty() ? "" : ", " + extra))),
        model_(kOddSizes, host_grads), host_grads_(host_grads) {
    for (size_t p = 0; p < model_.params(); ++p) {
      for (size_t i = 0; i < model_.size(p); ++i) {
        model_.data(p)[i] = 0.5f * std::sin(static_cast<float>(p * 131 + i));
      }
    }
  }

  strata_status setup() {
    if (zero_.created() != STRATA_OK) return zero_.created();
    strata_status s = model_.register_all(zero_);
    for (uint32_t g = 0; s == STRATA_OK && g < kGroups.size(); ++g) {
      s = zero_.define_group(g, ("layer" + std::to_string(g)).c_str(), kGroups[g]);
    }
    if (s == STRATA_OK) s = zero_.finalize();
    // As the engine does: optimizer state for the shards, then zeroed gradients.
    const strata_shard* shards = nullptr;
    size_t count = 0;
    if (s == STRATA_OK) s = zero_.owned_shards(&shards, &count);
    if (s == STRATA_OK) s = zero_.zero_grad();
    return s;
  }
  const std::string& message() const { return zero_.message(); }

  // Forward reads each layer's parameters; backward writes gradients that depend on them.
  void micro_batch(int micro, bool boundary) {
    const int rank = CommEnvironment::rank();
    std::vector<std::vector<float>> seen(model_.params());
    for (uint32_t g = 0; g < kGroups.size(); ++g) {
      ASSERT_EQ(zero_.gather(g), STRATA_OK) << zero_.message();
      for (uint32_t p : kGroups[g]) {
        const float* w = zero_.data_of(p);
        if (model_.size(p) > 0) {
          ASSERT_NE(w, nullptr) << "param " << p;
        }
        seen[p].assign(w, w + model_.size(p));
      }
      ASSERT_EQ(zero_.release(g), STRATA_OK) << zero_.message();
    }
    for (uint32_t g = static_cast<uint32_t>(kGroups.size()); g-- > 0;) {
      ASSERT_EQ(zero_.gather(g, true), STRATA_OK) << zero_.message();
      for (uint32_t p : kGroups[g]) {
        if (model_.size(p) == 0) continue;
        float* grad = zero_.grad_of(p);
        ASSERT_NE(grad, nullptr) << "param " << p;
        for (size_t i = 0; i < model_.size(p); ++i) {
          const float target = std::cos(static_cast<float>(i + 7 * p + 3 * rank + micro));
          grad[i] += (1.0f + 0.25f * static_cast<float>(rank)) * (seen[p][i] - target);
        }
        if (host_grads_) {
          ASSERT_EQ(zero_.grad_ready(p, boundary), STRATA_OK) << zero_.message();
        }
      }
      ASSERT_EQ(zero_.release(g), STRATA_OK) << zero_.message();
    }
    ASSERT_EQ(zero_.end_micro_step(boundary), STRATA_OK) << zero_.message();
  }

  // The engine's step: norm over the shards (summed over ranks when partitioned), clip, SGD.
  void step() {
    ASSERT_EQ(zero_.finish_reduce(), STRATA_OK) << zero_.message();
    const strata_shard* shards = nullptr;
    size_t count = 0;
    ASSERT_EQ(zero_.owned_shards(&shards, &count), STRATA_OK) << zero_.message();
    double sum_sq = 0.0;
    for (size_t k = 0; k < count; ++k) {
      for (uint64_t j = 0; j < shards[k].count; ++j)
        sum_sq += double{shards[k].grad[j]} * shards[k].grad[j];
    }
    strata_sharding_caps caps{};
    caps.struct_size = sizeof(caps);
    ASSERT_EQ(zero_.query(&caps), STRATA_OK);
    if (caps.shards_replicated == 0) sum_sq = sum_over_ranks({sum_sq})[0];
    const double norm = std::sqrt(sum_sq);
    clipped_ += norm > kClipping ? 1 : 0;
    const auto scale = static_cast<float>(1.0 / std::max(1.0, (norm + 1e-6) / kClipping));
    for (size_t k = 0; k < count; ++k) {
      for (uint64_t j = 0; j < shards[k].count; ++j) {
        shards[k].master[j] -= kLearningRate * (shards[k].grad[j] * scale);
      }
    }
    ASSERT_EQ(zero_.publish(), STRATA_OK) << zero_.message();
    ASSERT_EQ(zero_.zero_grad(), STRATA_OK) << zero_.message();
  }

  void train() {
    for (int s = 0; s < kSteps; ++s) {
      for (int m = 0; m < kAccumulation; ++m) {
        micro_batch(s * kAccumulation + m, m == kAccumulation - 1);
        if (::testing::Test::HasFatalFailure()) return;
      }
      step();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  std::vector<float> parameters() {
    std::vector<float> all;
    for (uint32_t g = 0; g < kGroups.size(); ++g) {
      if (zero_.gather(g) != STRATA_OK) return {};
      for (uint32_t p : kGroups[g]) {
        const float* w = zero_.data_of(p);
        all.insert(all.end(), w, w + model_.size(p));
      }
      if (zero_.release(g) != STRATA_OK) return {};
    }
    return all;
  }
  int clipped() const { return clipped_; }

 private:
  RecordingHost host_;
  Zero zero_;
  TestModel model_;
  bool host_grads_;
  int clipped_ = 0;
};

using Case = std::tuple<int, bool, const char*>;
class Equivalence : public ::testing::TestWithParam<Case> {};

TEST_P(Equivalence, ParametersMatchStageZeroAfterTraining) {
  const auto [stage, host_grads, extra] = GetParam();
  TrainingRun reference(0, host_grads, "");
  TrainingRun sharded(stage, host_grads, extra);
  ASSERT_EQ(reference.setup(), STRATA_OK) << reference.message();
  ASSERT_EQ(sharded.setup(), STRATA_OK) << sharded.message();
  reference.train();
  sharded.train();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_GT(reference.clipped(), 0) << "the test should exercise clipping";
  EXPECT_EQ(sharded.clipped(), reference.clipped());
  const std::vector<float> want = reference.parameters(), got = sharded.parameters();
  ASSERT_EQ(got.size(), want.size());
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double scale = std::max(std::fabs(double{want[i]}), 1e-3);
    worst = std::max(worst, std::fabs(double{got[i]} - double{want[i]}) / scale);
  }
  EXPECT_LE(worst, 1e-6) << "largest relative difference from stage 0";
  EXPECT_TRUE(identical_on_all_ranks(got)) << "ranks disagree on the parameters";
}

// Retention (stage3_max_reuse_distance) serves gathers from cached buffers: the values must be
// exactly those of a run that allgathers every time, also when tight limits make it drop them.
TEST(Retention, TrainsBitwiseLikeNoRetention) {
  for (const char* extra :
       {"", R"("stage3_max_live_parameters": 1500, "prefetch_bucket_size": 600)"}) {
    TrainingRun plain(3, false, std::string(R"("stage3_max_reuse_distance": 0)") +
                                    (*extra == '\0' ? "" : ", ") + extra);
    TrainingRun retained(3, false, extra);
    ASSERT_EQ(plain.setup(), STRATA_OK) << plain.message();
    ASSERT_EQ(retained.setup(), STRATA_OK) << retained.message();
    plain.train();
    retained.train();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    const std::vector<float> want = plain.parameters(), got = retained.parameters();
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << "retention changed the parameters (" << extra << ")";
  }
}

// The second variant: separate lent buffers, blocking reductions, publish in small pieces.
constexpr const char* kBlocking =
    R"("contiguous_gradients": false, "overlap_comm": false, "allgather_bucket_size": 64)";

INSTANTIATE_TEST_SUITE_P(
    Stages, Equivalence,
    ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Bool(),
                       ::testing::Values("", kBlocking)),
    [](const auto& info) {
      return "stage" + std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "_host_grads" : "_lent_grads") +
             (*std::get<2>(info.param) == '\0' ? "" : "_blocking");
    });

}  // namespace
}  // namespace strata::zero_test
