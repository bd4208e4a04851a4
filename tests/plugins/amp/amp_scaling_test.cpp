// strata_amp's loss scale through the plugin ABI: the model dtype and scaling mode it reports,
// DeepSpeed's dynamic scale moving with update(), a static scale that never moves, and the
// "cannot decrease scale anymore" failure with its history, logged before it is returned.
#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

// Log lines the plugin writes through the host table, captured per test.
struct LogCapture {
  static std::vector<std::pair<int32_t, std::string>>& lines() {
    static std::vector<std::pair<int32_t, std::string>> all;
    return all;
  }
  explicit LogCapture(FakeHost& host) {
    lines().clear();
    host.api()->log = [](void*, int32_t level, const char* message) {
      lines().emplace_back(level, message);
    };
  }
};

class AmpScaling : public ::testing::Test {
 protected:
  void create(const std::string& config) {
    amp_ = std::make_unique<Instance<strata_precision_ops>>(amp_ops(), host_, config);
    ASSERT_EQ(amp_->status(), STRATA_OK) << amp_->message();
  }
  strata_precision_caps caps() {
    strata_precision_caps c{};
    c.struct_size = sizeof(c);
    c.model_dtype = -1;
    c.dynamic_scaling = -1;
    EXPECT_EQ(amp_->ops().query(amp_->self(), &c, &err_), STRATA_OK) << err_.message;
    return c;
  }
  double scale() {
    double s = -1.0;
    EXPECT_EQ(amp_->ops().loss_scale(amp_->self(), &s, &err_), STRATA_OK) << err_.message;
    return s;
  }
  strata_status update(bool overflow) {
    return amp_->ops().update(amp_->self(), overflow ? 1 : 0, &err_);
  }

  FakeHost host_;
  LogCapture log_{host_};
  std::unique_ptr<Instance<strata_precision_ops>> amp_;
  strata_error err_ = sdk::make_error();
};

TEST_F(AmpScaling, Fp32AndBf16DoNotScale) {
  for (const char* config : {"{}", R"({"bf16": {"enabled": true}})", R"({"dtype": "bf16"})"}) {
    create(config);
    const strata_precision_caps c = caps();
    EXPECT_EQ(c.model_dtype, std::string(config) == "{}" ? STRATA_F32 : STRATA_BF16) << config;
    EXPECT_EQ(c.dynamic_scaling, 0) << config;
    EXPECT_EQ(scale(), 1.0) << config;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(update(true), STRATA_OK) << err_.message;
    EXPECT_EQ(scale(), 1.0) << config << ": overflows never rescale without fp16";
  }
}

TEST_F(AmpScaling, Fp16DefaultsStartAtTwoToTheSixteenth) {
  create(R"({"fp16": {"enabled": true}})");
  const strata_precision_caps c = caps();
  EXPECT_EQ(c.model_dtype, STRATA_F16);
  EXPECT_EQ(c.dynamic_scaling, 1);
  EXPECT_EQ(scale(), 65536.0);
  ASSERT_EQ(update(true), STRATA_OK) << err_.message;  // hysteresis 2 absorbs the first
  EXPECT_EQ(scale(), 65536.0);
  ASSERT_EQ(update(true), STRATA_OK) << err_.message;
  EXPECT_EQ(scale(), 32768.0);
}

TEST_F(AmpScaling, Fp16DynamicScaleFollowsTheConfiguredKeys) {
  // Window 2, hysteresis 1: O -> 4; clean steps at stable 0, 1, 2 -> 8 at the third.
  create(R"({"fp16": {"enabled": true, "initial_scale_power": 3, "loss_scale_window": 2,
             "hysteresis": 1, "min_loss_scale": 0.5}})");
  const bool overflow[] = {true, false, false, false, true, true, true, true};
  const double expected[] = {4, 4, 4, 8, 4, 2, 1, 0.5};
  for (size_t i = 0; i < std::size(overflow); ++i) {
    ASSERT_EQ(update(overflow[i]), STRATA_OK) << "update " << i + 1 << ": " << err_.message;
    EXPECT_EQ(scale(), expected[i]) << "after update " << i + 1;
  }
}

TEST_F(AmpScaling, Fp16StaticScaleNeverMoves) {
  create(R"({"fp16": {"enabled": true, "loss_scale": 128, "hysteresis": 1}})");
  EXPECT_EQ(caps().dynamic_scaling, 0);
  EXPECT_EQ(scale(), 128.0);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(update(i % 3 != 0), STRATA_OK) << err_.message;
  EXPECT_EQ(scale(), 128.0);
}

TEST_F(AmpScaling, OverflowAtTheMinimumFailsWithTheHistoryLoggedFirst) {
  // 4 -> 2 -> 1 (= min), then the third overflow cannot decrease the scale.
  create(R"({"fp16": {"enabled": true, "initial_scale_power": 2, "hysteresis": 1}})");
  ASSERT_EQ(update(false), STRATA_OK) << err_.message;
  ASSERT_EQ(update(true), STRATA_OK) << err_.message;
  ASSERT_EQ(update(true), STRATA_OK) << err_.message;
  EXPECT_EQ(scale(), 1.0);
  log_.lines().clear();
  ASSERT_EQ(update(true), STRATA_ERR_NUMERIC);
  const std::string message = err_.message;
  EXPECT_NE(message.find("cannot decrease scale anymore"), std::string::npos) << message;
  EXPECT_NE(message.find("step 4"), std::string::npos) << message;
  EXPECT_NE(message.find("(1, 4, ok) (2, 4, overflow) (3, 2, overflow) (4, 1, overflow)"),
            std::string::npos)
      << message;
  ASSERT_FALSE(log_.lines().empty()) << "the history must be logged before the error returns";
  EXPECT_EQ(log_.lines().front().first, STRATA_LOG_ERROR);
  EXPECT_NE(log_.lines().front().second.find("(4, 1, overflow)"), std::string::npos)
      << log_.lines().front().second;
}

TEST_F(AmpScaling, AcceptedKeysWithoutEffectAreWarnedByName) {
  create(
      R"({"fp16": {"enabled": true, "auto_cast": true, "fp16_master_weights_and_grads": true}})");
  std::string warnings;
  for (const auto& [level, line] : log_.lines()) {
    if (level == STRATA_LOG_WARN) warnings += line + "\n";
  }
  EXPECT_NE(warnings.find("fp16.auto_cast: true has no effect"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("fp16.fp16_master_weights_and_grads: true has no effect"),
            std::string::npos)
      << warnings;

  create(R"({"bf16": {"enabled": true, "check_grad_overflow": false,
             "immediate_grad_update": true}})");
  warnings.clear();
  for (const auto& [level, line] : log_.lines()) {
    if (level == STRATA_LOG_WARN) warnings += line + "\n";
  }
  EXPECT_NE(warnings.find("bf16.check_grad_overflow: false has no effect"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("bf16.immediate_grad_update: true has no effect"), std::string::npos)
      << warnings;
}

}  // namespace
}  // namespace strata::test
