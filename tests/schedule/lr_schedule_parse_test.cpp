// make_lr_schedule's manifest errors (wording, JSON paths, suggestions) and the settled defaults
// DeepSpeed applies (the sequences themselves are checked by lr_schedule_reference_test.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "error.hpp"
#include "schedule/lr_schedule.hpp"

namespace {

using strata::rt::Error;
using strata::rt::make_lr_schedule;
using strata::rt::OptimizerDefaults;
using testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr OptimizerDefaults kAdam{0.01, 0.9};

// The message make_lr_schedule throws for `block_text`, or "" if it accepts it.
std::string error_of(const std::string& block_text, OptimizerDefaults defaults = kAdam) {
  try {
    make_lr_schedule(nlohmann::json::parse(block_text), "job.json", defaults);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(LrScheduleParse, NegativeWarmupSteps) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"warmup_num_steps": -3}})"),
            "job.json: scheduler.params.warmup_num_steps: expected a positive integer, got -3");
}

TEST(LrScheduleParse, ZeroAndFractionalWarmupStepsAreRejectedLikeDeepSpeed) {
  EXPECT_EQ(
      error_of(
          R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 9, "warmup_num_steps": 0}})"),
      "job.json: scheduler.params.warmup_num_steps: expected a positive integer, got 0");
  EXPECT_EQ(
      error_of(
          R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 9, "warmup_num_steps": 10.0}})"),
      "job.json: scheduler.params.warmup_num_steps: expected a positive integer, got 10.0");
}

TEST(LrScheduleParse, UnknownTypeListsTheFiveAndSuggests) {
  EXPECT_EQ(
      error_of(R"({"type": "WarmUpLR", "params": {}})"),
      "job.json: scheduler.type: unknown scheduler type \"WarmUpLR\" (expected one of WarmupLR, "
      "WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest); did you mean WarmupLR?");
  EXPECT_EQ(
      error_of(R"({"type": "StepLR"})"),
      "job.json: scheduler.type: unknown scheduler type \"StepLR\" (expected one of WarmupLR, "
      "WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest)");
}

TEST(LrScheduleParse, MissingOrNonStringType) {
  EXPECT_EQ(
      error_of(R"({"params": {}})"),
      "job.json: scheduler: missing \"type\" (one of WarmupLR, WarmupDecayLR, WarmupCosineLR, "
      "OneCycle, LRRangeTest)");
  EXPECT_THAT(error_of(R"({"type": 3})"), HasSubstr("job.json: scheduler.type: expected a string"));
  EXPECT_EQ(error_of(R"([1])"),
            "job.json: scheduler: expected an object with \"type\" and \"params\", got [1]");
}

TEST(LrScheduleParse, UnknownBlockKey) {
  EXPECT_EQ(
      error_of(R"({"type": "WarmupLR", "param": {}})"),
      "job.json: scheduler.param: unknown key (expected type or params); did you mean params?");
}

TEST(LrScheduleParse, ParamsMustBeAnObject) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": [1, 2]})"),
            "job.json: scheduler.params: expected an object, got [1,2]");
}

TEST(LrScheduleParse, UnknownParamNamesItAndSuggests) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"warmup_num_step": 10}})"),
            "job.json: scheduler.params.warmup_num_step: unknown WarmupLR parameter (known: "
            "warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type); did you mean "
            "warmup_num_steps?");
}

TEST(LrScheduleParse, ParamOfAnotherTypeSaysWhose) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"total_num_steps": 10}})"),
            "job.json: scheduler.params.total_num_steps: unknown WarmupLR parameter (known: "
            "warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type); it is a parameter of "
            "WarmupDecayLR, WarmupCosineLR");
  EXPECT_EQ(error_of(R"({"type": "LRRangeTest", "params": {"cycle_max_lr": 1}})"),
            "job.json: scheduler.params.cycle_max_lr: unknown LRRangeTest parameter (known: "
            "lr_range_test_min_lr, lr_range_test_step_size, lr_range_test_step_rate, "
            "lr_range_test_staircase); it is a parameter of OneCycle");
}

TEST(LrScheduleParse, WrongTypes) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"warmup_min_lr": "0.001"}})"),
            "job.json: scheduler.params.warmup_min_lr: expected a number (or a list of one number: "
            "Strata has one parameter group), got \"0.001\"");
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"warmup_max_lr": [0.1, 0.2]}})"),
            "job.json: scheduler.params.warmup_max_lr: expected a number (or a list of one number: "
            "Strata has one parameter group), got [0.1,0.2]");
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "cycle_momentum": 1}})"),
      "job.json: scheduler.params.cycle_momentum: expected true or false, got 1");
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "decay_lr_rate": null}})"),
      "job.json: scheduler.params.decay_lr_rate: expected a number, got null");
  EXPECT_EQ(
      error_of(R"({"type": "LRRangeTest", "params": {"lr_range_test_staircase": "yes"}})"),
      "job.json: scheduler.params.lr_range_test_staircase: expected true or false, got \"yes\"");
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "cycle_first_stair_count": 2.5}})"),
      "job.json: scheduler.params.cycle_first_stair_count: expected an integer, got 2.5");
}

TEST(LrScheduleParse, WarmupTypeMustBeLogOrLinear) {
  EXPECT_EQ(
      error_of(R"({"type": "WarmupLR", "params": {"warmup_type": "linaer"}})"),
      "job.json: scheduler.params.warmup_type: expected \"log\" or \"linear\", got \"linaer\"; "
      "did you mean linear?");
}

TEST(LrScheduleParse, RequiredParams) {
  EXPECT_EQ(
      error_of(R"({"type": "OneCycle", "params": {"cycle_max_lr": 0.1}})"),
      "job.json: scheduler.params.cycle_min_lr: required by OneCycle (DeepSpeed has no default)");
  EXPECT_EQ(
      error_of(R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1}})"),
      "job.json: scheduler.params.cycle_max_lr: required by OneCycle (DeepSpeed has no default)");
  EXPECT_EQ(
      error_of(R"({"type": "WarmupDecayLR", "params": {}})"),
      "job.json: scheduler.params.total_num_steps: required by WarmupDecayLR (DeepSpeed has no "
      "default)");
  EXPECT_EQ(
      error_of(R"({"type": "WarmupCosineLR"})"),
      "job.json: scheduler.params.total_num_steps: required by WarmupCosineLR (DeepSpeed has no "
      "default)");
  EXPECT_EQ(error_of(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": -1}})"),
            "job.json: scheduler.params.total_num_steps: expected a non-negative integer, got -1");
}

TEST(LrScheduleParse, OneCycleStepSizesDeepSpeedRejects) {
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "cycle_first_step_size": 0}})"),
      "job.json: scheduler.params.cycle_first_step_size: expected a positive number, got 0");
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "cycle_second_step_size": -5}})"),
      "job.json: scheduler.params.cycle_second_step_size: expected a non-negative number, got -5");
  EXPECT_EQ(
      error_of(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.1, "cycle_max_lr": 1, "decay_step_size": -1}})"),
      "job.json: scheduler.params.decay_step_size: expected a non-negative number (0: no decay), "
      "got -1");
}

TEST(LrScheduleParse, RangeTestStepSizeMustBePositive) {
  EXPECT_EQ(
      error_of(R"({"type": "LRRangeTest", "params": {"lr_range_test_step_size": 0}})"),
      "job.json: scheduler.params.lr_range_test_step_size: expected a positive integer, got 0");
}

TEST(LrScheduleParse, LastBatchIterationOnlyMinusOne) {
  EXPECT_EQ(error_of(R"({"type": "WarmupLR", "params": {"last_batch_iteration": -1}})"), "");
  EXPECT_EQ(
      error_of(R"({"type": "WarmupLR", "params": {"last_batch_iteration": 5}})"),
      "job.json: scheduler.params.last_batch_iteration: only -1 (start from the beginning) is "
      "supported, got 5; Strata keeps the schedule's position in the checkpoint");
}

TEST(LrScheduleParse, OptimizerLrNeeded) {
  EXPECT_EQ(
      error_of(R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 5}})", {kNaN, kNaN}),
      "job.json: scheduler: WarmupCosineLR scales the optimizer's lr, and the optimizer has none");
  EXPECT_THAT(
      error_of(R"({"type": "WarmupLR"})", {kNaN, kNaN}),
      HasSubstr("job.json: scheduler.params.warmup_max_lr: WarmupLR takes the optimizer's lr"));
}

TEST(LrScheduleParse, LongKeyIsShortened) {
  const std::string key(1000, 'k');
  const std::string message = error_of(R"({"type": "WarmupLR", "params": {")" + key + R"(": 1}})");
  EXPECT_THAT(message, HasSubstr("job.json: scheduler.params.kkk"));
  EXPECT_LT(message.size(), 300u);
}

// The lr right after construction (-1) and after the first step (0), per DeepSpeed.
TEST(LrScheduleValues, InitialValues) {
  auto warmup = make_lr_schedule(
      nlohmann::json::parse(R"({"type": "WarmupLR", "params": {"warmup_min_lr": 0.001}})"),
      "job.json", kAdam);
  EXPECT_STREQ(warmup->type(), "WarmupLR");
  EXPECT_EQ(warmup->lr(-1), 0.001);
  EXPECT_EQ(warmup->lr(0), 0.001);          // log(1) == 0
  EXPECT_DOUBLE_EQ(warmup->lr(999), 0.01);  // warmup_max_lr defaults to the optimizer's lr
  EXPECT_TRUE(std::isnan(warmup->momentum(0)));

  auto decay = make_lr_schedule(
      nlohmann::json::parse(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 2000}})"),
      "job.json", kAdam);
  EXPECT_DOUBLE_EQ(decay->lr(999), 0.001);  // WarmupDecayLR's own default, not the optimizer's

  auto cosine = make_lr_schedule(
      nlohmann::json::parse(
          R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 2000, "warmup_min_ratio": 0.5}})"),
      "job.json", kAdam);
  EXPECT_EQ(cosine->lr(-1), 0.0);
  EXPECT_EQ(cosine->lr(0), 0.005);  // warmup_min_ratio * optimizer lr

  auto cycle = make_lr_schedule(
      nlohmann::json::parse(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01}})"),
      "job.json", kAdam);
  EXPECT_EQ(cycle->lr(-1), 0.001);      // the constructor writes cycle_min_lr
  EXPECT_EQ(cycle->momentum(-1), 0.8);  // ... and betas (cycle_min_mom, 0.99)
  // The first step() computes at batch_iteration 1: already 1/cycle_first_step_size up.
  EXPECT_NEAR(cycle->lr(0), 0.001 + 0.009 / 2000, 1e-15);
  EXPECT_NEAR(cycle->momentum(0), 0.9 - 0.1 / 2000, 1e-12);
  EXPECT_DOUBLE_EQ(cycle->lr(1999), 0.01);  // the peak after cycle_first_step_size steps
  EXPECT_EQ(cycle->beta2(0), 0.99);

  auto no_mom = make_lr_schedule(
      nlohmann::json::parse(
          R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01}})"),
      "job.json", {0.01, kNaN});
  EXPECT_TRUE(std::isnan(no_mom->momentum(-1)));
  EXPECT_TRUE(std::isnan(no_mom->beta2(-1)));

  auto range = make_lr_schedule(
      nlohmann::json::parse(
          R"({"type": "LRRangeTest", "params": {"lr_range_test_step_size": 10, "lr_range_test_staircase": true}})"),
      "job.json", kAdam);
  EXPECT_EQ(range->lr(-1), 0.001);
  EXPECT_EQ(range->lr(8), 0.001);
  EXPECT_EQ(range->lr(9), 0.002);
}

}  // namespace
